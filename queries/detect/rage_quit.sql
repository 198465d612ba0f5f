-- id: rage_quit
-- title: Rage quits
-- behaviour: rage_quit
-- catches: accounts that abandon games they are losing (closing the page or disconnecting rather than
--   resigning), again and again.
-- why: abandoning a lost game leaves the opponent waiting and hides the loss; honest players resign, or
--   disconnect rarely and at random moments. Like lichess's playban, one abandon is noise; we flag a
--   pattern and only recommend review.
-- severity: medium
-- action: review
-- param min_abandons = 3 : abandons while losing in 30 days (two can be bad luck with a connection)
-- param min_share = 0.3 : abandons while losing per game lost
-- How unusual: the platform's share of lost games abandoned (every account's 30d features), and the
-- chance that an account with that share abandons at least as many of its lost games (binomial).
WITH base AS (
    SELECT CAST(sum(abandons_losing) AS DOUBLE) / greatest(sum(losses), 1) AS share
    FROM account_features WHERE "window" = '30d'
)
SELECT f.account, f."window",
       CAST(f.abandons_losing AS DOUBLE) / greatest(f.losses, 1) * 10.0 AS score,
       f.abandons_losing, f.departures, f.departures_losing, f.losses, f.games,
       CAST(f.abandons_losing AS DOUBLE) / greatest(f.losses, 1) AS abandon_share,
       b.share AS platform_abandon_share,
       binomial_at_least(f.abandons_losing, greatest(f.losses, f.abandons_losing), b.share) AS p_value,
       ${min_abandons} AS min__abandons_losing, ${min_share} AS min__abandon_share,
       e.refs, e.first_seen, e.last_seen
FROM account_features f
CROSS JOIN base b
LEFT JOIN (
    SELECT player AS account, array_agg(concat(game, ':', CAST(seq AS VARCHAR)) ORDER BY ts) AS refs,
           min(ts) AS first_seen, max(ts) AS last_seen
    FROM departures WHERE event = 'left' AND losing AND reason <> 'resigned'
      AND ts >= (SELECT max(window_end) FROM account_features) - INTERVAL '30 days'
    GROUP BY player
) e ON e.account = f.account
WHERE f."window" = '30d'
  AND f.abandons_losing >= ${min_abandons}
  AND CAST(f.abandons_losing AS DOUBLE) / greatest(f.losses, 1) >= ${min_share}
