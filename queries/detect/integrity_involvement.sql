-- id: integrity_involvement
-- title: Involved in server-integrity findings
-- catches: accounts named in findings where the server broke the rules (an illegal move accepted for
--   them, a legal one refused, a late move accepted, a wrong auto-move), repeatedly.
-- why: a server fault that keeps favouring the same account can be a bug someone learned to trigger;
--   one involvement is usually chance, so the rule asks for a pattern and only for a look.
-- severity: low
-- action: review
-- param min_findings = 2 : integrity findings naming the account in 30 days
SELECT f.account, '30d' AS "window", CAST(count(*) AS DOUBLE) AS score,
       count(*) AS integrity_findings,
       array_to_string(array_sort(array_distinct(array_agg(f.code))), ' ') AS codes,
       array_agg(concat(f.game, ':', CAST(f.seq AS VARCHAR)) ORDER BY f.ts, f.game, f.seq) AS refs,
       min(f.ts) AS first_seen, max(f.ts) AS last_seen,
       ${min_findings} AS min__integrity_findings
FROM findings f
WHERE f.category = 'integrity' AND f.account IS NOT NULL
  -- The 30-day window of the features (findings without a time count, as there).
  AND (f.ts IS NULL OR f.ts >= (SELECT max(window_end) FROM account_features) - INTERVAL '30 days')
GROUP BY f.account
HAVING count(*) >= ${min_findings}
