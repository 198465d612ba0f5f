-- Games that draw randomness (Ludo, Belote, Medieval), by fairness verdict.
SELECT kind, mode,
       count(*) AS games,
       sum(CASE WHEN fairness = 'pass' THEN 1 ELSE 0 END) AS passed,
       sum(CASE WHEN fairness = 'fail' THEN 1 ELSE 0 END) AS failed,
       sum(CASE WHEN fairness = 'pending' THEN 1 ELSE 0 END) AS pending,
       sum(CASE WHEN commitment IS NOT NULL THEN 1 ELSE 0 END) AS commitments,
       sum(CASE WHEN seed IS NULL AND finished THEN 1 ELSE 0 END) AS missing_reveals
FROM games
WHERE date BETWEEN DATE '${from}' AND DATE '${to}' AND fairness <> 'n/a'
GROUP BY kind, mode
ORDER BY kind, mode
