-- id: win_trading
-- title: Win trading (rating boosting)
-- behaviour: win_trading
-- catches: pairs of accounts whose games against each other (rated or not) keep ending with one of them giving
--   up cheaply (while not behind on the board, or within the first 20 plies), each of them in turn or not, far more often than either gives
--   games up against anyone else.
-- why: trading wins inflates both ratings (and the Medieval ranking separately) through games no one
--   played out, and in unrated games at stakes it passes wins and stakes back and forth for whatever
--   counts them (records, bonuses, or to hide a flow); an independently written simulator's traders
--   played mostly unrated Ludo, which a bound on rated games let through. Friends who play each other often
--   have ordinary results: games played to their end,
--   lost when beaten. The baseline is the two accounts' own rates of giving up cheaply in
--   games against others, each shrunk towards the platform's rate as if it had played prior_games more
--   games at it), or twice the platform's rate if higher; the
--   chance of at least that many such give-ups in the pair's games (binomial) must be below max_p,
--   and both accounts must have given some up, the fewer at least min_balance times the more (a
--   one-way flow is chip dumping).
-- severity: medium
-- action: review
-- param min_games = 4 : games together in 30 days, rated or not
-- param min_gave_up = 4 : games given up cheaply, both together
-- param min_each = 1 : such games each of them gave up
-- param min_balance = 0.2 : the fewer give-ups of the two, at least this share of the more (a chip dumper's partner gives up now and then too)
-- param prior_games = 30 : weight of the platform's rate in each account's own rate (games)
-- param max_p = 0.000001 : chance of at least that many at the baseline (per pair and month)
WITH acc AS (
    SELECT account, games, coalesce(gave_up_cheaply, 0) AS gave_up_cheaply
    FROM account_features WHERE "window" = '30d'
),
base AS (
    SELECT CAST(sum(gave_up_cheaply) AS DOUBLE) / greatest(sum(games), 1) AS rate FROM acc
),
t AS (
    SELECT p.a, p.b, p.games, p.rated_games, p.result_switches, p.a_wins, p.b_wins,
           coalesce(p.a_gave_up_cheaply, 0) AS a_gave_up_cheaply, coalesce(p.b_gave_up_cheaply, 0) AS b_gave_up_cheaply,
           coalesce(p.a_gave_up_cheaply, 0) + coalesce(p.b_gave_up_cheaply, 0) AS gave_up_cheaply,
           bs.rate AS platform_rate,
           (greatest(xa.gave_up_cheaply - coalesce(p.a_gave_up_cheaply, 0), 0) + ${prior_games} * bs.rate)
               / (greatest(xa.games - p.games, 0) + ${prior_games})
         + (greatest(xb.gave_up_cheaply - coalesce(p.b_gave_up_cheaply, 0), 0) + ${prior_games} * bs.rate)
               / (greatest(xb.games - p.games, 0) + ${prior_games})
               AS pair_rate_with_others
    FROM pair_features p
    JOIN acc xa ON xa.account = p.a
    JOIN acc xb ON xb.account = p.b
    CROSS JOIN base bs
    WHERE p."window" = '30d' AND p.games >= ${min_games}
      AND coalesce(p.a_gave_up_cheaply, 0) >= ${min_each} AND coalesce(p.b_gave_up_cheaply, 0) >= ${min_each}
      AND coalesce(p.a_gave_up_cheaply, 0) + coalesce(p.b_gave_up_cheaply, 0) >= ${min_gave_up}
      AND least(coalesce(p.a_gave_up_cheaply, 0), coalesce(p.b_gave_up_cheaply, 0))
          >= ${min_balance} * greatest(coalesce(p.a_gave_up_cheaply, 0), coalesce(p.b_gave_up_cheaply, 0))
),
hits AS (
    SELECT *, greatest(2.0 * platform_rate, pair_rate_with_others) AS baseline,
           binomial_at_least(gave_up_cheaply, games, least(greatest(2.0 * platform_rate, pair_rate_with_others), 1.0)) AS p_value
    FROM t
),
-- The evidence a reviewer opens: the pair's games either of them gave up cheaply to the other, each
-- at the departure or timeout that gave it up (its balance and ply are the game's `quit_balance`
-- and, the game ending there, `game_moves`: 20 plies is CHEAP_GIVE_UP_PLIES), of the games started
-- in the window (read from `departures` alone, as chip_dumping does).
given AS (
    SELECT h.pa, h.pb,
           array_agg(concat(d.game, ':', CAST(d.seq AS VARCHAR)) ORDER BY d.ts, d.game) AS refs,
           min(d.ts) AS first_seen, max(d.ts) AS last_seen
    FROM (SELECT a AS giver, b AS taker, a AS pa, b AS pb FROM hits WHERE p_value <= ${max_p}
          UNION ALL
          SELECT b AS giver, a AS taker, a AS pa, b AS pb FROM hits WHERE p_value <= ${max_p}) h
    JOIN departures d ON d.player = h.giver AND d.beneficiary = h.taker
    WHERE d.decisive AND (d.balance >= 0 OR d.ply < 20)
      AND d.ts >= ${window_end} - INTERVAL '30 days'
      AND d.date >= CAST(${window_end} - INTERVAL '30 days' AS DATE)
    GROUP BY h.pa, h.pb
)
SELECT acc AS account, '30d' AS "window", -log10(greatest(p_value, 1e-300)) AS score, partner,
       rated_games, games, gave_up_cheaply, a_gave_up_cheaply, b_gave_up_cheaply, a_wins, b_wins, result_switches,
       platform_rate, pair_rate_with_others, baseline AS baseline_rate, p_value,
       ${min_games} AS min__games, ${min_gave_up} AS min__gave_up_cheaply, ${max_p} AS max__p_value,
       e.refs, e.first_seen, e.last_seen
FROM (
    -- Both accounts of the pair, from one pass over the hits.
    SELECT CASE WHEN s.side = 'a' THEN h.a ELSE h.b END AS acc,
           CASE WHEN s.side = 'a' THEN h.b ELSE h.a END AS partner, h.*
    FROM hits h CROSS JOIN (VALUES ('a'), ('b')) AS s(side)
) x
LEFT JOIN given e ON e.pa = x.a AND e.pb = x.b
WHERE p_value <= ${max_p}
