-- Server integrity incidents of the period, by code, with the games involved.
SELECT code, severity, count(*) AS incidents, count(DISTINCT game) AS games,
       array_to_string(array_sort(array_distinct(array_agg(game))), ' ') AS game_ids
FROM findings
WHERE date BETWEEN DATE '${from}' AND DATE '${to}' AND category = 'integrity'
GROUP BY code, severity
ORDER BY code, severity
