-- id: manipulation_attempts
-- title: Manipulation attempts (tampered client)
-- behaviour: tampered_client
-- catches: accounts whose client sent actions that no honest client can produce: moving the opponent's
--   pieces, men backwards, skipping a mandatory or majority capture, impossible paths, non-existent Ludo
--   tokens or overshoots, Belote cards not in hand or breaking follow-suit and trump rules, and
--   out-of-turn actions sent well after the turn changed.
-- why: the platform's rule is that any manipulation attempt is reported, then the account is blocked. A
--   normal client only offers legal actions, so these causes are evidence of a modified client; benign
--   look-alikes are excluded: double-submits within 1 s of a turn change (races), resends of the player's own
--   last accepted action, malformed messages (flaky networks), and attempts after the game was decided.
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
       CAST(f.tamper_attempts AS DOUBLE) / greatest(f.attempts, 1) AS tamper_rate,
       b.platform_tamper_rate, b.platform_tamper_share, b.accounts_compared,
       ${min_attempts} AS min__tamper_attempts,
       e.refs, e.first_seen, e.last_seen
FROM account_features f
-- How unusual: the platform's tamper attempts per attempt, and its share of accounts with any.
CROSS JOIN (
    SELECT CAST(sum(tamper_attempts) AS DOUBLE) / greatest(sum(attempts), 1) AS platform_tamper_rate,
           CAST(count(*) FILTER (WHERE tamper_attempts > 0) AS DOUBLE) / greatest(count(*), 1) AS platform_tamper_share,
           count(*) AS accounts_compared
    FROM account_features WHERE "window" = '30d' AND attempts > 0
) b
LEFT JOIN (
    -- The replay lists each game's tamper attempts per player (game_players.tamper_refs). They are
    -- joined as text (game ids have no spaces): aggregating the lists themselves made DataFusion
    -- account each value at the size of its whole source buffer, past the 1 GiB pool.
    SELECT account,
           string_to_array(string_agg(array_to_string(tamper_refs, ' '), ' ' ORDER BY tamper_first, game), ' ') AS refs,
           min(tamper_first) AS first_seen, max(tamper_last) AS last_seen
    FROM game_players
    WHERE tamper_attempts > 0 AND started_at >= ${window_end} - INTERVAL '30 days'
      AND date >= CAST(${window_end} - INTERVAL '30 days' AS DATE)
    GROUP BY account
) e ON e.account = f.account
WHERE f."window" = '30d' AND f.tamper_attempts >= ${min_attempts}
