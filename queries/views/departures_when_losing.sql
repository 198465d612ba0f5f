-- view: departures_when_losing
-- doc: Departures and timeouts per day and game kind, split by whether the player was losing at that moment.
SELECT date, kind, event,
       count(*) AS departures,
       sum(CASE WHEN losing THEN 1 ELSE 0 END) AS when_losing,
       sum(CASE WHEN decisive THEN 1 ELSE 0 END) AS decisive,
       CAST(sum(CASE WHEN losing THEN 1 ELSE 0 END) AS DOUBLE) / count(*) AS losing_share
FROM departures
GROUP BY date, kind, event
