-- id: win_trading
-- title: Win trading (rating boosting)
-- behaviour: win_trading
-- catches: pairs of accounts that play many rated games against each other and take turns winning them
--   quickly, the loser giving up early each time.
-- why: trading wins inflates both ratings (and the Medieval ranking separately); like lichess's boost
--   detection we look for repeated rated games between the same pair with alternating early losses.
-- severity: medium
-- action: review
-- param min_rated = 6 : rated games together in 30 days
-- param min_alternation = 0.8 : result switches per game (independent results switch about half the time)
-- param min_gave_up = 1 : games each of them gave up
SELECT acc AS account, '30d' AS "window", alternation * 10.0 AS score, partner,
       rated_games, games, result_switches, alternation, a_gave_up, b_gave_up,
       ${min_rated} AS min__rated_games, ${min_alternation} AS min__alternation
FROM (
    SELECT a AS acc, b AS partner, rated_games, games, result_switches, a_gave_up, b_gave_up,
           CAST(result_switches AS DOUBLE) / greatest(games - 1, 1) AS alternation
    FROM pair_features WHERE "window" = '30d'
    UNION ALL
    SELECT b AS acc, a AS partner, rated_games, games, result_switches, a_gave_up, b_gave_up,
           CAST(result_switches AS DOUBLE) / greatest(games - 1, 1) AS alternation
    FROM pair_features WHERE "window" = '30d'
)
WHERE rated_games >= ${min_rated} AND alternation >= ${min_alternation}
  AND a_gave_up >= ${min_gave_up} AND b_gave_up >= ${min_gave_up}
