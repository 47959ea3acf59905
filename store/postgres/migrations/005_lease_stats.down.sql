-- Back to version 4: the leases table analysed at autovacuum's defaults.
ALTER TABLE {{schema}}.leases RESET (autovacuum_analyze_threshold, autovacuum_analyze_scale_factor);
