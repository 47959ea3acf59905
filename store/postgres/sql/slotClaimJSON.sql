-- slotClaimJSON.sql is slotClaim.sql answering one row, its rows as a JSON
-- array: what claim_committed (migration 009) runs, prepared by this name
-- on the connection, before it commits and reads the clock.
{{template "slotClaim" args "declared" false "json" true}}
