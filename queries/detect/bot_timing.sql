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
--   Between max_spread and band_spread the steadiest people and programs that add a random jitter
--   meet (an independently written simulator: bots up to 0.112, quick, steady people from 0.113):
--   there the forced moves decide. A person answers a move with one legal reply faster than the
--   moves it must think about; a program that waits its delay whatever the position does not, and
--   its pauses put its forced moves' mean above its median, the median of its games' median think
--   times (forced_ratio: that simulator's bots 1.39-2.3 in the band, its people 0.56-0.95). Or the
--   pauses on a steady core do: the median over 14-move windows of the coefficient of variation
--   (think_cv14) against the median-based spread (tail_ratio). Think times spread like a log-normal,
--   as people's do, give a ratio of about 1.5 to 2 (both simulators' steadiest people 1.6-2.0); a steady delay
--   with a pause now and then, many times that (the independent simulator's bots in the band 3.8-13,
--   one of them answering forced moves faster than its median).
-- severity: high
-- action: review
-- param min_moves = 60 : timed moves in 30 days
-- param min_games = 10 : games with 10 timed moves or more (the median of fewer games' spreads strays:
--   a quick, steady person of the independent simulator had 0.0997 over 5 games in 3 days)
-- param max_spread = 0.1 : median over games of (median absolute deviation / median) of think times
-- param band_spread = 0.125 : up to this spread, flagged too when forced moves are not answered faster or the pauses sit on a steady core
-- param min_forced_ratio = 1.2 : in the band, mean think time on forced moves over think_median_ms
-- param min_tail_ratio = 3 : in the band, or think_cv14 at least this many times think_spread, over min_games games of 14 timed moves or more
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
       (${band_spread} - f.think_spread) * 100.0 AS score,
       f.think_spread, b.spread AS platform_median_spread, e.percentile AS spread_percentile,
       b.accounts AS accounts_compared,
       f.spread_games, f.moves_timed, f.think_median_ms, f.think_mean_ms, f.forced_think_ms,
       CASE WHEN f.think_median_ms > 0 THEN f.forced_think_ms / f.think_median_ms END AS forced_ratio,
       f.think_cv, f.think_cv14, f.cv14_games,
       CASE WHEN f.think_spread > 0 THEN f.think_cv14 / f.think_spread END AS tail_ratio,
       ${min_moves} AS min__moves_timed, ${min_games} AS min__spread_games,
       -- The bound the account met: max_spread, or the band's with the threshold it met there (the
       -- forced moves' when both hold).
       CASE WHEN f.think_spread <= ${max_spread} THEN ${max_spread} ELSE ${band_spread} END AS max__think_spread,
       CASE WHEN f.think_spread > ${max_spread} AND forced THEN ${min_forced_ratio} END AS min__forced_ratio,
       CASE WHEN f.think_spread > ${max_spread} AND NOT forced THEN ${min_tail_ratio} END AS min__tail_ratio
FROM (
    SELECT *,
           coalesce(think_median_ms > 0 AND forced_think_ms >= ${min_forced_ratio} * think_median_ms, false) AS forced,
           coalesce(think_spread > 0 AND cv14_games >= ${min_games}
                    AND think_cv14 >= ${min_tail_ratio} * think_spread, false) AS tailed
    FROM account_features
) f
JOIN eligible e ON e.account = f.account
CROSS JOIN base b
WHERE f."window" = '30d' AND f.moves_timed >= ${min_moves}
  AND (f.think_spread <= ${max_spread}
       OR (f.think_spread <= ${band_spread} AND (f.forced OR f.tailed)))
