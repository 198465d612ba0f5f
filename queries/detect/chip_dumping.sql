-- id: chip_dumping
-- title: Chip dumping
-- behaviour: chip_dumping
-- catches: pairs of accounts where one keeps losing its stake to the same partner by leaving or timing
--   out early, at stakes above the usual.
-- why: it moves money between accounts (collusion, laundering, bonus abuse) through games no one
--   played. Both accounts of the pair are flagged; the evidence names the partner.
-- severity: high
-- action: review
-- param min_games = 5 : games together in 30 days
-- param min_gave_up = 2 : games the payer lost by leaving or timing out
-- param min_gave_up_share = 0.8 : share of the pair's games the payer gave up (one-way: win traders give up in turns)
-- param max_payee_gave_up_share = 0.2 : the partner's give-ups, as a share of the payer's
-- param min_flow = 400 : net stake flow from the payer to the partner
WITH p AS (
    SELECT a, b, games, flow_a_to_b, a_gave_up, b_gave_up, a_quick_losses, b_quick_losses, max_stake,
           shared_devices, shared_ips,
           CASE WHEN flow_a_to_b > 0 THEN a ELSE b END AS payer,
           CASE WHEN flow_a_to_b > 0 THEN b ELSE a END AS payee,
           abs(flow_a_to_b) AS flow,
           CASE WHEN flow_a_to_b > 0 THEN a_gave_up ELSE b_gave_up END AS payer_gave_up,
           CASE WHEN flow_a_to_b > 0 THEN b_gave_up ELSE a_gave_up END AS payee_gave_up
    FROM pair_features
    WHERE "window" = '30d'
),
hits AS (
    SELECT * FROM p
    WHERE games >= ${min_games} AND payer_gave_up >= ${min_gave_up} AND flow >= ${min_flow}
      AND payer_gave_up >= ${min_gave_up_share} * games
      AND payee_gave_up <= ${max_payee_gave_up_share} * payer_gave_up
)
SELECT payer AS account, '30d' AS "window", CAST(flow AS DOUBLE) / 100.0 AS score, 'payer' AS role, payee AS partner,
       games, flow, payer_gave_up, payee_gave_up, max_stake, shared_devices, shared_ips,
       ${min_games} AS min__games, ${min_gave_up} AS min__payer_gave_up, ${min_flow} AS min__flow,
       ${min_gave_up_share} AS min__payer_gave_up_share
FROM hits
UNION ALL
SELECT payee AS account, '30d' AS "window", CAST(flow AS DOUBLE) / 100.0 AS score, 'payee' AS role, payer AS partner,
       games, flow, payer_gave_up, payee_gave_up, max_stake, shared_devices, shared_ips,
       ${min_games}, ${min_gave_up}, ${min_flow}, ${min_gave_up_share}
FROM hits
