-- Belote deals of the period (deal numbers per match), for the card-by-position test.
SELECT e.game, e.deal
FROM events e JOIN games g ON g.game = e.game
WHERE e.type = 'deal' AND g.date BETWEEN DATE '${from}' AND DATE '${to}'
  AND e.date BETWEEN DATE '${events_from}' AND DATE '${events_to}' AND g.seed IS NOT NULL
ORDER BY e.game, e.deal, e.src_id, e.src_offset
