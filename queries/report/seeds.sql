-- Revealed seeds of the period's Belote matches and Medieval games, with their deals and duels to recompute.
SELECT g.game, g.kind, g.mode, g.seed, g.commitment
FROM games g
WHERE g.date BETWEEN DATE '${from}' AND DATE '${to}' AND g.seed IS NOT NULL
ORDER BY g.game
