-- Stake flows (last 30 days) between pairs where at least one account is flagged, largest first.
WITH flagged AS (
    SELECT account, array_to_string(array_sort(array_distinct(array_agg(rule))), ', ') AS rules
    FROM flags GROUP BY account
)
SELECT s.payer AS from_account, s.payee AS to_account, s.games, s.flow AS net_flow,
       coalesce(fa.rules, fb.rules) AS rules
FROM pair_stake_flows s
LEFT JOIN flagged fa ON fa.account = s.payer
LEFT JOIN flagged fb ON fb.account = s.payee
WHERE (fa.account IS NOT NULL OR fb.account IS NOT NULL) AND s.flow > 0
ORDER BY s.flow DESC, from_account, to_account
LIMIT 50
