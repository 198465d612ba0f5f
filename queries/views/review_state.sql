-- view: review_state
-- doc: The current review state of every flag that staff acted on (the last action of the audit log), with who and why.
SELECT flag_id, account, new_state AS state, decision, who, reason, ts AS updated_at
FROM (
    SELECT *, row_number() OVER (PARTITION BY flag_id ORDER BY seq DESC) AS rn
    FROM audit_log
)
WHERE rn = 1
