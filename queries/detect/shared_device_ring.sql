-- id: shared_device_ring
-- title: Shared-device rings
-- behaviour: shared_device
-- catches: groups of three or more accounts logged from the same device that have sat at the same
--   table, in any game (two or four players), even rarely.
-- why: several accounts on one device playing together can feed each other wins and stakes or pass a
--   ban around. A household shares an ip, not a device hash; a device used by three or more accounts
--   that meet at the table is a ring until shown otherwise. A member is flagged once it has met
--   another account of the device at least min_games times in the window.
-- severity: medium
-- action: review
-- param min_ring = 3 : accounts on the device
-- param min_games = 1 : games with another account of the device
-- The 30-day window of the features: the games started in it.
WITH recent AS (
    SELECT game, account, device FROM game_players
    WHERE started_at >= (SELECT max(window_end) FROM account_features) - INTERVAL '30 days'
),
devices AS (
    SELECT device, count(DISTINCT account) AS accounts
    FROM recent GROUP BY device
    HAVING count(DISTINCT account) >= ${min_ring}
),
members AS (
    SELECT DISTINCT r.account, r.device, d.accounts
    FROM recent r JOIN devices d ON d.device = r.device
),
-- Games where a member sat with another account of the same device (on any device in that game).
met AS (
    SELECT m.account, m.device, r1.game, r2.account AS partner
    FROM members m
    JOIN recent r1 ON r1.account = m.account
    JOIN recent r2 ON r2.game = r1.game AND r2.account <> m.account
    JOIN members mp ON mp.account = r2.account AND mp.device = m.device
)
SELECT m.account, '30d' AS "window",
       CAST(count(DISTINCT t.partner) AS DOUBLE) + max(m.accounts) AS score,
       m.device, max(m.accounts) AS accounts_on_device, count(DISTINCT t.partner) AS ring_partners,
       count(DISTINCT t.game) AS games_with_ring,
       ${min_ring} AS min__accounts_on_device, ${min_games} AS min__games_with_ring
FROM members m
JOIN met t ON t.account = m.account AND t.device = m.device
GROUP BY m.account, m.device
HAVING count(DISTINCT t.game) >= ${min_games}
