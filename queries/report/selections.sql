-- Medieval selections of the period with the selecting side (the automatic picks are recomputed from the revealed seeds).
SELECT e.game, e.seq, e.raw, p.seat
FROM events e
JOIN games g ON g.game = e.game
JOIN game_players p ON p.game = e.game AND p.account = e.player
WHERE e.type = 'selection' AND g.mode = 'medieval' AND g.seed IS NOT NULL
  AND g.date BETWEEN DATE '${from}' AND DATE '${to}'
  AND e.date BETWEEN DATE '${events_from}' AND DATE '${events_to}'
ORDER BY e.game, e.seq, e.src_id, e.src_offset
