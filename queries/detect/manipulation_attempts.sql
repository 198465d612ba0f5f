-- id: manipulation_attempts
-- title: Manipulation attempts (tampered client)
-- behaviour: tampered_client
-- catches: accounts whose client sent actions that no honest client can produce: moving the opponent's
--   pieces, men backwards, skipping a mandatory or majority capture, impossible paths, non-existent Ludo
--   tokens or overshoots, Belote cards not in hand or breaking follow-suit and trump rules, and
--   out-of-turn actions sent well after the turn changed.
-- why: the platform's rule is that any manipulation attempt is reported, then the account is blocked. A
--   normal client only offers legal actions, so these causes are evidence of a modified client; benign
--   look-alikes are excluded: double-submits within 1 s of a turn change (races), malformed messages
--   (flaky networks), and attempts after the game was decided.
-- severity: critical
-- action: block_recommended
-- param min_attempts = 1 : tamper attempts in 30 days before flagging
-- param block_attempts = 3 : tamper attempts (or 2 distinct causes) before recommending a block
SELECT f.account,
       f."window",
       CAST(f.tamper_attempts AS DOUBLE) + 2.0 * f.tamper_kinds AS score,
       CASE WHEN f.tamper_attempts >= ${block_attempts} OR f.tamper_kinds >= 2 THEN 'block_recommended' ELSE 'review' END AS action,
       CASE WHEN f.tamper_attempts >= ${block_attempts} OR f.tamper_kinds >= 2 THEN 'critical' ELSE 'high' END AS severity,
       f.tamper_attempts, f.tamper_kinds, f.tamper_games, f.attempts, f.races, f.malformed,
       ${min_attempts} AS min__tamper_attempts,
       e.refs, e.first_seen, e.last_seen
FROM account_features f
LEFT JOIN (
    SELECT player AS account,
           array_agg(concat(game, ':', CAST(seq AS VARCHAR)) ORDER BY ts) AS refs,
           min(ts) AS first_seen, max(ts) AS last_seen
    FROM moves
    WHERE NOT accepted
      AND (cause IN ('not_own_piece', 'wrong_direction', 'skipped_capture', 'not_majority', 'no_such_path',
                     'ambiguous_move', 'no_such_token', 'token_finished', 'wrong_distance', 'not_out_of_yard',
                     'pass_while_movable', 'did_not_follow_suit', 'did_not_trump', 'did_not_beat_trump',
                     'card_not_in_hand', 'invalid_bid')
           OR (cause = 'out_of_turn' AND since_turn_ms > 1000))
    GROUP BY player
) e ON e.account = f.account
WHERE f."window" = '30d' AND f.tamper_attempts >= ${min_attempts}
