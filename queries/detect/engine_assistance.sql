-- id: engine_assistance
-- title: Engine-assisted play
-- behaviour: engine_assisted
-- catches: accounts whose draughts moves agree with a deep search more than any person's do, over
--   enough analysed positions of rated 10x10 and 8x8 games (Medieval games are not analysed), even
--   when the program chooses only some of their moves.
-- why: three things tell a program's move from a person's, whatever the player's strength. Where
--   several moves are about as good (within a fifth of a man of the best), a person picks one of them
--   for their own reasons; a program picks its first. So among the account's good moves in such
--   positions, the share that is exactly the engine's first choice is tested against the platform's
--   share at the same number of good moves (a strong player plays good moves more often, not the
--   engine's first among them more often). And where the best move is one a shallow search misses
--   and the engine's beats it clearly ("hard" positions), finding it needs a deep search: the
--   account's hard finds are tested against the platform's rate, per board. And a person's play is
--   of one strength: the better the player, the smaller their mistakes and the more best moves,
--   along one curve that the platform's accounts draw. An account that takes a program's move on
--   some turns and plays its own on the others has the best moves of a much stronger player, while
--   its mistakes (the moves that are not best) are as big as its own strength makes them: its best
--   moves (within a tenth of a man) are tested against what the accounts whose mistakes are
--   blunders (a man or more) as often as its own play, the share of blunders among the mistakes
--   being blind to how many moves a program chose. The curve is fit robustly across the analysed
--   accounts (log best-move ratio against log blunder-share ratio, each against the platform's rate
--   in positions of the same difficulty; median of slopes, then median intercept).
--   This test is one-sided: an account below the curve counts as zero in it (a program on every move
--   leaves too few mistakes to place the account on the curve; the first two tests catch it). Each test gives a z-score against
--   the platform's own baseline (fit from every analysed game); the three are combined (Stouffer)
--   and the account is flagged when the combined chance is at most max_p. The evidence also
--   gives the account's agreement with the engine on every non-forced move against its expected value
--   given each position's difficulty, its average loss against the expected one, the account's
--   place among the analysed accounts, and its think time in hard positions against ordinary ones
--   beside the platform's ratio (people think longer when it is hard). As on every platform that does
--   this, a person decides: review only, never a block.
-- severity: high
-- action: review
-- param min_good = 40 : good moves (one of several within a fifth of a man of the best) in 30 days
-- param min_games = 10 : analysed games in 30 days
-- param best_loss = 10 : a move losing at most this (hundredths of a man) counts as a best move
-- param blunder_loss = 100 : a move losing at least this counts as a blunder
-- param max_p = 0.00003 : chance of a combined z-score at least that high for a person (false flags per account and month)
WITH m AS (
    SELECT a.*, CASE WHEN a.near_best >= 4 THEN 4 ELSE a.near_best END AS difficulty,
           a.near_best >= 2 AND a.loss <= 20 AS good_choice
    FROM move_analysis a
    WHERE NOT a.forced AND NOT a.auto
      AND CAST(a.date AS DATE) >= ${window_end_date} - INTERVAL '30 days'
),
hard_base AS (
    SELECT kind, avg(CASE WHEN matched THEN 1.0 ELSE 0.0 END) AS p_hard
    FROM m WHERE hard GROUP BY kind
),
good_base AS (
    SELECT kind, difficulty, avg(CASE WHEN matched THEN 1.0 ELSE 0.0 END) AS p_top
    FROM m WHERE good_choice GROUP BY kind, difficulty
),
base AS (
    SELECT kind, difficulty, avg(CASE WHEN matched THEN 1.0 ELSE 0.0 END) AS p_match,
           avg(CAST(loss AS DOUBLE)) AS mean_loss, var_pop(CAST(loss AS DOUBLE)) AS var_loss
    FROM m GROUP BY kind, difficulty
),
mix_base AS (
    SELECT kind, difficulty, hard,
           avg(CASE WHEN loss <= ${best_loss} THEN 1.0 ELSE 0.0 END) AS p_best,
           avg(CASE WHEN loss >= ${blunder_loss} THEN 1.0 ELSE 0.0 END) AS p_blunder
    FROM m GROUP BY kind, difficulty, hard
),
think_base AS (
    SELECT avg(CASE WHEN hard THEN think_ms END) / greatest(avg(CASE WHEN NOT hard THEN think_ms END), 1) AS ratio
    FROM m
),
acc AS (
    SELECT m.player AS account, count(*) AS positions, count(DISTINCT m.game) AS games,
           sum(CASE WHEN m.good_choice THEN 1 ELSE 0 END) AS good_positions,
           sum(CASE WHEN m.good_choice AND m.matched THEN 1 ELSE 0 END) AS top_choices,
           sum(CASE WHEN m.good_choice THEN g.p_top ELSE 0 END) AS expected_top_choices,
           sum(CASE WHEN m.good_choice THEN g.p_top * (1 - g.p_top) ELSE 0 END) AS var_top,
           sum(CASE WHEN m.hard THEN 1 ELSE 0 END) AS hard_positions,
           sum(CASE WHEN m.hard AND m.matched THEN 1 ELSE 0 END) AS hard_finds,
           sum(CASE WHEN m.hard THEN h.p_hard ELSE 0 END) AS expected_hard_finds,
           sum(CASE WHEN m.hard THEN h.p_hard * (1 - h.p_hard) ELSE 0 END) AS var_hard,
           sum(CASE WHEN m.matched THEN 1 ELSE 0 END) AS matches,
           sum(b.p_match) AS expected_matches,
           sum(b.p_match * (1 - b.p_match)) AS var_matches,
           sum(CASE WHEN m.loss <= ${best_loss} THEN 1 ELSE 0 END) AS best_moves,
           sum(x.p_best) AS expected_best_moves,
           sum(CASE WHEN m.loss >= ${blunder_loss} THEN 1 ELSE 0 END) AS blunders,
           sum(CASE WHEN m.loss > ${best_loss} THEN 1 ELSE 0 END) AS mistakes,
           sum(CASE WHEN m.loss > ${best_loss} THEN x.p_blunder / greatest(1.0 - x.p_best, 1e-6) ELSE 0 END) AS expected_blunders,
           avg(CAST(m.loss AS DOUBLE)) AS average_loss,
           avg(b.mean_loss) AS expected_loss,
           sum(b.var_loss) AS var_loss_sum,
           avg(CASE WHEN m.hard THEN m.think_ms END) / greatest(avg(CASE WHEN NOT m.hard THEN m.think_ms END), 1) AS think_ratio
    FROM m
    JOIN base b ON b.kind = m.kind AND b.difficulty = m.difficulty
    LEFT JOIN hard_base h ON h.kind = m.kind
    LEFT JOIN good_base g ON g.kind = m.kind AND g.difficulty = m.difficulty
    JOIN mix_base x ON x.kind = m.kind AND x.difficulty = m.difficulty AND x.hard = m.hard
    GROUP BY m.player
),
scored AS (
    SELECT a.*,
           (a.top_choices - a.expected_top_choices) / sqrt(greatest(a.var_top, 1e-9)) AS top_choice_z,
           CASE WHEN a.hard_positions > 0
                THEN (a.hard_finds - a.expected_hard_finds) / sqrt(greatest(a.var_hard, 1e-9)) ELSE 0 END AS hard_z,
           ln((a.best_moves + 0.5) / (a.expected_best_moves + 0.5)) AS best_log_ratio,
           ln((a.blunders + 0.5) / (a.expected_blunders + 0.5)) AS blunder_log_ratio
    FROM acc a
    WHERE a.good_positions >= ${min_good} AND a.games >= ${min_games}
),
-- The population's curve: accounts ordered by blunder ratio, each paired with the one half the
-- population further (a fast robust estimator of the Theil-Sen kind: the median of those slopes),
-- then the median intercept. Cheaters are a minority of the accounts: they move neither median far.
ordered AS (
    SELECT s.account, s.best_log_ratio, s.blunder_log_ratio,
           CAST(row_number() OVER (ORDER BY s.blunder_log_ratio, s.account) AS BIGINT) AS i,
           count(*) OVER () AS n
    FROM scored s
),
slope AS (
    SELECT coalesce(median((b.best_log_ratio - a.best_log_ratio) / (b.blunder_log_ratio - a.blunder_log_ratio)), 0.0) AS beta
    FROM ordered a JOIN ordered b ON b.i = a.i + a.n / 2
    WHERE b.blunder_log_ratio > a.blunder_log_ratio
),
curve AS (
    SELECT sl.beta, median(o.best_log_ratio - sl.beta * o.blunder_log_ratio) AS alpha
    FROM ordered o CROSS JOIN slope sl
    GROUP BY sl.beta
),
mixed AS (
    SELECT s.*, c.beta AS curve_slope, c.alpha AS curve_intercept,
           least(s.expected_best_moves * exp(c.alpha + c.beta * s.blunder_log_ratio), 0.99 * s.positions) AS best_moves_at_blunder_rate
    FROM scored s CROSS JOIN curve c
),
judged AS (
    SELECT m.*,
           (m.best_moves - m.best_moves_at_blunder_rate)
             / sqrt(greatest(m.best_moves_at_blunder_rate * (1 - m.best_moves_at_blunder_rate / m.positions), 1e-9)) AS best_given_blunders_z
    FROM mixed m
),
tested AS (
    SELECT s.*,
           (s.top_choice_z + s.hard_z + greatest(s.best_given_blunders_z, 0.0)) / sqrt(3.0) AS combined_z,
           CAST(s.best_moves AS DOUBLE) / s.positions AS best_move_rate,
           s.best_moves_at_blunder_rate / s.positions AS expected_best_move_rate,
           CAST(s.blunders AS DOUBLE) / greatest(s.mistakes, 1) AS blunder_share,
           s.expected_blunders / greatest(s.mistakes, 1) AS platform_blunder_share,
           CAST(s.top_choices AS DOUBLE) / s.good_positions AS top_choice_rate,
           s.expected_top_choices / s.good_positions AS platform_top_choice_rate,
           CAST(s.hard_finds AS DOUBLE) / greatest(s.hard_positions, 1) AS hard_find_rate,
           s.expected_hard_finds / greatest(s.hard_positions, 1) AS platform_hard_find_rate,
           (s.matches - s.expected_matches) / sqrt(greatest(s.var_matches, 1e-9)) AS match_z,
           CAST(s.matches AS DOUBLE) / s.positions AS match_rate,
           s.expected_matches / s.positions AS expected_match_rate,
           (s.expected_loss - s.average_loss) * s.positions / sqrt(greatest(s.var_loss_sum, 1e-9)) AS loss_z
    FROM judged s
),
ranked AS (
    SELECT t.*, normal_at_least(t.combined_z) AS p_value,
           percent_rank() OVER (ORDER BY t.combined_z) AS combined_z_percentile,
           count(*) OVER () AS accounts_compared
    FROM tested t
)
SELECT x.account, '30d' AS "window",
       -log10(greatest(x.p_value, 1e-300)) AS score,
       x.combined_z, x.p_value, x.combined_z_percentile, x.accounts_compared,
       x.good_positions, x.top_choices, x.top_choice_rate, x.platform_top_choice_rate, x.top_choice_z,
       x.hard_positions, x.hard_finds, x.hard_find_rate, x.platform_hard_find_rate, x.hard_z,
       x.best_moves, x.best_move_rate, x.mistakes, x.blunders, x.blunder_share, x.platform_blunder_share,
       x.expected_best_move_rate, x.best_given_blunders_z, x.curve_slope,
       x.positions, x.games, x.match_rate, x.expected_match_rate, x.match_z,
       x.average_loss, x.expected_loss, x.loss_z,
       x.think_ratio, tb.ratio AS platform_think_ratio,
       ${min_good} AS min__good_positions, ${max_p} AS max__p_value,
       e.refs, e.first_seen, e.last_seen
FROM ranked x
CROSS JOIN think_base tb
LEFT JOIN (
    SELECT a.player AS account,
           array_agg(concat(a.game, ':', CAST(a.seq AS VARCHAR)) ORDER BY a.second_gap DESC, a.game, a.seq) AS refs,
           min(coalesce(a.ts, arrow_cast(CAST(a.date AS DATE), 'Timestamp(Millisecond, Some("UTC"))'))) AS first_seen,
           max(coalesce(a.ts, arrow_cast(CAST(a.date AS DATE), 'Timestamp(Millisecond, Some("UTC"))'))) AS last_seen
    FROM move_analysis a
    WHERE a.matched AND NOT a.forced AND NOT a.auto AND (a.hard OR (a.near_best >= 2 AND a.loss <= 20))
      AND CAST(a.date AS DATE) >= ${window_end_date} - INTERVAL '30 days'
    GROUP BY a.player
) e ON e.account = x.account
WHERE x.p_value <= ${max_p}
