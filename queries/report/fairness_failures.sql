-- Every fairness finding of the period: each failed check with the expected and the logged value.
SELECT game, seq, code, kind, mode, account, expected, logged, message
FROM findings
WHERE date BETWEEN DATE '${from}' AND DATE '${to}' AND category = 'fairness'
ORDER BY game, seq, code, account, expected, logged, message, kind, mode
