-- pgstattuple gives pgstatginindex() (the GIN pending list) to /diagnostics;
-- pg_stat_statements exposes per-statement timings when it is in shared_preload_libraries.
CREATE EXTENSION IF NOT EXISTS pgstattuple;
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
