-- id: chip_dumping
-- title: Chip dumping
-- behaviour: chip_dumping
-- catches: pairs of accounts where one keeps giving games up to the same partner (resigning, leaving or
--   timing out) cheaply: while not behind on the board, or within the first 20 plies whatever the
--   board (gave_up_cheaply), so that stakes flow one way, all the more telling at stakes the payer
--   rarely plays; or, when every game of the pair is at stake 0, so that wins flow one way (a win
--   record, a ranking: an independently written simulator's dumpers played at their usual stakes,
--   0 for some of them).
-- why: it moves money between accounts (collusion, laundering, bonus abuse) through games no one
--   played out. Honest players give up when beaten; one who drops out at random (a bad connection)
--   does so against everyone alike, and at whatever stakes it plays. So the chance that one of the
--   pair's games is given up cheaply by the payer at a stake at least the smallest of its give-ups to
--   this partner is the payer's own rate of giving up cheaply against others (shrunk towards the
--   platform's rate as if it had played prior_games more games at it, or the platform's rate if
--   higher) times its own share of games at such stakes against others (shrunk the same way towards
--   the platform's share of two-player seats at such stakes). The chance of at least that many such
--   give-ups to this partner (binomial) must be below max_p. Both accounts of the pair are flagged;
--   the evidence names the partner.
-- severity: high
-- action: review
-- param min_gave_up = 2 : games the payer gave up cheaply to the partner, in 30 days
-- param max_payee_share = 0.2 : the partner's such give-ups, as a share of the payer's (win traders give up in turns)
-- param min_flow = 1 : net stake flow from the payer to the partner (unless every game of the pair is at stake 0)
-- param prior_games = 30 : weight of the platform's rate and stake share in the payer's own (games)
-- param max_p = 0.000001 : chance of at least that many give-ups at the baseline (per pair and month)
WITH acc AS (
    SELECT account, games, coalesce(gave_up_cheaply, 0) AS gave_up_cheaply
    FROM account_features WHERE "window" = '30d'
),
base AS (
    SELECT CAST(sum(gave_up_cheaply) AS DOUBLE) / greatest(sum(games), 1) AS rate FROM acc
),
p AS (
    SELECT a, b, games, flow_a_to_b, a_gave_up, b_gave_up, max_stake, shared_devices, shared_ips,
           CASE WHEN a_pays THEN a ELSE b END AS payer,
           CASE WHEN a_pays THEN b ELSE a END AS payee,
           abs(coalesce(flow_a_to_b, 0)) AS flow,
           CASE WHEN a_pays THEN coalesce(a_gave_up_cheaply, 0) ELSE coalesce(b_gave_up_cheaply, 0) END AS payer_gave_up_cheaply,
           CASE WHEN a_pays THEN coalesce(b_gave_up_cheaply, 0) ELSE coalesce(a_gave_up_cheaply, 0) END AS payee_gave_up_cheaply,
           CASE WHEN a_pays THEN a_cheap_min_stake ELSE b_cheap_min_stake END AS cheap_min_stake
    FROM (
        -- The payer: the account stakes flow from, or, when none flow, the one that gave more up cheaply.
        SELECT *, coalesce(flow_a_to_b, 0) > 0
                  OR (coalesce(flow_a_to_b, 0) = 0 AND coalesce(a_gave_up_cheaply, 0) >= coalesce(b_gave_up_cheaply, 0)) AS a_pays
        FROM pair_features
        WHERE "window" = '30d'
    )
),
t AS (
    SELECT p.*, bs.rate AS platform_rate,
           (greatest(x.gave_up_cheaply - p.payer_gave_up_cheaply, 0) + ${prior_games} * bs.rate)
               / (greatest(x.games - p.games, 0) + ${prior_games}) AS payer_rate_with_others
    FROM p JOIN acc x ON x.account = p.payer CROSS JOIN base bs
    WHERE p.payer_gave_up_cheaply >= ${min_gave_up}
      AND (p.flow >= ${min_flow} OR p.max_stake = 0)
      AND p.payee_gave_up_cheaply <= ${max_payee_share} * p.payer_gave_up_cheaply
),
-- The window's two-player seats, as the pair features count them.
seats AS (
    SELECT g.account, g.opponent, g.stake
    FROM game_players g
    WHERE g.opponent IS NOT NULL
      AND g.started_at >= ${window_end} - INTERVAL '30 days' AND g.started_at <= ${window_end}
      -- A game's partition is its start date: older partitions are not even listed.
      AND g.date >= CAST(${window_end} - INTERVAL '30 days' AS DATE)
),
platform_stakes AS (
    SELECT stake, count(*) AS n FROM seats GROUP BY stake
),
-- Per tested pair: the platform's share of seats at the payer's smallest cheap give-up stake or more.
platform_share AS (
    SELECT t.payer, t.payee, sum(s.n) AS platform_seats,
           CAST(coalesce(sum(s.n) FILTER (WHERE s.stake >= t.cheap_min_stake), 0) AS DOUBLE)
               / greatest(coalesce(sum(s.n), 0), 1) AS platform_stake_share
    FROM t CROSS JOIN platform_stakes s
    GROUP BY t.payer, t.payee
),
-- And the payer's own games against others at such stakes.
own_share AS (
    SELECT t.payer, t.payee, count(s.account) AS payer_games_with_others,
           count(s.account) FILTER (WHERE s.stake >= t.cheap_min_stake) AS payer_games_at_stake_with_others
    FROM t LEFT JOIN seats s ON s.account = t.payer AND s.opponent <> t.payee
    GROUP BY t.payer, t.payee
),
shares AS (
    SELECT t.*, ps.platform_stake_share, o.payer_games_with_others, o.payer_games_at_stake_with_others,
           greatest(t.platform_rate, t.payer_rate_with_others) AS give_up_rate,
           -- 1 when the stakes are unknown (no seats in the window, or no smallest stake).
           CASE WHEN t.cheap_min_stake IS NULL OR coalesce(ps.platform_seats, 0) = 0 THEN 1.0
                ELSE least(1.0, (o.payer_games_at_stake_with_others + ${prior_games} * ps.platform_stake_share)
                               / (o.payer_games_with_others + ${prior_games}))
           END AS stake_share
    FROM t
    LEFT JOIN platform_share ps ON ps.payer = t.payer AND ps.payee = t.payee
    LEFT JOIN own_share o ON o.payer = t.payer AND o.payee = t.payee
),
hits AS (
    SELECT *, give_up_rate * stake_share AS baseline,
           binomial_at_least(payer_gave_up_cheaply, games, give_up_rate * stake_share) AS p_value
    FROM shares
),
-- The evidence a reviewer opens: the games each account gave up cheaply to another, each at the
-- departure or timeout that gave it up (its balance and ply are the game's `quit_balance` and, the
-- game ending there, `game_moves`: 20 plies is CHEAP_GIVE_UP_PLIES), of the games started in the
-- window. Read from `departures` alone and for every pair (a filter on the hits would compute them
-- twice: DataFusion inlines each use of a WITH table); the hits take theirs below.
given AS (
    SELECT player AS given_by, beneficiary AS given_to,
           array_agg(concat(game, ':', CAST(seq AS VARCHAR)) ORDER BY ts, game) AS refs,
           min(ts) AS first_seen, max(ts) AS last_seen
    FROM departures
    WHERE decisive AND beneficiary IS NOT NULL AND (balance >= 0 OR ply < 20)
      AND ts >= ${window_end} - INTERVAL '30 days'
      AND date >= CAST(${window_end} - INTERVAL '30 days' AS DATE)
    GROUP BY player, beneficiary
)
-- Each hit flags both accounts of the pair (the payer and the payee): one pass over the hits, two roles.
SELECT CASE WHEN r.role = 'payer' THEN payer ELSE payee END AS account, '30d' AS "window",
       -log10(greatest(p_value, 1e-300)) AS score, r.role AS role,
       CASE WHEN r.role = 'payer' THEN payee ELSE payer END AS partner, games, flow, payer_gave_up_cheaply,
       payee_gave_up_cheaply, platform_rate, payer_rate_with_others, give_up_rate, cheap_min_stake,
       platform_stake_share, payer_games_at_stake_with_others, payer_games_with_others, stake_share,
       baseline AS baseline_rate, p_value, max_stake, shared_devices, shared_ips,
       ${min_gave_up} AS min__payer_gave_up_cheaply, ${max_p} AS max__p_value,
       e.refs, e.first_seen, e.last_seen
FROM hits CROSS JOIN (VALUES ('payer'), ('payee')) AS r(role)
LEFT JOIN given e ON e.given_by = hits.payer AND e.given_to = hits.payee
WHERE p_value <= ${max_p}
