-- Every server integrity finding of the period.
SELECT game, seq, code, severity, kind, mode, account, expected, logged, message
FROM findings
WHERE date BETWEEN DATE '${from}' AND DATE '${to}' AND category = 'integrity'
ORDER BY game, seq, code, severity, account, expected, logged, message, kind, mode
