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
    SELECT game, account, device, started_at FROM game_players
    WHERE started_at >= ${window_end} - INTERVAL '30 days'
      -- A game's partition is its start date: older partitions are not even listed.
      AND date >= CAST(${window_end} - INTERVAL '30 days' AS DATE)
      AND account IS NOT NULL
),
-- How unusual: every device of the window ranked by its number of accounts (the share of the
-- window's other devices with fewer accounts); the ring devices are those with min_ring accounts.
ranked AS (
    SELECT device, accounts, percent_rank() OVER (ORDER BY accounts) AS device_percentile,
           count(*) OVER () AS platform_devices
    FROM (
        SELECT device, count(DISTINCT account) AS accounts
        FROM recent WHERE device IS NOT NULL
        GROUP BY device
    )
),
members AS (
    SELECT DISTINCT r.account, d.device, d.accounts, d.device_percentile, d.platform_devices
    FROM recent r JOIN ranked d ON d.device = r.device
    WHERE d.accounts >= ${min_ring}
),
-- Every game of the window of each ring device's members, on whatever device they used (on_device:
-- on the ring device itself), once per ring device they belong to and once per game (an account
-- seated twice in a game counts once, as a meeting needs two accounts). Everything below is
-- computed from these rows in one pipeline: each use of a WITH table is a read of the window of
-- its own (three here, against nine when the meetings, the rings and the games from the device
-- were tables of their own).
seats AS (
    SELECT r.game, r.account, m.device, max(CASE WHEN r.device = m.device THEN 1 ELSE 0 END) AS on_device,
           min(r.started_at) AS started_at, max(m.accounts) AS accounts,
           max(m.device_percentile) AS device_percentile, max(m.platform_devices) AS platform_devices
    FROM recent r JOIN members m ON m.account = r.account
    GROUP BY r.game, r.account, m.device
),
-- Per game and ring device, the device's members seated in it; a game where at least two of them
-- met is a ring game. Only meetings with a seat on the device itself make its other accounts
-- suspect (two occasional guests of a shared phone meeting on their own devices say nothing of its
-- owner).
tables AS (
    SELECT *, count(*) OVER (PARTITION BY game, device) AS seated_n,
           array_agg(account) OVER (PARTITION BY game, device) AS seated,
           max(on_device) OVER (PARTITION BY game, device) AS seat_on_device,
           row_number() OVER (PARTITION BY game, device ORDER BY account) AS seat_rank
    FROM seats
),
-- The ring games of each device, counted once per game (on its first seat).
rings AS (
    SELECT *, sum(CASE WHEN seated_n >= 2 AND seat_rank = 1 THEN 1 ELSE 0 END) OVER (PARTITION BY device) AS ring_games,
           sum(CASE WHEN seated_n >= 2 AND seat_rank = 1 THEN seat_on_device ELSE 0 END) OVER (PARTITION BY device) AS ring_games_on_device
    FROM tables
),
-- Per member and ring device: the members it met and in how many games, and its games from the device.
met AS (
    SELECT account, device, max(accounts) AS accounts, max(device_percentile) AS device_percentile,
           max(platform_devices) AS platform_devices, max(ring_games) AS ring_games,
           max(ring_games_on_device) AS ring_games_on_device,
           count(*) FILTER (WHERE seated_n >= 2) AS games_with_ring,
           cardinality(array_remove(array_distinct(flatten(array_agg(seated) FILTER (WHERE seated_n >= 2))), account)) AS partners,
           -- The evidence, most telling first: the games where it met the ring, by time.
           array_agg(concat(game, ':0') ORDER BY started_at, game) FILTER (WHERE seated_n >= 2) AS ring_refs,
           min(started_at) FILTER (WHERE seated_n >= 2) AS ring_first,
           max(started_at) FILTER (WHERE seated_n >= 2) AS ring_last,
           count(*) FILTER (WHERE on_device = 1) AS device_games,
           -- Then its games from the device, by time.
           array_agg(concat(game, ':0') ORDER BY started_at, game) FILTER (WHERE on_device = 1) AS from_device_refs,
           min(started_at) FILTER (WHERE on_device = 1) AS device_first,
           max(started_at) FILTER (WHERE on_device = 1) AS device_last
    FROM rings
    GROUP BY account, device
),
judged AS (
    SELECT *, CAST(CASE WHEN games_with_ring > 0 THEN partners ELSE 0 END AS BIGINT) AS ring_partners,
           CASE WHEN games_with_ring > 0 THEN ring_refs END AS met_refs,
           CASE WHEN device_games > 0 THEN from_device_refs END AS device_refs
    FROM met
    WHERE ring_games >= 1
)
SELECT account, '30d' AS "window",
       CAST(ring_partners AS DOUBLE) + accounts AS score,
       device, accounts AS accounts_on_device, ring_partners, games_with_ring,
       device_games AS games_from_device,
       ring_games, ring_games_on_device, device_percentile, platform_devices,
       ${min_ring} AS min__accounts_on_device,
       -- The thresholds the account met: its own meetings, or the ring's and its games from the device.
       CASE WHEN games_with_ring >= ${min_games} THEN ${min_games} END AS min__games_with_ring,
       CASE WHEN games_with_ring >= ${min_games} THEN NULL ELSE ${min_games} END AS min__ring_games_on_device,
       CASE WHEN games_with_ring >= ${min_games} THEN NULL ELSE ${min_device_games} END AS min__games_from_device,
       -- The evidence a reviewer opens, each game at its start (seq 0: the seats with their devices
       -- and ips): the games where it met another account of the ring, on whatever device, then
       -- its other games from the ring's device.
       CASE WHEN met_refs IS NULL THEN device_refs
            WHEN device_refs IS NULL THEN met_refs
            ELSE array_union(met_refs, device_refs) END AS refs,
       least(ring_first, device_first) AS first_seen, greatest(ring_last, device_last) AS last_seen
FROM judged
WHERE games_with_ring >= ${min_games}
   OR (ring_games_on_device >= ${min_games} AND device_games >= ${min_device_games})
