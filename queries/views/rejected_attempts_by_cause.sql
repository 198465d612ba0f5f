-- view: rejected_attempts_by_cause
-- doc: Rejected attempts per day, game kind and cause (our engines' classification; a null cause means the attempt was legal).
SELECT date, kind, cause, server_reason,
       count(*) AS attempts,
       count(DISTINCT player) AS accounts,
       count(DISTINCT game) AS games
FROM moves
WHERE NOT accepted
GROUP BY date, kind, cause, server_reason
