-- id: sitting
-- title: Sitting out the clock when losing
-- behaviour: sitter
-- catches: accounts that let the clock run out, until the game is lost, in games they are losing, far
--   more often than in games they are not losing, even if they do it in only some of their lost games.
-- why: sitting wastes the opponent's time instead of resigning. Honest timeouts (a call, a dropped
--   connection) happen whatever the score, so the baseline is the account's own rate of decisive
--   timeouts while not losing, per game not lost, shrunk towards the platform's such rate as if it
--   had played prior_games more games at it, or the platform's rate per lost game if higher; the rule
--   flags a count that chance at the baseline gives at most max_p (binomial), when the rate per lost
--   game is also at least min_ratio times the baseline. As in rage_quit, the timeouts must also fall
--   while losing more often than the account's own moves do: had each come at a random move of the
--   account's, it would be while losing with the share of its timed moves played while losing
--   (the platform's when it has none); the chance of at least that many while losing (binomial) must
--   be at most max_p_split (a friend on a bad connection who lost 60 of 78 games, two thirds of its
--   moves while behind, was flagged for 3 timeouts out of 3 while losing).
-- severity: medium
-- action: review
-- param min_timeouts = 2 : decisive timeouts while losing in 30 days
-- param prior_games = 30 : weight of the platform's rate in the account's own rate (games)
-- param min_ratio = 3 : the rate per lost game at least this many times the baseline
-- param max_p = 0.001 : chance of at least that many at the baseline (false flags per account and month)
-- param max_p_split = 0.2 : chance of at least that many of the account's decisive timeouts while losing, at its share of moves played while losing
WITH f AS (
    SELECT account, "window", games, losses, decisive_timeouts_losing, decisive_timeouts,
           timeouts_losing, timeouts, timeout_elapsed_ms,
           greatest(decisive_timeouts - decisive_timeouts_losing, 0) AS decisive_timeouts_other,
           coalesce(moves_losing, 0) AS moves_losing, coalesce(moves_timed, 0) AS moves_timed
    FROM account_features WHERE "window" = '30d'
),
base AS (
    SELECT CAST(sum(decisive_timeouts_losing) AS DOUBLE) / greatest(sum(losses), 1) AS share,
           CAST(sum(decisive_timeouts_other) AS DOUBLE)
               / greatest(sum(greatest(games - losses, 0) + decisive_timeouts_other), 1) AS other_rate,
           -- The platform's share of timed moves played while losing (null when none was timed).
           CAST(sum(moves_losing) AS DOUBLE) / nullif(sum(moves_timed), 0) AS losing_move_share
    FROM f
),
t AS (
    SELECT f.*, b.share AS platform_timeout_loss_share, b.other_rate AS platform_other_rate,
           b.losing_move_share AS platform_losing_move_share,
           CASE WHEN f.moves_timed > 0 THEN CAST(least(f.moves_losing, f.moves_timed) AS DOUBLE) / f.moves_timed
                ELSE b.losing_move_share END AS losing_move_share,
           (f.decisive_timeouts_other + ${prior_games} * b.other_rate)
               / (greatest(f.games - f.losses, 0) + f.decisive_timeouts_other + ${prior_games}) AS own_other_rate
    FROM f CROSS JOIN base b
    WHERE f.decisive_timeouts_losing >= ${min_timeouts}
),
tested AS (
    SELECT *, greatest(platform_timeout_loss_share, own_other_rate) AS baseline,
           CAST(decisive_timeouts_losing AS DOUBLE) / greatest(losses, decisive_timeouts_losing) AS timeout_loss_share,
           binomial_at_least(decisive_timeouts_losing, greatest(losses, decisive_timeouts_losing),
                             greatest(platform_timeout_loss_share, own_other_rate)) AS p_value,
           -- Null when no move was ever timed (no share to test against): not flagged.
           binomial_at_least(decisive_timeouts_losing, greatest(decisive_timeouts, decisive_timeouts_losing),
                             losing_move_share) AS p_split
    FROM t
),
hits AS (
    SELECT * FROM tested x
    WHERE x.p_value <= ${max_p} AND x.timeout_loss_share >= ${min_ratio} * x.baseline
      AND x.p_split <= ${max_p_split}
)
SELECT x.account, x."window",
       -log10(greatest(x.p_value, 1e-300)) AS score,
       x.decisive_timeouts_losing, x.decisive_timeouts_other, x.timeouts_losing, x.timeouts, x.losses,
       x.games, x.timeout_elapsed_ms, x.timeout_loss_share,
       x.platform_timeout_loss_share, x.platform_other_rate, x.own_other_rate,
       x.baseline AS baseline_rate, x.p_value, x.timeout_loss_share / x.baseline AS ratio_to_baseline,
       ${min_timeouts} AS min__decisive_timeouts_losing, ${max_p} AS max__p_value,
       ${min_ratio} AS min__ratio_to_baseline,
       x.moves_losing, x.moves_timed, x.losing_move_share, x.platform_losing_move_share, x.p_split,
       ${max_p_split} AS max__p_split,
       e.refs, e.first_seen, e.last_seen
FROM hits x
LEFT JOIN (
    SELECT player AS account, array_agg(concat(game, ':', CAST(seq AS VARCHAR)) ORDER BY ts) AS refs,
           min(ts) AS first_seen, max(ts) AS last_seen
    FROM departures WHERE event = 'timeout' AND losing AND decisive
      AND ts >= ${window_end} - INTERVAL '30 days'
      AND player IN (SELECT account FROM hits)
    GROUP BY player
) e ON e.account = x.account
