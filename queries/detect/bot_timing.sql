-- id: bot_timing
-- title: Bot-like timing
-- behaviour: bot
-- catches: accounts whose think times barely vary from move to move, game after game, even if a
--   pause comes now and then.
-- why: people take longer on hard positions and answer forced moves fast, so their think times spread
--   widely (the median absolute deviation is 30-60 % of the median); a program replies after a steady
--   delay. The spread is measured per game with the median and the median absolute deviation, which a
--   few human-looking pauses do not move, then the median is taken over the account's games. The
--   evidence gives the account's place among every account with enough games (percentile).
-- severity: high
-- action: review
-- param min_moves = 60 : timed moves in 30 days
-- param min_games = 5 : games with 10 timed moves or more
-- param max_spread = 0.1 : median over games of (median absolute deviation / median) of think times
WITH eligible AS (
    SELECT account, think_spread,
           percent_rank() OVER (ORDER BY think_spread) AS percentile
    FROM account_features
    WHERE "window" = '30d' AND spread_games >= ${min_games} AND think_spread IS NOT NULL
),
base AS (
    SELECT median(think_spread) AS spread, count(*) AS accounts FROM eligible
)
SELECT f.account, f."window",
       (${max_spread} - f.think_spread) * 100.0 AS score,
       f.think_spread, b.spread AS platform_median_spread, e.percentile AS spread_percentile,
       b.accounts AS accounts_compared,
       f.spread_games, f.moves_timed, f.think_median_ms, f.think_mean_ms, f.forced_think_ms,
       f.think_cv, f.think_cv14,
       ${min_moves} AS min__moves_timed, ${min_games} AS min__spread_games,
       ${max_spread} AS max__think_spread
FROM account_features f
JOIN eligible e ON e.account = f.account
CROSS JOIN base b
WHERE f."window" = '30d' AND f.moves_timed >= ${min_moves} AND f.think_spread <= ${max_spread}
