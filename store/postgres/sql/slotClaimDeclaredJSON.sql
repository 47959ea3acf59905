-- slotClaimDeclaredJSON.sql is slotClaimDeclared.sql answering one row, as
-- slotClaimJSON.sql does.
{{template "slotClaim" args "declared" true "json" true}}
