-- pg_stat_statements exposes per-statement timings when it is in shared_preload_libraries, as for
-- orders-pg. (pgstattuple is not needed: this layout has no GIN pending list to read.)
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
