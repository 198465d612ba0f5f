-- id: bot_timing
-- title: Bot-like timing
-- behaviour: bot
-- catches: accounts whose think times barely vary: the same delay on easy, forced and hard moves.
-- why: people take longer on hard positions and answer forced moves fast; a program replies with a
--   steady delay. The coefficient of variation over sliding windows of 14 moves is low for bots and
--   rarely below 0.2 for people.
-- severity: high
-- action: review
-- param min_moves = 60 : timed moves in 30 days
-- param max_cv = 0.12 : median coefficient of variation over 14-move windows
SELECT f.account, f."window",
       (${max_cv} - f.think_cv14) * 100.0 AS score,
       f.moves_timed, f.think_mean_ms, f.think_cv, f.think_cv14, f.think_cv_game, f.forced_think_ms,
       ${min_moves} AS min__moves_timed, ${max_cv} AS max__think_cv14
FROM account_features f
WHERE f."window" = '30d' AND f.moves_timed >= ${min_moves} AND f.think_cv14 <= ${max_cv}
