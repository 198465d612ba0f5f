-- id: stalling
-- title: Stalling when losing
-- behaviour: staller
-- catches: accounts that, when behind, play each move just before the clock runs out, and play
--   normally otherwise.
-- why: stalling drains the opponent's time and patience without breaking a rule outright; the contrast
--   between losing and other positions separates it from slow, careful players.
-- severity: low
-- action: review
-- param min_slow = 10 : moves over 80 % of the clock while losing, in 30 days
-- param min_share = 0.2 : share of moves while losing that are that slow (honest accounts: 99 % under 0.04)
-- param max_other = 0.1 : share of slow moves in other positions
SELECT f.account, f."window",
       (f.slow_share_losing - coalesce(f.slow_share_other, 0)) * 10.0 AS score,
       f.slow_moves_losing, f.moves_losing, f.slow_share_losing, f.slow_share_other, f.think_mean_ms,
       ${min_slow} AS min__slow_moves_losing, ${min_share} AS min__slow_share_losing, ${max_other} AS max__slow_share_other
FROM account_features f
WHERE f."window" = '30d'
  AND f.slow_moves_losing >= ${min_slow}
  AND f.slow_share_losing >= ${min_share}
  AND coalesce(f.slow_share_other, 0) <= ${max_other}
