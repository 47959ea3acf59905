-- claimCommitted.sql runs a claim through claim_committed (migration 009):
-- $1 the name under which slotClaimJSON.sql (or slotClaimDeclaredJSON.sql)
-- is prepared on the connection, $2 to $16 its arguments. It answers the
-- claim's rows as JSON and the database clock read after the claim
-- committed.
CALL {{schema}}.claim_committed($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
