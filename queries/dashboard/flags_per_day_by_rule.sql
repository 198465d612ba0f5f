-- Flags raised per day, by rule (the day the flagged behaviour was first seen; the window's end otherwise).
SELECT CAST(coalesce(first_seen, window_end) AS DATE) AS day, rule, count(*) AS flags
FROM flags
GROUP BY 1, 2
ORDER BY 1, 2
