-- Volumes of the period per game kind and mode: games, events, players, stakes, rake, payouts.
-- Games are counted by the UTC date they started (the partition of every derived table).
WITH g AS (
    SELECT * FROM games WHERE date BETWEEN DATE '${from}' AND DATE '${to}'
),
p AS (
    SELECT kind, mode, count(DISTINCT account) AS players, sum(coalesce(payout, 0)) AS payouts
    FROM game_players WHERE date BETWEEN DATE '${from}' AND DATE '${to}'
    GROUP BY kind, mode
)
SELECT g.kind, g.mode,
       count(*) AS games,
       sum(CASE WHEN g.finished THEN 1 ELSE 0 END) AS finished_games,
       sum(g.events) AS events,
       max(p.players) AS players,
       sum(g.pot) AS stakes,
       sum(coalesce(g.rake, 0)) AS rake,
       max(p.payouts) AS payouts
FROM g JOIN p ON g.kind = p.kind AND g.mode = p.mode
GROUP BY g.kind, g.mode
ORDER BY g.kind, g.mode
