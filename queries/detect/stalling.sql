-- id: stalling
-- title: Stalling when losing
-- behaviour: staller
-- catches: accounts that, when behind, play moves just before the clock runs out far more often than
--   the platform's players do when behind, and than they do themselves otherwise, even if they stall
--   in only some of their lost games.
-- why: stalling drains the opponent's time and patience without breaking a rule outright. A slow,
--   careful player is slow whatever the score, so the account's own share of slow moves in other
--   positions is its baseline when it is higher than the platform's share when losing; the chance of
--   at least that many slow moves while losing at the baseline rate (binomial) must be below max_p.
-- severity: low
-- action: review
-- param min_slow = 5 : moves over 80 % of the clock while losing, in 30 days
-- param max_p = 0.000001 : chance of at least that many at the baseline (per account and month)
WITH base AS (
    SELECT CAST(sum(slow_moves_losing) AS DOUBLE) / greatest(sum(moves_losing), 1) AS share
    FROM account_features WHERE "window" = '30d'
),
t AS (
    SELECT f.*, b.share AS platform_slow_share_losing,
           -- Moves in other positions, and the slow ones among them (with half a move of prior).
           greatest(f.moves_timed - f.moves_losing, 0) AS moves_other,
           (coalesce(f.slow_share_other, 0) * greatest(f.moves_timed - f.moves_losing, 0) + 0.5)
               / (greatest(f.moves_timed - f.moves_losing, 0) + 1) AS own_slow_share_other,
           b.share AS floor_share
    FROM account_features f CROSS JOIN base b
    WHERE f."window" = '30d' AND f.slow_moves_losing >= ${min_slow}
),
tested AS (
    SELECT *, greatest(floor_share, own_slow_share_other) AS baseline,
           binomial_at_least(slow_moves_losing, moves_losing, greatest(floor_share, own_slow_share_other)) AS p_value
    FROM t
)
SELECT account, "window",
       -log10(greatest(p_value, 1e-300)) AS score,
       slow_moves_losing, moves_losing, slow_share_losing, slow_share_other, moves_other,
       platform_slow_share_losing, baseline AS baseline_share, p_value, think_mean_ms,
       ${min_slow} AS min__slow_moves_losing, ${max_p} AS max__p_value
FROM tested
WHERE p_value <= ${max_p}
