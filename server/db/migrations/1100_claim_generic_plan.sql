-- The engine's claim (claim_operations, migration 0920) is planned once per connection rather
-- than at every call. Its plan is fixed by its own settings (the queue walked in seq order, no
-- sort, no bitmap scan), whatever its values; yet PostgreSQL made a custom plan at each call
-- (pg_stat_statements: about 0.3 ms of planning a claim, 78 us an operation at 32 clients), since
-- the average cost of its earlier custom plans trails the generic plan's as the queue grows.
ALTER FUNCTION claim_operations(text, double precision, integer) SET plan_cache_mode = force_generic_plan;
