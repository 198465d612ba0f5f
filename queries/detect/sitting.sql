-- id: sitting
-- title: Sitting out the clock when losing
-- behaviour: sitter
-- catches: accounts that let the clock run out, until the game is lost, in games they are losing.
-- why: sitting wastes the opponent's time instead of resigning; honest timeouts are rare and happen
--   whatever the score. We count timeouts that decided the game while the player was behind.
-- severity: medium
-- action: review
-- param min_timeouts = 2 : decisive timeouts while losing in 30 days
-- param min_share = 0.3 : decisive timeouts while losing per game lost
-- How unusual: the platform's share of lost games decided by the loser's clock (every account's 30d
-- features), and the chance that an account with that share lets at least as many go (binomial).
WITH base AS (
    SELECT CAST(sum(decisive_timeouts_losing) AS DOUBLE) / greatest(sum(losses), 1) AS share
    FROM account_features WHERE "window" = '30d'
)
SELECT f.account, f."window",
       CAST(f.decisive_timeouts_losing AS DOUBLE) / greatest(f.losses, 1) * 10.0 AS score,
       f.decisive_timeouts_losing, f.timeouts_losing, f.timeouts, f.losses, f.games, f.timeout_elapsed_ms,
       CAST(f.decisive_timeouts_losing AS DOUBLE) / greatest(f.losses, 1) AS timeout_loss_share,
       b.share AS platform_timeout_loss_share,
       binomial_at_least(f.decisive_timeouts_losing, greatest(f.losses, f.decisive_timeouts_losing), b.share) AS p_value,
       ${min_timeouts} AS min__decisive_timeouts_losing, ${min_share} AS min__timeout_loss_share,
       e.refs, e.first_seen, e.last_seen
FROM account_features f
CROSS JOIN base b
LEFT JOIN (
    SELECT player AS account, array_agg(concat(game, ':', CAST(seq AS VARCHAR)) ORDER BY ts) AS refs,
           min(ts) AS first_seen, max(ts) AS last_seen
    FROM departures WHERE event = 'timeout' AND losing AND decisive
      AND ts >= (SELECT max(window_end) FROM account_features) - INTERVAL '30 days'
    GROUP BY player
) e ON e.account = f.account
WHERE f."window" = '30d'
  AND f.decisive_timeouts_losing >= ${min_timeouts}
  AND CAST(f.decisive_timeouts_losing AS DOUBLE) / greatest(f.losses, 1) >= ${min_share}
