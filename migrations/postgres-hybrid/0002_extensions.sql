-- pg_stat_statements exposes per-statement timings when it is in shared_preload_libraries, as for
-- orders-pg. (pgstattuple comes with 0003, for the monitoring's query file.)
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
