-- Flags raised by detection rules for accounts active in the period, by rule and recommended action.
SELECT rule, action, severity, count(*) AS flags, count(DISTINCT account) AS accounts
FROM flags
GROUP BY rule, action, severity
ORDER BY rule, action, severity
