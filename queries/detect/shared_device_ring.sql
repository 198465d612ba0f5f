-- id: shared_device_ring
-- title: Shared-device rings
-- behaviour: shared_device
-- catches: groups of accounts logged from the same device that play each other.
-- why: several accounts on one device playing together can feed each other wins and stakes or pass a
--   ban around; a household may share an ip, but a device shared by three or more accounts that meet at
--   the table is a ring until shown otherwise.
-- severity: medium
-- action: review
-- param min_ring = 3 : accounts on the device
-- param min_games = 2 : games between two accounts of the ring
-- The 30-day window of the features: the games started in it.
WITH recent AS (
    SELECT account, device FROM game_players
    WHERE started_at >= (SELECT max(window_end) FROM account_features) - INTERVAL '30 days'
),
devices AS (
    SELECT device, count(DISTINCT account) AS accounts
    FROM recent GROUP BY device
),
members AS (
    SELECT DISTINCT p.account, p.device, d.accounts
    FROM recent p JOIN devices d ON d.device = p.device
    WHERE d.accounts >= ${min_ring}
),
pairs AS (
    SELECT a, b, games FROM pair_features WHERE "window" = '30d' AND shared_devices > 0 AND games >= ${min_games}
)
SELECT m.account, '30d' AS "window", CAST(count(DISTINCT x.partner) AS DOUBLE) + max(m.accounts) AS score,
       m.device, max(m.accounts) AS accounts_on_device, count(DISTINCT x.partner) AS ring_partners,
       sum(x.games) AS games_with_ring,
       ${min_ring} AS min__accounts_on_device
FROM members m
JOIN (
    SELECT a AS account, b AS partner, games FROM pairs
    UNION ALL
    SELECT b AS account, a AS partner, games FROM pairs
) x ON x.account = m.account
-- A ring partner is on the same device (a pair that shared another device is not this ring).
JOIN members mp ON mp.account = x.partner AND mp.device = m.device
GROUP BY m.account, m.device
