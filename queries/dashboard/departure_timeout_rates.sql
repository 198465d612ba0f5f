-- Departures (left) and timeouts per 100 games, by game kind.
WITH g AS (SELECT kind, count(*) AS games FROM games GROUP BY kind),
d AS (
    SELECT kind,
           sum(CASE WHEN event = 'left' THEN 1 ELSE 0 END) AS departures,
           sum(CASE WHEN event = 'timeout' THEN 1 ELSE 0 END) AS timeouts
    FROM departures GROUP BY kind
)
SELECT g.kind,
       100.0 * coalesce(d.departures, 0) / g.games AS departures_per_100_games,
       100.0 * coalesce(d.timeouts, 0) / g.games AS timeouts_per_100_games
FROM g LEFT JOIN d ON d.kind = g.kind
ORDER BY g.kind
