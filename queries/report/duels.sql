-- Medieval captures with duels in the period (the duels are in each move's raw line).
SELECT e.game, e.seq, e.raw
FROM events e JOIN games g ON g.game = e.game
WHERE e.type = 'move' AND g.mode = 'medieval' AND e.status = 'accepted' AND e.detail LIKE '%"duels"%'
  AND g.date BETWEEN DATE '${from}' AND DATE '${to}'
  AND e.date BETWEEN DATE '${events_from}' AND DATE '${events_to}'
ORDER BY e.game, e.seq, e.src_id, e.src_offset
