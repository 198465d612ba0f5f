-- view: account_risk
-- doc: The risk summary of each flagged account, read top-down: highest severity, recommended action, total score and the rules that fired.
SELECT account,
       max(CASE severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 WHEN 'low' THEN 1 ELSE 0 END) AS severity_rank,
       max(CASE WHEN action = 'block_recommended' THEN 1 ELSE 0 END) = 1 AS block_recommended,
       sum(score) AS total_score,
       count(*) AS flags,
       array_to_string(array_sort(array_distinct(array_agg(rule))), ', ') AS rules,
       max(last_seen) AS last_seen
FROM flags
GROUP BY account
