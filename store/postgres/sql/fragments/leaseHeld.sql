-- leaseHeld is true for the lease row alias that someone other than the
-- contender owner holds at c.now: unexpired, and its owner's process not
-- gone. Arguments (see args): alias, owner (a parameter).
({{.alias}}.expires_at > c.now AND NOT ({{.alias}}.live_key IS NOT NULL AND {{.alias}}.owner <> {{.owner}} AND pg_try_advisory_xact_lock({{.alias}}.live_key)))
