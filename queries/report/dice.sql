-- Every die rolled in the period, with the variant and the roller's seat (for the randomness tests);
-- a seq logged twice comes twice, the first copy of the sources first (the tally counts it once).
SELECT e.game, e.seq, e.n, e.value, e.player, g.variant, p.seat
FROM events e
JOIN games g ON g.game = e.game
JOIN game_players p ON p.game = e.game AND p.account = e.player
WHERE e.type = 'roll' AND g.date BETWEEN DATE '${from}' AND DATE '${to}'
  AND e.date BETWEEN DATE '${events_from}' AND DATE '${events_to}'
ORDER BY e.game, e.seq, e.src_id, e.src_offset
