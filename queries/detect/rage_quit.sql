-- id: rage_quit
-- title: Rage quits
-- behaviour: rage_quit
-- catches: accounts that abandon games they are losing (closing the page or disconnecting rather than
--   resigning) far more often than they abandon games they are not losing, even if they do it in only
--   some of their lost games.
-- why: abandoning a lost game leaves the opponent waiting and hides the loss. A player on a bad
--   connection drops out at random moments, losing or not; a rage-quitter drops out when losing. So
--   the account's expected rate of abandons per lost game is its own rate of abandons while not
--   losing, per game not lost, shrunk towards the platform's such rate as if it had played
--   prior_games more games at it (a few unlucky disconnections do not make a connection bad, many
--   do), times the platform's ratio of abandons per lost game to abandons per game not lost (lost
--   games last longer); and never less than the platform's abandons per lost game among accounts
--   that abandoned no game while not losing (players on a sound connection; rage-quitters among them
--   only raise it). The rule flags a count of abandons while losing that chance at that baseline
--   gives at most max_p (binomial), when the rate per lost game is also at least min_ratio times the
--   baseline (a bad connection drops out somewhat more in lost games; a rage-quitter many times
--   more). Like lichess's playban, one abandon is noise; we flag a pattern and only recommend review.
--   That test trusts the account's own rate while not losing, which a short history does not give: a
--   player on a bad connection who loses most of its games (3 abandons in 13 lost games, none in its
--   9 others) passed it. So the abandons must also fall while losing more often than the account's
--   own moves do (an independently written simulator's players on bad connections drop out at random
--   moments): had each abandon come at a random move of the account's, it would be while losing with
--   the share of its timed moves played while losing (moves_losing / moves_timed, the platform's when
--   it has none); the chance of at least that many of its abandons while losing (binomial) must be at
--   most max_p_split. It is a check of consistency, not the test: a few abandons, all while losing,
--   give at best the share to their number (0.5^4 = 0.06).
--   And they must come deeper behind than random moments would: a rage-quitter leaves when clearly
--   beaten, a bad connection drops whatever the margin. Each abandon's depth is the share of the
--   account's own moves of the window, in games of the same kind, played at its balance or worse
--   (at least uniform at random moments, near 0 for one who leaves when beaten); Fisher's
--   combination of the depths must give at most max_p_depth. A check of consistency as well, looser
--   than the split's: it lets go only abandons about as deep as random moments' (3 abandons at
--   depths of 0.3 give 0.3); a rage-quitter who is often far behind leaves at depths his own moves
--   reach often too. (The depth and the split are not independent of each other, nor of how often
--   an account abandons while losing: abandons while losing are deeper than the account's average
--   move; so neither loosens max_p. With max_p at 0.005 five honest accounts of Vigie's seeds 66,
--   67 and 69 were flagged, against one at 0.001.)
--   And at least one abandon must be the player's act: the log says how each came, the page closed
--   (the player closed it) or the connection lost (the server saw it go, what a bad connection
--   does). An account with fewer than min_page_closed page closings among its abandons while losing
--   of the window is one whose connection drops, whatever the timing of the drops: it is flagged
--   only on the stricter bound max_p_connection, so that one who only ever pulls the cable is still
--   flagged when its count is far out. (On six lakes of both simulators the three players on bad
--   connections of the independent one that the other checks let through closed no page in 4 to 11
--   abandons while losing, p 2e-5 to 7e-5; every rage-quitter found closed at least one; the two
--   of Vigie's simulator closed one page in 14 and 18 abandons, and stay flagged.)
--   The depth is a check for drops at random moments, what a connection does; page closings are the
--   player's acts. So the depth check is waived for an account whose page closings while losing (at
--   least min_page_closed) are on their own beyond chance at max_p: at least that many among its
--   lost games had it closed the page in each with the platform's rate of page closings while
--   losing per lost game (binomial; every account's page closings count in that rate,
--   rage-quitters' too). A rage-quitter who leaves as soon as the game turns, at a deficit its own
--   moves often reach, is let go by the depth but not by this (one of Vigie's simulator's: 6 page
--   closings in 70 lost games, p 1e-5, depth 0.58); the players on bad connections who passed every
--   check but the depth on ten lakes of both simulators closed 0 to 2 pages while losing (p 0.04 to
--   1).
-- severity: medium
-- action: review
-- param min_abandons = 3 : abandons while losing in 30 days
-- param prior_games = 30 : weight of the platform's rate in the account's own rate (games)
-- param min_ratio = 3 : the rate per lost game at least this many times the baseline
-- param max_p = 0.001 : chance of at least that many at the baseline (false flags per account and month); also the bound for the page closings alone to waive the depth check
-- param max_p_split = 0.2 : chance of at least that many of the account's abandons while losing, at its share of moves played while losing
-- param max_p_depth = 0.3 : chance that abandons at random moments come as deep behind as they did (Fisher's combination of their depths)
-- param min_page_closed = 1 : page closings among the abandons while losing for max_p to apply
-- param max_p_connection = 0.000001 : max_p for an account with fewer page closings (its abandons all lost connections)
WITH f AS (
    SELECT account, "window", games, losses, abandons_losing, coalesce(abandons, 0) AS abandons,
           greatest(coalesce(abandons, 0) - abandons_losing, 0) AS abandons_other,
           coalesce(moves_losing, 0) AS moves_losing, coalesce(moves_timed, 0) AS moves_timed
    FROM account_features WHERE "window" = '30d'
),
base AS (
    SELECT CAST(sum(abandons_losing) AS DOUBLE) / greatest(sum(losses), 1) AS share,
           -- Accounts that abandoned no game while not losing: the sound connections' share.
           CAST(coalesce(sum(abandons_losing) FILTER (WHERE abandons_other = 0), 0) AS DOUBLE)
               / greatest(coalesce(sum(losses) FILTER (WHERE abandons_other = 0), 0), 1) AS sound_share,
           -- Abandons while not losing per game not lost (a game abandoned is lost: counted back).
           CAST(sum(abandons_other) AS DOUBLE)
               / greatest(sum(greatest(games - losses, 0) + abandons_other), 1) AS other_rate,
           -- The platform's share of timed moves played while losing (null when none was timed).
           CAST(sum(moves_losing) AS DOUBLE) / nullif(sum(moves_timed), 0) AS losing_move_share,
           sum(losses) AS losses
    FROM f
),
-- The platform's page closings while losing of the window, per lost game (null when none was lost).
page_base AS (
    SELECT CAST(count(*) AS DOUBLE) / nullif((SELECT losses FROM base), 0) AS page_closed_share
    FROM departures WHERE event = 'left' AND losing AND reason = 'page_closed'
      AND ts >= ${window_end} - INTERVAL '30 days' AND ts <= ${window_end}
      AND date >= CAST(${window_end} - INTERVAL '30 days' AS DATE)
),
t AS (
    -- The whole platform's share when no sound account ever abandoned: the floor is never 0.
    SELECT f.*, b.share AS platform_abandon_share,
           coalesce(nullif(b.sound_share, 0), b.share) AS platform_sound_share,
           b.other_rate AS platform_other_rate,
           CASE WHEN b.other_rate > 0 THEN greatest(b.share / b.other_rate, 1.0) ELSE 1.0 END AS losing_factor,
           b.losing_move_share AS platform_losing_move_share,
           CASE WHEN f.moves_timed > 0 THEN CAST(least(f.moves_losing, f.moves_timed) AS DOUBLE) / f.moves_timed
                ELSE b.losing_move_share END AS losing_move_share,
           (f.abandons_other + ${prior_games} * b.other_rate)
               / (greatest(f.games - f.losses, 0) + f.abandons_other + ${prior_games}) AS own_other_rate
    FROM f CROSS JOIN base b
    WHERE f.abandons_losing >= ${min_abandons}
),
tested AS (
    SELECT *, greatest(platform_sound_share, own_other_rate * losing_factor) AS baseline,
           CAST(abandons_losing AS DOUBLE) / greatest(losses, abandons_losing) AS abandon_share,
           binomial_at_least(abandons_losing, greatest(losses, abandons_losing),
                             greatest(platform_sound_share, own_other_rate * losing_factor)) AS p_value,
           -- Null when no move was ever timed (no share to test against): not flagged.
           binomial_at_least(abandons_losing, greatest(abandons, abandons_losing), losing_move_share) AS p_split
    FROM t
),
candidates AS (
    SELECT * FROM tested x
    WHERE x.p_value <= ${max_p} AND x.abandon_share >= ${min_ratio} * x.baseline AND x.p_split <= ${max_p_split}
),
-- How deep behind each abandon of a candidate came: one plus the account's timed moves of the window,
-- in games of the same kind (its modes and variants together: a balance is counted in that kind's
-- units, which Ludo's variants share only roughly), played at that balance or worse, over one plus
-- all its timed moves of that kind. At a random moment that is at least uniform on (0, 1]: the test
-- below is conservative, all the more as the replay counts the moves while losing per edge of a grid
-- that is never below their balances (`balance_edge`), and an abandon while not losing counts as 1.
-- A rage-quitter leaves when clearly beaten, near 0. The games counted are those started in the
-- window whose rows have edges (rows an older Vigie wrote have none), and only the abandons of those
-- games are weighed, so that each abandon's own game is among the moves it is ranked against.
per_kind AS (
    -- One read of the candidates' rows (the join keeps their few names in its table, not the
    -- window's rows): per account and kind, its timed moves, its games, and its moves while losing
    -- per edge (each edge once per game that has it; an empty list for a game never behind).
    SELECT g.account, g.kind, sum(g.losing_moves + g.other_moves) AS moves,
           array_agg(g.game ORDER BY g.game) AS games,
           -- In the same order, so that each edge stays beside its moves.
           flatten(array_agg(g.losing_edges ORDER BY g.game)) AS edges,
           flatten(array_agg(g.losing_edge_moves ORDER BY g.game)) AS edge_moves
    FROM (SELECT DISTINCT account FROM candidates) c
    JOIN game_players g ON g.account = c.account
    WHERE g.losing_edges IS NOT NULL
      AND g.started_at >= ${window_end} - INTERVAL '30 days' AND g.started_at <= ${window_end}
      AND g.date >= CAST(${window_end} - INTERVAL '30 days' AS DATE)
    GROUP BY g.account, g.kind
),
-- The abandons weighed: those of the candidates' counted games, each with its kind's moves and edges
-- (a null edge first, so that an abandon whose kind has no move while losing keeps its row).
abandons AS (
    SELECT d.player AS account, d.game, d.seq, d.balance, k.moves,
           array_prepend(CAST(NULL AS DOUBLE), k.edges) AS edges,
           array_prepend(CAST(0 AS BIGINT), k.edge_moves) AS edge_moves
    FROM departures d
    JOIN per_kind k ON k.account = d.player AND k.kind = d.kind
    WHERE d.event = 'left' AND d.reason <> 'resigned' AND d.balance IS NOT NULL
      AND d.ts <= ${window_end}
      AND d.date >= CAST(${window_end} - INTERVAL '30 days' AS DATE)
      AND array_has(k.games, d.game)
),
abandon_depth AS (
    SELECT account, game, seq,
           CASE WHEN balance >= 0 THEN 1.0
                ELSE (coalesce(sum(m) FILTER (WHERE e <= balance_edge(balance)), 0) + 1.0)
                     / (max(moves) + 1.0)
           END AS depth
    FROM (SELECT account, game, seq, balance, moves, unnest(edges) AS e, unnest(edge_moves) AS m
          FROM abandons) u
    GROUP BY account, game, seq, balance
),
-- Fisher's combination: -2 sum(ln depth) is chi-square with 2n degrees of freedom for n uniform
-- depths, so P = P(Poisson(-sum(ln depth)) <= n - 1).
depth AS (
    SELECT account, count(*) AS depth_abandons, avg(depth) AS mean_depth,
           poisson_at_most(count(*) - 1, -sum(ln(depth))) AS p_depth
    FROM abandon_depth
    GROUP BY account
),
-- The evidence refs, and how the abandons while losing of the window came.
reasons AS (
    SELECT player AS account, array_agg(concat(game, ':', CAST(seq AS VARCHAR)) ORDER BY ts) AS refs,
           min(ts) AS first_seen, max(ts) AS last_seen,
           count(*) FILTER (WHERE reason = 'page_closed') AS page_closed_while_losing,
           count(*) FILTER (WHERE reason = 'disconnected') AS disconnected_while_losing
    FROM departures WHERE event = 'left' AND losing AND reason <> 'resigned'
      AND ts >= ${window_end} - INTERVAL '30 days' AND ts <= ${window_end}
      AND date >= CAST(${window_end} - INTERVAL '30 days' AS DATE)
      AND player IN (SELECT account FROM candidates)
    GROUP BY player
),
weighed AS (
    SELECT x.*, dp.depth_abandons, dp.mean_depth, dp.p_depth,
           coalesce(e.page_closed_while_losing, 0) AS page_closed_while_losing,
           coalesce(e.disconnected_while_losing, 0) AS disconnected_while_losing,
           coalesce(e.page_closed_while_losing, 0) >= ${min_page_closed} AS players_act,
           -- Without depths (no abandon in a game of the window whose row has edges: rows an older
           -- Vigie wrote) the check is not made: met.
           coalesce(dp.p_depth <= ${max_p_depth}, true) AS depth_met,
           pb.page_closed_share AS platform_page_closed_share,
           binomial_at_least(coalesce(e.page_closed_while_losing, 0), greatest(x.losses, x.abandons_losing),
                             pb.page_closed_share) AS p_page_closed,
           e.refs, e.first_seen, e.last_seen
    FROM candidates x
    CROSS JOIN page_base pb
    LEFT JOIN depth dp ON dp.account = x.account
    LEFT JOIN reasons e ON e.account = x.account
),
-- The depth check is waived when the page closings alone are beyond chance (the waiver rests on
-- page closings: with fewer than min_page_closed it is not given).
hits AS (
    SELECT *, NOT depth_met AS depth_waived
    FROM weighed
    WHERE (depth_met OR (players_act AND p_page_closed <= ${max_p}))
      AND (players_act OR p_value <= ${max_p_connection})
)
SELECT x.account, x."window",
       -log10(greatest(x.p_value, 1e-300)) AS score,
       x.abandons_losing, x.abandons_other, x.losses, x.games, x.abandon_share,
       x.platform_abandon_share, x.platform_sound_share, x.platform_other_rate, x.losing_factor,
       x.own_other_rate, x.baseline AS baseline_rate,
       x.p_value, x.abandon_share / x.baseline AS ratio_to_baseline,
       -- The bound the flag rests on: max_p with page closings, the stricter one without.
       ${min_abandons} AS min__abandons_losing,
       CASE WHEN x.players_act THEN ${max_p} ELSE ${max_p_connection} END AS max__p_value,
       ${min_ratio} AS min__ratio_to_baseline,
       x.moves_losing, x.moves_timed, x.losing_move_share, x.platform_losing_move_share, x.p_split,
       ${max_p_split} AS max__p_split,
       x.depth_abandons, x.mean_depth, x.p_depth,
       CASE WHEN NOT x.depth_waived THEN ${max_p_depth} END AS max__p_depth,
       x.page_closed_while_losing, x.disconnected_while_losing,
       -- The page closings alone: the platform's rate per lost game and the chance of as many; when
       -- they waived the depth check, the bound they met.
       x.platform_page_closed_share, x.p_page_closed,
       CASE WHEN x.depth_waived THEN ${max_p} END AS max__p_page_closed,
       CASE WHEN x.p_depth IS NULL THEN 'not made: no abandon in a game of the window with balances'
            WHEN x.depth_waived THEN 'waived: the page closings alone are beyond chance'
            ELSE 'met' END AS depth_check,
       CASE WHEN x.players_act THEN ${min_page_closed} END AS min__page_closed_while_losing,
       CASE WHEN x.players_act THEN 'page closings'
            ELSE 'lost connections (the stricter bound)' END AS flagged_on,
       x.refs, x.first_seen, x.last_seen
FROM hits x
