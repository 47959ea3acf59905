-- slotClaimDeclared.sql is slotClaim.sql without the pause overrides, for
-- when job_state cannot be read (missing or damaged): no override, so the
-- jobs' declared enabled values decide.
{{template "slotClaim" args "declared" true "json" false}}
