-- Rejected attempts per day, by game kind.
SELECT date AS day, kind, count(*) AS attempts
FROM moves
WHERE NOT accepted
GROUP BY 1, 2
ORDER BY 1, 2
