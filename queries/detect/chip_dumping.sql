-- id: chip_dumping
-- title: Chip dumping
-- behaviour: chip_dumping
-- catches: pairs of accounts where one keeps giving games up to the same partner (resigning, leaving or
--   timing out) cheaply: while not behind on the board, or within the first 20 plies whatever the
--   board (gave_up_cheaply), so that stakes flow one way, whatever the stakes.
-- why: it moves money between accounts (collusion, laundering, bonus abuse) through games no one
--   played out. Honest players give up when beaten; one who drops out at random (a bad connection)
--   does so against everyone alike. So the baseline is the payer's own rate of giving up cheaply in
--   games against others, shrunk towards the platform's rate as if it had played prior_games
--   more games at it, or the platform's rate if higher, and
--   the chance of at least that many against this partner (binomial) must be below max_p. Both
--   accounts of the pair are flagged; the evidence names the partner.
-- severity: high
-- action: review
-- param min_gave_up = 3 : games the payer gave up cheaply to the partner, in 30 days
-- param max_payee_share = 0.2 : the partner's such give-ups, as a share of the payer's (win traders give up in turns)
-- param min_flow = 1 : net stake flow from the payer to the partner
-- param prior_games = 30 : weight of the platform's rate in the payer's own rate (games)
-- param max_p = 0.000001 : chance of at least that many give-ups at the baseline (per pair and month)
WITH acc AS (
    SELECT account, games, coalesce(gave_up_cheaply, 0) AS gave_up_cheaply
    FROM account_features WHERE "window" = '30d'
),
base AS (
    SELECT CAST(sum(gave_up_cheaply) AS DOUBLE) / greatest(sum(games), 1) AS rate FROM acc
),
p AS (
    SELECT a, b, games, flow_a_to_b, a_gave_up, b_gave_up, max_stake, shared_devices, shared_ips,
           CASE WHEN flow_a_to_b > 0 THEN a ELSE b END AS payer,
           CASE WHEN flow_a_to_b > 0 THEN b ELSE a END AS payee,
           abs(flow_a_to_b) AS flow,
           CASE WHEN flow_a_to_b > 0 THEN coalesce(a_gave_up_cheaply, 0) ELSE coalesce(b_gave_up_cheaply, 0) END AS payer_gave_up_cheaply,
           CASE WHEN flow_a_to_b > 0 THEN coalesce(b_gave_up_cheaply, 0) ELSE coalesce(a_gave_up_cheaply, 0) END AS payee_gave_up_cheaply
    FROM pair_features
    WHERE "window" = '30d'
),
t AS (
    SELECT p.*, bs.rate AS platform_rate,
           (greatest(x.gave_up_cheaply - p.payer_gave_up_cheaply, 0) + ${prior_games} * bs.rate)
               / (greatest(x.games - p.games, 0) + ${prior_games}) AS payer_rate_with_others
    FROM p JOIN acc x ON x.account = p.payer CROSS JOIN base bs
    WHERE p.payer_gave_up_cheaply >= ${min_gave_up} AND p.flow >= ${min_flow}
      AND p.payee_gave_up_cheaply <= ${max_payee_share} * p.payer_gave_up_cheaply
),
hits AS (
    SELECT *, greatest(platform_rate, payer_rate_with_others) AS baseline,
           binomial_at_least(payer_gave_up_cheaply, games, greatest(platform_rate, payer_rate_with_others)) AS p_value
    FROM t
)
SELECT payer AS account, '30d' AS "window", -log10(greatest(p_value, 1e-300)) AS score, 'payer' AS role,
       payee AS partner, games, flow, payer_gave_up_cheaply, payee_gave_up_cheaply, platform_rate,
       payer_rate_with_others, baseline AS baseline_rate, p_value, max_stake, shared_devices, shared_ips,
       ${min_gave_up} AS min__payer_gave_up_cheaply, ${max_p} AS max__p_value
FROM hits WHERE p_value <= ${max_p}
UNION ALL
SELECT payee AS account, '30d' AS "window", -log10(greatest(p_value, 1e-300)) AS score, 'payee' AS role,
       payer AS partner, games, flow, payer_gave_up_cheaply, payee_gave_up_cheaply, platform_rate,
       payer_rate_with_others, baseline AS baseline_rate, p_value, max_stake, shared_devices, shared_ips,
       ${min_gave_up}, ${max_p}
FROM hits WHERE p_value <= ${max_p}
