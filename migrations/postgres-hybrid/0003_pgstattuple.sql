-- pgstattuple, as in orders-pg's database: the monitoring's one query file for both layouts
-- (infra/monitoring/exporters/postgres-queries.yaml) reads the pending list of every GIN index of
-- the schema through pgstatginindex, which must exist to be called on none. This layout has no
-- GIN index, so the exporter gets no rows from it, and no error.
CREATE EXTENSION IF NOT EXISTS pgstattuple;
