-- view: daily_volumes
-- doc: Games, events, stakes, rake and payouts per day (the UTC date games started) and game kind and mode.
SELECT date, kind, mode,
       count(*) AS games,
       sum(events) AS events,
       sum(pot) AS stakes,
       sum(coalesce(rake, 0)) AS rake,
       sum(CASE WHEN finished THEN pot - coalesce(rake, 0) ELSE 0 END) AS payouts,
       sum(CASE WHEN integrity_findings > 0 THEN 1 ELSE 0 END) AS games_with_integrity_findings
FROM games
GROUP BY date, kind, mode
