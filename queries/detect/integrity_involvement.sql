-- id: integrity_involvement
-- title: Favoured by server faults more than chance allows
-- catches: accounts for which the server broke the rules in their favour (an illegal move of theirs
--   accepted, a move of theirs accepted after the clock limit) more often than the platform's own
--   rate of such faults makes likely for the games they played.
-- why: a server fault that keeps favouring the same account can be a bug someone learned to trigger;
--   faults land on honest players too, and an account that plays much meets more of them. So the
--   rule counts only faults that favoured the account, and the games they fell in rather than the
--   faults (one server incident accepts a run of late moves: three late moves of one game made an
--   honest account "favoured three times"), compares that count with what the platform's rate of
--   such games per game played predicts for its number of games (a Poisson test), and flags only
--   counts that chance would give less than once in ten thousand accounts a month. Faults against the account
--   (a legal move refused, an early timeout) are never held against it.
-- severity: low
-- action: review
-- param min_games = 2 : games with a fault in the account's favour, in 30 days
-- param max_p = 0.0001 : chance of at least that many at the platform's rate (false flags per account per month)
WITH favoured AS (
    SELECT f.account, f.code, f.game, f.seq, f.ts
    FROM findings f
    WHERE f.category = 'integrity' AND f.account IS NOT NULL
      AND f.code IN ('accepted_illegal', 'late_move')
      -- The 30-day window of the features (findings without a time, from lakes replayed before
      -- every finding had one, count as there).
      AND (f.ts IS NULL OR f.ts >= ${window_end} - INTERVAL '30 days')
),
played AS (
    SELECT account, games FROM account_features WHERE "window" = '30d'
),
platform AS (
    -- Games with a fault in a player's favour, per game played, over every account of the window.
    SELECT CAST((SELECT count(*) FROM (SELECT DISTINCT account, game FROM favoured)) AS DOUBLE)
               / greatest(sum(games), 1) AS rate
    FROM played
),
tested AS (
    SELECT f.account,
           count(*) AS favoured_findings,
           count(DISTINCT f.game) AS favoured_games,
           greatest(max(p.games), 1) AS games,
           array_to_string(array_sort(array_distinct(array_agg(f.code))), ' ') AS codes,
           array_agg(concat(f.game, ':', CAST(f.seq AS VARCHAR)) ORDER BY f.ts, f.game, f.seq) AS refs,
           min(f.ts) AS first_seen, max(f.ts) AS last_seen
    FROM favoured f LEFT JOIN played p ON p.account = f.account
    GROUP BY f.account
)
SELECT t.account, '30d' AS "window",
       -log10(greatest(poisson_at_least(t.favoured_games, t.games * pl.rate), 1e-300)) AS score,
       t.favoured_games, t.favoured_findings, t.games, t.codes,
       t.games * pl.rate AS expected_games,
       pl.rate AS platform_rate_per_game,
       poisson_at_least(t.favoured_games, t.games * pl.rate) AS p_value,
       ${min_games} AS min__favoured_games, ${max_p} AS max__p_value,
       t.refs, t.first_seen, t.last_seen
FROM tested t CROSS JOIN platform pl
WHERE t.favoured_games >= ${min_games}
  AND poisson_at_least(t.favoured_games, t.games * pl.rate) <= ${max_p}
