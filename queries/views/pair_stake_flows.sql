-- view: pair_stake_flows
-- doc: Stake flows between pairs of accounts over the last 30 days, largest first: who paid whom, how, and whether they share a device or ip.
SELECT a, b, games, a_wins, b_wins, flow_a_to_b,
       abs(flow_a_to_b) AS flow,
       CASE WHEN flow_a_to_b > 0 THEN a WHEN flow_a_to_b < 0 THEN b END AS payer,
       CASE WHEN flow_a_to_b > 0 THEN b WHEN flow_a_to_b < 0 THEN a END AS payee,
       a_gave_up + b_gave_up AS gave_up, a_quick_losses + b_quick_losses AS quick_losses,
       shared_devices, shared_ips
FROM pair_features
WHERE "window" = '30d'
