-- id: shared_device_ring
-- title: Shared-device rings
-- behaviour: shared_device
-- catches: groups of three or more accounts logged from the same device, two of which have sat at the
--   same table, in any game (two or four players), even rarely: every account of that device.
-- why: several accounts on one device playing together can feed each other wins and stakes or pass a
--   ban around. A household shares an ip, not a device hash; a device used by three or more accounts
--   that meet at the table is a ring until shown otherwise. Every account of the device that met
--   another at least min_games times in the window is flagged (whatever device each used in those
--   games), and, once two of its accounts met at least min_games times with one of them seated on
--   the device itself, so is every other account that played at least min_device_games games from
--   it (a subtle ring's members rarely meet two by two, and some never do in a month: an
--   independently written simulator's rings of four left 0-4 such members a seed). The evidence
--   says how often each met the ring (0 for those that never did) and how many games the ring's
--   members played together (ring_games; ring_games_on_device with a seat on the device).
-- severity: medium
-- action: review
-- param min_ring = 3 : accounts on the device
-- param min_games = 1 : games in which an account met another of the device (or, for the others, in
--   which two met, one of them on the device)
-- param min_device_games = 2 : games from the device, for a member that never met another
-- The 30-day window of the features: the games started in it.
WITH recent AS (
    SELECT game, account, device FROM game_players
    WHERE started_at >= ${window_end} - INTERVAL '30 days'
      -- A game's partition is its start date: older partitions are not even listed.
      AND date >= CAST(${window_end} - INTERVAL '30 days' AS DATE)
),
-- The same with each game's start, for the evidence (only where it is listed: each use of a WITH
-- table is a read of its own).
recent_at AS (
    SELECT game, account, device, started_at FROM game_players
    WHERE started_at >= ${window_end} - INTERVAL '30 days'
      AND date >= CAST(${window_end} - INTERVAL '30 days' AS DATE)
),
-- How unusual: every device of the window ranked by its number of accounts (the share of the
-- window's other devices with fewer accounts).
ranked AS (
    SELECT device, percent_rank() OVER (ORDER BY accounts) AS device_percentile,
           count(*) OVER () AS platform_devices
    FROM (
        SELECT device, count(DISTINCT account) AS accounts
        FROM recent WHERE device IS NOT NULL AND account IS NOT NULL
        GROUP BY device
    )
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
    SELECT r.game, m.device, max(m.accounts) AS accounts, array_agg(DISTINCT r.account) AS seated,
           count(*) FILTER (WHERE r.device = m.device) AS on_device, max(r.started_at) AS started_at
    FROM recent_at r JOIN members m ON m.account = r.account
    GROUP BY r.game, m.device
    HAVING count(DISTINCT r.account) >= 2
),
-- The devices whose accounts met: rings. Only meetings with a seat on the device itself make its
-- other accounts suspect (two occasional guests of a shared phone meeting on their own devices say
-- nothing of its owner).
rings AS (
    SELECT device, count(DISTINCT game) AS ring_games,
           count(DISTINCT game) FILTER (WHERE on_device >= 1) AS ring_games_on_device
    FROM ring_games GROUP BY device
),
seats AS (
    SELECT game, device, accounts, seated, started_at, unnest(seated) AS account FROM ring_games
),
met AS (
    SELECT game, device, accounts, account, started_at, unnest(array_remove(seated, account)) AS partner FROM seats
),
met_by AS (
    SELECT account, device, count(DISTINCT partner) AS ring_partners, count(DISTINCT game) AS games_with_ring,
           -- The evidence, most telling first: the games where it met the ring, by time (one row per partner).
           array_distinct(array_agg(concat(game, ':0') ORDER BY started_at, game)) AS ring_refs,
           min(started_at) AS ring_first, max(started_at) AS ring_last
    FROM met GROUP BY account, device
),
-- Each member's games played from the ring's device.
from_device AS (
    SELECT r.account, r.device, count(DISTINCT r.game) AS device_games,
           -- Then its games from the device, by time (an account sits once in a game).
           array_agg(concat(r.game, ':0') ORDER BY r.started_at, r.game) AS device_refs,
           min(r.started_at) AS device_first, max(r.started_at) AS device_last
    FROM recent_at r JOIN rings g ON g.device = r.device
    GROUP BY r.account, r.device
)
SELECT m.account, '30d' AS "window",
       CAST(coalesce(b.ring_partners, 0) AS DOUBLE) + m.accounts AS score,
       m.device, m.accounts AS accounts_on_device,
       coalesce(b.ring_partners, 0) AS ring_partners,
       coalesce(b.games_with_ring, 0) AS games_with_ring,
       coalesce(d.device_games, 0) AS games_from_device,
       g.ring_games, g.ring_games_on_device, k.device_percentile, k.platform_devices,
       ${min_ring} AS min__accounts_on_device,
       -- The thresholds the account met: its own meetings, or the ring's and its games from the device.
       CASE WHEN coalesce(b.games_with_ring, 0) >= ${min_games} THEN ${min_games} END AS min__games_with_ring,
       CASE WHEN coalesce(b.games_with_ring, 0) >= ${min_games} THEN NULL ELSE ${min_games} END AS min__ring_games_on_device,
       CASE WHEN coalesce(b.games_with_ring, 0) >= ${min_games} THEN NULL ELSE ${min_device_games} END AS min__games_from_device,
       -- The evidence a reviewer opens, each game at its start (seq 0: the seats with their devices
       -- and ips): the games where it met another account of the ring, on whatever device, then
       -- its other games from the ring's device.
       CASE WHEN b.ring_refs IS NULL THEN d.device_refs
            WHEN d.device_refs IS NULL THEN b.ring_refs
            ELSE array_union(b.ring_refs, d.device_refs) END AS refs,
       least(b.ring_first, d.device_first) AS first_seen, greatest(b.ring_last, d.device_last) AS last_seen
FROM members m
JOIN rings g ON g.device = m.device
JOIN ranked k ON k.device = m.device
LEFT JOIN met_by b ON b.account = m.account AND b.device = m.device
LEFT JOIN from_device d ON d.account = m.account AND d.device = m.device
WHERE coalesce(b.games_with_ring, 0) >= ${min_games}
   OR (g.ring_games_on_device >= ${min_games} AND coalesce(d.device_games, 0) >= ${min_device_games})
