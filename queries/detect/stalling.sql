-- id: stalling
-- title: Stalling when losing
-- behaviour: staller
-- catches: accounts that, when behind, play moves just before the clock runs out far more often than
--   the platform's players do when behind, and than they do themselves otherwise, even if they stall
--   in only some of their lost games.
-- why: stalling drains the opponent's time and patience without breaking a rule outright. A slow,
--   careful player is slow whatever the score, and people think longer when in trouble. So the
--   account's expected share of slow moves while losing is its own share of slow moves in other
--   positions, shrunk towards the platform's such share as if it had played prior_moves more moves
--   at it, times the platform's losing factor (its share of slow moves while losing over its share
--   otherwise, at least 1), or the platform's share while losing if higher; the chance of at least
--   that many slow moves while losing at that baseline (binomial) must be below max_p, and the share
--   while losing at least min_ratio times the baseline: slow moves come in runs (a hard game), so an
--   honest player's share while losing strays further from its share otherwise than a binomial
--   allows (up to about 3 times on the simulator's honest players); a staller's is many times it.
--   A staller who, once it starts, stalls to the end of the game, even when the game is level
--   again, puts its stalled moves in its own baseline (1.5-3.5 times it on the independent
--   simulator). So the rule tests a second baseline, the same built from the moves not losing made
--   before the first slow move while losing of each game; that also leaves out the rest of an
--   honest player's hard games (slow moves come in runs), so a flag on it needs min_ratio_prestall.
--   Either way, the account's slow moves must also fall while losing more often than its moves do:
--   had each come at a random move of the account's, it would be while losing with its share of
--   moves played while losing; the chance of at least that many of its slow moves (while losing and
--   otherwise) while losing (binomial) must be at most max_p_split. A slow player who is behind in
--   nine moves out of ten was flagged on the second baseline with 8 slow moves in 114 while losing,
--   against 1 in its 12 others (the one before its games' first stall: 0 in 1).
--   A third test counts games, not moves: a staller stalls move after move, an honest player's slow
--   moves come one or two at a time, even in a hard game. A game is stalled when the account made
--   min_run slow moves in a row there, one of them at least while losing (game_players.slow_run_losing);
--   its own games with such a run and no move while losing (slow_run_other) are its baseline, per
--   game, shrunk towards the platform's such rate as if it had played prior_games more games at it,
--   or the platform's stalled games per game if higher. The chance of at least that many stalled
--   games at that baseline (binomial over its games) must be below max_p, and their share of its
--   games at least min_ratio times the baseline. Counting a game once does not care how long the
--   staller went on, nor whether the game was level again meanwhile (stallers of the independent
--   simulator with 123 to 657 slow moves while losing were under both ratios above). The split
--   check above applies to this test too.
-- severity: low
-- action: review
-- param min_slow = 5 : moves over 80 % of the clock while losing, in 30 days
-- param prior_moves = 100 : weight of the platform's share in the account's own share (moves)
-- param min_ratio = 4 : the share while losing at least this many times the baseline
-- param max_p = 0.000001 : chance of at least that many at the baseline (per account and month)
-- param min_ratio_prestall = 8 : on the baseline before each game's first slow move while losing, the ratio needed
-- param max_p_split = 0.2 : chance of at least that many of the account's slow moves while losing, at its share of moves played while losing
-- param min_run = 5 : slow moves in a row, one at least while losing, that make a game stalled
-- param min_stall_games = 3 : stalled games in 30 days for the test on games
-- param prior_games = 30 : weight of the platform's rate of runs not losing in the account's own (games)
WITH runs AS (
    -- The window's games with a run of min_run slow moves: with one while losing (stalled) or none.
    -- Rows an older Vigie wrote have no runs (null): not counted.
    SELECT account,
           count(*) FILTER (WHERE slow_run_losing >= ${min_run}) AS stalled_games,
           count(*) FILTER (WHERE slow_run_other >= ${min_run}) AS slow_run_games_other
    FROM game_players
    WHERE (slow_run_losing >= ${min_run} OR slow_run_other >= ${min_run})
      AND started_at >= ${window_end} - INTERVAL '30 days' AND started_at <= ${window_end}
      AND date >= CAST(${window_end} - INTERVAL '30 days' AS DATE)
    GROUP BY account
),
other AS (
    SELECT a.*, greatest(a.moves_timed - a.moves_losing, 0) AS moves_other,
           coalesce(a.slow_share_other, 0) * greatest(a.moves_timed - a.moves_losing, 0) AS slow_moves_other,
           coalesce(r.stalled_games, 0) AS stalled_games,
           coalesce(r.slow_run_games_other, 0) AS slow_run_games_other
    FROM account_features a LEFT JOIN runs r ON r.account = a.account
    WHERE a."window" = '30d'
),
f AS (
    -- Rows of features an older Vigie wrote have no prestall counts: all their moves not losing.
    SELECT *, coalesce(moves_other_prestall, moves_other) AS moves_prestall,
           coalesce(slow_moves_other_prestall, slow_moves_other) AS slow_moves_prestall
    FROM other
),
base AS (
    SELECT CAST(sum(slow_moves_losing) AS DOUBLE) / greatest(sum(moves_losing), 1) AS share,
           sum(slow_moves_other) / greatest(sum(moves_other), 1) AS other_share,
           CAST(sum(slow_moves_prestall) AS DOUBLE) / greatest(sum(moves_prestall), 1) AS prestall_share,
           CAST(sum(stalled_games) AS DOUBLE) / greatest(sum(games), 1) AS stalled_rate,
           CAST(sum(slow_run_games_other) AS DOUBLE) / greatest(sum(games), 1) AS other_run_rate
    FROM f
),
t AS (
    SELECT f.*, b.share AS platform_slow_share_losing, b.other_share AS platform_slow_share_other,
           CASE WHEN b.other_share > 0 THEN greatest(b.share / b.other_share, 1.0) ELSE 1.0 END AS losing_factor,
           (f.slow_moves_other + ${prior_moves} * b.other_share) / (f.moves_other + ${prior_moves}) AS own_slow_share_other,
           b.prestall_share AS platform_slow_share_prestall,
           CASE WHEN b.prestall_share > 0 THEN greatest(b.share / b.prestall_share, 1.0) ELSE 1.0 END AS losing_factor_prestall,
           (f.slow_moves_prestall + ${prior_moves} * b.prestall_share) / (f.moves_prestall + ${prior_moves}) AS own_slow_share_prestall,
           b.stalled_rate AS platform_stalled_rate, b.other_run_rate AS platform_other_run_rate,
           (f.slow_run_games_other + ${prior_games} * b.other_run_rate) / (f.games + ${prior_games}) AS own_other_run_rate
    FROM f CROSS JOIN base b
    WHERE (f.slow_moves_losing >= ${min_slow} OR f.stalled_games >= ${min_stall_games})
      AND f.slow_moves_losing > 0
),
baselines AS (
    SELECT *, greatest(platform_slow_share_losing, own_slow_share_other * losing_factor) AS baseline,
           greatest(platform_slow_share_losing, own_slow_share_prestall * losing_factor_prestall) AS baseline_prestall,
           greatest(platform_stalled_rate, own_other_run_rate) AS baseline_runs
    FROM t
),
tested AS (
    SELECT *, binomial_at_least(slow_moves_losing, moves_losing, baseline) AS p_value,
           binomial_at_least(slow_moves_losing, moves_losing, baseline_prestall) AS p_value_prestall,
           binomial_at_least(stalled_games, greatest(games, stalled_games), baseline_runs) AS p_runs,
           CAST(stalled_games AS DOUBLE) / greatest(games, stalled_games, 1) AS stalled_share,
           -- moves_timed >= moves_losing >= slow_moves_losing > 0 here.
           CAST(moves_losing AS DOUBLE) / moves_timed AS losing_move_share,
           binomial_at_least(slow_moves_losing, slow_moves_losing + round(slow_moves_other),
                             CAST(moves_losing AS DOUBLE) / moves_timed) AS p_split
    FROM baselines
),
judged AS (
    SELECT *,
           coalesce(slow_moves_losing >= ${min_slow} AND p_value <= ${max_p}
                    AND slow_share_losing >= ${min_ratio} * baseline, false) AS holds_all,
           coalesce(slow_moves_losing >= ${min_slow} AND p_value_prestall <= ${max_p}
                    AND slow_share_losing >= ${min_ratio_prestall} * baseline_prestall, false) AS holds_prestall,
           coalesce(stalled_games >= ${min_stall_games} AND p_runs <= ${max_p}
                    AND stalled_share >= ${min_ratio} * baseline_runs, false) AS holds_runs
    FROM tested
),
hits AS (
    SELECT *,
           -- Which test the flag rests on: the moves against all moves not losing when it holds
           -- there, then against the moves before stalling, then the stalled games.
           holds_all AS on_all, NOT holds_all AND holds_prestall AS on_prestall,
           NOT holds_all AND NOT holds_prestall AS on_runs
    FROM judged
    WHERE (holds_all OR holds_prestall OR holds_runs) AND p_split <= ${max_p_split}
),
-- The evidence a reviewer opens: the slow moves while losing of the games started in the window, as
-- the replay lists them per game (`game_players.slow_losing_refs`, null in rows an older Vigie
-- wrote), by time: joined as text like manipulation_attempts' tamper_refs (game ids have no
-- spaces; aggregating the lists themselves made DataFusion account each value at the size of its
-- whole source buffer).
slow AS (
    SELECT account AS slow_by,
           string_to_array(string_agg(array_to_string(slow_losing_refs, ' '), ' ' ORDER BY slow_losing_first, game), ' ') AS refs,
           min(slow_losing_first) AS first_seen, max(slow_losing_last) AS last_seen
    FROM game_players
    WHERE account IN (SELECT account FROM hits) AND slow_losing_moves > 0
      AND slow_losing_refs IS NOT NULL
      AND started_at >= ${window_end} - INTERVAL '30 days' AND started_at <= ${window_end}
      -- A game's partition is its start date: older partitions are not even listed.
      AND date >= CAST(${window_end} - INTERVAL '30 days' AS DATE)
    GROUP BY account
)
SELECT account, "window",
       -log10(greatest(CASE WHEN on_all THEN p_value WHEN on_prestall THEN p_value_prestall ELSE p_runs END, 1e-300)) AS score,
       slow_moves_losing, moves_losing, slow_share_losing, slow_share_other, moves_other,
       platform_slow_share_losing, platform_slow_share_other, losing_factor, own_slow_share_other,
       baseline AS baseline_share, p_value, slow_share_losing / baseline AS ratio_to_baseline,
       moves_prestall AS moves_other_prestall,
       -- A count (rows of an older replay lend slow_share_other times their moves not losing).
       CAST(round(slow_moves_prestall) AS BIGINT) AS slow_moves_other_prestall,
       platform_slow_share_prestall, own_slow_share_prestall, baseline_prestall AS baseline_share_prestall,
       p_value_prestall, slow_share_losing / baseline_prestall AS ratio_to_baseline_prestall,
       CASE WHEN on_all THEN 'all moves not losing' WHEN on_prestall THEN 'moves not losing before stalling'
            ELSE 'stalled games' END AS flagged_on,
       stalled_games, slow_run_games_other, games, stalled_share, platform_stalled_rate,
       platform_other_run_rate, own_other_run_rate, baseline_runs AS baseline_rate_runs, p_runs,
       -- Null when no game of the platform had a run (nothing to be a ratio of).
       stalled_share / nullif(baseline_runs, 0) AS ratio_to_baseline_runs,
       think_mean_ms, CASE WHEN NOT on_runs THEN ${min_slow} END AS min__slow_moves_losing,
       CAST(round(slow_moves_other) AS BIGINT) AS slow_moves_other, moves_timed, losing_move_share, p_split,
       ${max_p_split} AS max__p_split,
       -- The thresholds of the baseline the flag rests on (the dashboard sets them against their columns).
       CASE WHEN on_all THEN ${max_p} END AS max__p_value,
       CASE WHEN on_all THEN ${min_ratio} END AS min__ratio_to_baseline,
       CASE WHEN on_prestall THEN ${max_p} END AS max__p_value_prestall,
       CASE WHEN on_prestall THEN ${min_ratio_prestall} END AS min__ratio_to_baseline_prestall,
       CASE WHEN on_runs THEN ${min_stall_games} END AS min__stalled_games,
       CASE WHEN on_runs THEN ${max_p} END AS max__p_runs,
       CASE WHEN on_runs THEN ${min_ratio} END AS min__ratio_to_baseline_runs,
       e.refs, e.first_seen, e.last_seen
FROM hits
LEFT JOIN slow e ON e.slow_by = hits.account
