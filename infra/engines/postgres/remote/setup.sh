#!/usr/bin/env bash
# Runs on the postgres-db droplet as root (do.sh up, after the first boot and on every `up`; safe
# to run again): the roles, the database and its privileges, the migrations and the grants; with
# HYBRID=1 on hybrid-db too, for orders-pg-hybrid's layout. One role per job (docs/security.md,
# "On droplets"):
#   orders_owner    NOLOGIN. Owns the tables and their indexes; the migrations run as it.
#   orders_loader   orders-bench on the load droplets. Seeding (a member of orders_owner: TRUNCATE,
#                   COPY, dropping and building the indexes, VACUUM; on the hybrid layout also TEMP
#                   on the database: its load splits a temporary staging table) and the figures a
#                   round reads (pg_stat_scan_tables for pgstatginindex, pg_checkpoint after a reload).
#   orders_service  the service. SELECT, INSERT, UPDATE on its tables (`orders`; the hybrid's
#                   `orders` and `order_items`), SELECT on its migrations' table; its /diagnostics
#                   reads settings (pg_read_all_settings) and the GIN pending list
#                   (pg_stat_scan_tables). Not a superuser, owns nothing.
#   orders_monitor  postgres_exporter, from this droplet's loopback. pg_monitor (statistics,
#                   settings, pgstatginindex), CONNECT on `orders` and USAGE on its schema for the
#                   project's queries; no right on any table.
# orders-pg runs its migration runner at every start, whose first statement, CREATE TABLE IF NOT
# EXISTS schema_migrations, needs CREATE on the schema even when the table exists. So the service's
# role has CREATE on `public`, and an event trigger refuses every object it would really create
# (a table, a function, a view, ...): its transaction fails and rolls back.
# The migrations are the binary's (migrations/postgres, or migrations/postgres-hybrid for the
# hybrid layout, copied as migrations.tar), applied as orders_owner the way the service's runner
# applies them (services/orders-pg/src/migrate.rs, services/orders-pg-hybrid/src/migrate.rs: each
# file once, in name order, recorded in the layout's table, in one transaction under the layout's
# advisory lock), so the service finds nothing left to apply; infra/ci/test-do-dry-run.sh checks
# that both agree on the list and the lock. The passwords arrive in
# /opt/orders/incoming/postgres-db.env (do.sh copies it just before), are kept in
# /etc/orders/postgres-db.env (0600) and reach psql on its standard input, never on a command line.
# usage: setup.sh jsonb|hybrid   (orders-pg's layout, or orders-pg-hybrid's)
set -euo pipefail
# migrate.rs's MIGRATION_LOCK (0x6f72_6465_7273) and orders-pg-hybrid's (0x6879_6272_6964).
MIGRATION_LOCK=122537101324915
HYBRID_MIGRATION_LOCK=114870551996772
case ${1:-} in
  jsonb) migrations=postgres table=schema_migrations lock=$MIGRATION_LOCK tables=orders loader_temp='' ;;
  hybrid)
    migrations=postgres-hybrid table=schema_migrations_hybrid lock=$HYBRID_MIGRATION_LOCK tables='orders, order_items'
    loader_temp='GRANT TEMPORARY ON DATABASE orders TO orders_loader;'
    ;;
  *) echo "usage: setup.sh jsonb|hybrid" >&2; exit 2 ;;
esac
incoming=/opt/orders/incoming
install -m 0600 "$incoming/postgres-db.env" /etc/orders/postgres-db.env
rm -rf /opt/orders/migrations
install -d -m 0755 /opt/orders
tar -C /opt/orders --no-same-owner -xf "$incoming/migrations.tar"
rm -rf "$incoming"
# shellcheck source=/dev/null
. /etc/orders/pg-cluster.env
# shellcheck source=/dev/null
. /etc/orders/postgres-db.env
cd /
psql_as_postgres() { runuser -u postgres -- "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h /var/run/postgresql "$@"; }

psql_as_postgres -d postgres <<SQL
SET client_min_messages = warning;
SELECT 'CREATE ROLE orders_owner' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'orders_owner')\gexec
SELECT 'CREATE ROLE orders_loader' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'orders_loader')\gexec
SELECT 'CREATE ROLE orders_service' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'orders_service')\gexec
SELECT 'CREATE ROLE orders_monitor' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'orders_monitor')\gexec
ALTER ROLE orders_owner NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
ALTER ROLE orders_loader LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '$PG_LOADER_PASSWORD';
ALTER ROLE orders_service LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '$PG_SERVICE_PASSWORD';
ALTER ROLE orders_monitor LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '$PG_MONITOR_PASSWORD';
GRANT orders_owner, pg_stat_scan_tables, pg_checkpoint TO orders_loader;
GRANT pg_read_all_settings, pg_stat_scan_tables TO orders_service;
GRANT pg_monitor TO orders_monitor;
SELECT 'CREATE DATABASE orders' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'orders')\gexec
REVOKE ALL ON DATABASE orders FROM PUBLIC;
GRANT CONNECT ON DATABASE orders TO orders_loader, orders_service, orders_monitor;
$loader_temp
SQL

psql_as_postgres -d orders <<'SQL'
SET client_min_messages = warning;
-- Extensions need a superuser (pgstattuple is not trusted); the migration that names them then
-- finds them there.
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
CREATE EXTENSION IF NOT EXISTS pgstattuple;
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE, CREATE ON SCHEMA public TO orders_owner, orders_service;
GRANT USAGE ON SCHEMA public TO orders_monitor;
-- The guard: whatever orders_service creates is refused (see the top of this file).
CREATE SCHEMA IF NOT EXISTS orders_guard;
REVOKE ALL ON SCHEMA orders_guard FROM PUBLIC;
CREATE OR REPLACE FUNCTION orders_guard.refuse_service_ddl() RETURNS event_trigger
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
  IF 'orders_service' IN (current_user, session_user) AND EXISTS (SELECT FROM pg_event_trigger_ddl_commands()) THEN
    RAISE EXCEPTION 'orders_service reads and writes orders; it does not change the schema (%)', tg_tag
      USING HINT = 'the migrations run as orders_owner (infra/engines/postgres/remote/setup.sh)';
  END IF;
END
$$;
SELECT 'CREATE EVENT TRIGGER orders_refuse_service_ddl ON ddl_command_end EXECUTE FUNCTION orders_guard.refuse_service_ddl()'
  WHERE NOT EXISTS (SELECT FROM pg_event_trigger WHERE evtname = 'orders_refuse_service_ddl')\gexec
SQL

# The migrations, as orders_owner, then the service's grants on what they made.
{
  printf 'SET client_min_messages = warning;\nBEGIN;\nSET LOCAL ROLE orders_owner;\nSELECT pg_advisory_xact_lock(%s) \\gset\n' "$lock"
  printf 'CREATE TABLE IF NOT EXISTS %s (\n    version    text PRIMARY KEY,\n    applied_at timestamptz NOT NULL DEFAULT now());\n' "$table"
  for file in "/opt/orders/migrations/$migrations"/*.sql; do
    version=$(basename "$file" .sql)
    printf "SELECT NOT EXISTS (SELECT FROM %s WHERE version = '%s') AS pending \\\\gset\n" "$table" "$version"
    printf '\\if :pending\n\\i %s\n' "$file"
    printf "INSERT INTO %s (version) VALUES ('%s');\n\\\\echo applied migration %s\n\\\\endif\n" "$table" "$version" "$version"
  done
  printf 'COMMIT;\n'
  printf 'GRANT SELECT, INSERT, UPDATE ON %s TO orders_service;\nGRANT SELECT ON %s TO orders_service;\n' "$tables" "$table"
} | psql_as_postgres -d orders

psql_as_postgres -d orders -At <<'SQL'
SELECT format('role %s: login %s, superuser %s, member of %s', r.rolname, r.rolcanlogin, r.rolsuper,
    coalesce((SELECT string_agg(g.rolname, ', ' ORDER BY g.rolname) FROM pg_auth_members m
              JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid), 'nothing'))
FROM pg_roles r WHERE r.rolname LIKE 'orders\_%' ORDER BY r.rolname;
SQL
psql_as_postgres -d orders -At -c "SELECT format('orders: owner %s, applied migrations: %s', pg_get_userbyid(relowner),
    (SELECT string_agg(version, ', ' ORDER BY version) FROM $table)) FROM pg_class WHERE oid = 'orders'::regclass"
