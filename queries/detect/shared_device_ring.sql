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
    WHERE started_at >= ${window_end} - INTERVAL '30 days'
      -- A game's partition is its start date: older partitions are not even listed.
      AND date >= CAST(${window_end} - INTERVAL '30 days' AS DATE)
),
-- The devices with enough accounts, and those accounts (one read of the window).
devices AS (
    SELECT device, array_agg(DISTINCT account) AS ring, count(DISTINCT account) AS accounts
    FROM recent WHERE device IS NOT NULL AND account IS NOT NULL
    GROUP BY device
    HAVING count(DISTINCT account) >= ${min_ring}
),
members AS (
    SELECT unnest(ring) AS account, device, accounts FROM devices
),
-- Per game and ring device, the device's members seated in it (on whatever device they used that
-- game), where at least two of them met (a second read of the window, joined to the few members).
ring_games AS (
    SELECT r.game, m.device, max(m.accounts) AS accounts, array_agg(DISTINCT r.account) AS seated
    FROM recent r JOIN members m ON m.account = r.account
    GROUP BY r.game, m.device
    HAVING count(DISTINCT r.account) >= 2
),
seats AS (
    SELECT game, device, accounts, seated, unnest(seated) AS account FROM ring_games
),
met AS (
    SELECT game, device, accounts, account, unnest(array_remove(seated, account)) AS partner FROM seats
)
SELECT account, '30d' AS "window",
       CAST(count(DISTINCT partner) AS DOUBLE) + max(accounts) AS score,
       device, max(accounts) AS accounts_on_device, count(DISTINCT partner) AS ring_partners,
       count(DISTINCT game) AS games_with_ring,
       ${min_ring} AS min__accounts_on_device, ${min_games} AS min__games_with_ring
FROM met
GROUP BY account, device
HAVING count(DISTINCT game) >= ${min_games}
