#!/usr/bin/env bash
# Runs on the postgres-db droplet as root (do.sh up, after the first boot and on every `up`; safe
# to run again): the roles, the database and its privileges, the migrations and the grants; with
# HYBRID=1 on hybrid-db too, for orders-pg-hybrid's layout. One role per job (docs/security.md,
# "On droplets"):
#   orders_owner    Owns the tables and their indexes, in the schema `orders` (the one schema where
#                   anyone but the superuser may create); the migrations run as it, in a session of
#                   its own: it logs in from the postgres system user over the local socket only.
#   orders_loader   orders-bench on the load droplets. Seeding (a member of orders_owner: TRUNCATE,
#                   COPY, dropping and building the indexes, VACUUM; on the hybrid layout also TEMP
#                   on the database: its load splits a temporary staging table) and the figures a
#                   round reads (pg_stat_scan_tables for pgstatginindex, pg_checkpoint after a reload).
#   orders_service  the service. SELECT, INSERT, UPDATE on its tables (`orders`; the hybrid's
#                   `orders` and `order_items`), SELECT on its migrations' table; its /diagnostics
#                   reads settings (pg_read_all_settings) and the GIN pending list
#                   (pg_stat_scan_tables). Not a superuser, owns nothing, creates nothing.
#   orders_monitor  postgres_exporter, from this droplet's loopback. pg_monitor (statistics,
#                   settings, pgstatginindex), CONNECT on `orders` and USAGE on its schemas for the
#                   project's queries; no right on any table.
# The superuser's sessions run with search_path = pg_catalog, pg_temp and name the rest by schema,
# so nothing orders_loader creates can run as the superuser (CVE-2018-1058's pattern); what runs
# over the owner's tables runs in the owner's session. The passwords reach the server as SCRAM
# verifiers, in a session that neither tracks (pg_stat_statements) nor logs its statements.
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
# Privileged SQL never resolves a name through a schema another role may create in (CVE-2018-1058):
# every session of the superuser starts with this search_path and names the rest by schema.
psql_as_postgres() {
  runuser -u postgres -- env PGOPTIONS='-c search_path=pg_catalog,pg_temp' "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h /var/run/postgresql "$@"
}
# orders_owner's own session (peer authentication of the postgres system user, map orders_owner):
# what runs over the owner's tables runs with no more than the owner's rights, which a session of
# the superuser with SET ROLE would not (RESET ROLE gives the superuser back to any code it runs).
psql_as_owner() { runuser -u postgres -- "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h /var/run/postgresql -U orders_owner -d orders "$@"; }
# The SCRAM-SHA-256 verifier of the password on standard input, as PostgreSQL stores it (RFC 7677;
# the passwords are hex, so SASLprep leaves them as they are): the server never sees the password.
scram_verifier() {
  # shellcheck disable=SC2016 # Python's program
  /usr/bin/python3 -c 'import base64, hashlib, hmac, os, sys
password, salt, rounds = sys.stdin.buffer.read(), os.urandom(16), 4096
salted = hashlib.pbkdf2_hmac("sha256", password, salt, rounds)
stored = hashlib.sha256(hmac.new(salted, b"Client Key", "sha256").digest()).digest()
server = hmac.new(salted, b"Server Key", "sha256").digest()
b64 = lambda raw: base64.b64encode(raw).decode()
print("SCRAM-SHA-256$%d:%s$%s:%s" % (rounds, b64(salt), b64(stored), b64(server)))'
}
loader_verifier=$(printf '%s' "$PG_LOADER_PASSWORD" | scram_verifier)
service_verifier=$(printf '%s' "$PG_SERVICE_PASSWORD" | scram_verifier)
monitor_verifier=$(printf '%s' "$PG_MONITOR_PASSWORD" | scram_verifier)

# The passwords arrive as verifiers, in a session that neither tracks nor logs its statements:
# pg_stat_statements (which orders_monitor reads) and the server's logs get neither the password
# nor its verifier (with a verifier and one SCRAM exchange seen on the VPC, a client key can be
# worked out).
psql_as_postgres -d postgres <<SQL
SET client_min_messages = warning;
SET pg_stat_statements.track = none;
SET log_statement = none;
SET log_min_duration_statement = -1;
SET log_min_error_statement = panic;
SELECT 'CREATE ROLE orders_owner' WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'orders_owner')\gexec
SELECT 'CREATE ROLE orders_loader' WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'orders_loader')\gexec
SELECT 'CREATE ROLE orders_service' WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'orders_service')\gexec
SELECT 'CREATE ROLE orders_monitor' WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'orders_monitor')\gexec
ALTER ROLE orders_owner LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD NULL;
ALTER ROLE orders_loader LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '$loader_verifier';
ALTER ROLE orders_service LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '$service_verifier';
ALTER ROLE orders_monitor LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '$monitor_verifier';
GRANT orders_owner, pg_stat_scan_tables, pg_checkpoint TO orders_loader;
GRANT pg_read_all_settings, pg_stat_scan_tables TO orders_service;
GRANT pg_monitor TO orders_monitor;
SELECT 'CREATE DATABASE orders' WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_database WHERE datname = 'orders')\gexec
REVOKE ALL ON DATABASE orders FROM PUBLIC;
GRANT CONNECT ON DATABASE orders TO orders_owner, orders_loader, orders_service, orders_monitor;
$loader_temp
SQL

# The owner's login: from the postgres system user over the local socket only, ahead of the
# cluster's own `local` lines (the first matching line decides).
hba=$(psql_as_postgres -d postgres -At -c 'SHOW hba_file')
ident=$(psql_as_postgres -d postgres -At -c 'SHOW ident_file')
owner_hba='local orders orders_owner peer map=orders_owner'
owner_ident='orders_owner postgres orders_owner'
if ! grep -qxF "$owner_hba" "$hba" || ! grep -qxF "$owner_ident" "$ident"; then
  grep -qxF "$owner_hba" "$hba" || sed -i "1i $owner_hba" "$hba"
  grep -qxF "$owner_ident" "$ident" || printf '%s\n' "$owner_ident" >>"$ident"
  psql_as_postgres -d postgres -At -c 'SELECT pg_catalog.pg_reload_conf()' >/dev/null
  reloaded=0
  for _ in $(seq 25); do
    if psql_as_owner -At -c 'SELECT 1' >/dev/null 2>&1; then reloaded=1 && break; fi
    sleep 0.2
  done
  [ "$reloaded" = 1 ] || { echo "setup: orders_owner cannot log in 5 s after the reload of $hba" >&2; exit 1; }
fi

# The tables live in the schema `orders`, the only one where the owner (and so orders_loader) may
# create; `public` holds the extensions and the plan log's functions and nobody but the superuser
# creates there. The roles find the tables through their search_path; orders_monitor's has no
# schema another role may create in.
psql_as_postgres -d orders <<SQL
SET client_min_messages = warning;
-- Extensions need a superuser (pgstattuple is not trusted); the migration that names them then
-- finds them there.
CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public;
CREATE EXTENSION IF NOT EXISTS pgstattuple SCHEMA public;
-- What an earlier setup.sh left there: ALTER ROLE with a password, not a verifier, in its text.
SELECT count(public.pg_stat_statements_reset(s.userid, s.dbid, s.queryid)) AS forgotten
  FROM public.pg_stat_statements(true) s WHERE s.query ~* 'PASSWORD\s+''(?!SCRAM-SHA-256\\$)' \gset
REVOKE ALL ON SCHEMA public FROM PUBLIC, orders_owner, orders_service;
GRANT USAGE ON SCHEMA public TO orders_owner, orders_service, orders_monitor;
CREATE SCHEMA IF NOT EXISTS orders;
REVOKE ALL ON SCHEMA orders FROM PUBLIC;
GRANT USAGE, CREATE ON SCHEMA orders TO orders_owner;
GRANT USAGE ON SCHEMA orders TO orders_service, orders_monitor;
ALTER ROLE orders_owner IN DATABASE orders SET search_path = orders, public;
ALTER ROLE orders_loader IN DATABASE orders SET search_path = orders, public;
ALTER ROLE orders_service IN DATABASE orders SET search_path = orders, public;
ALTER ROLE orders_monitor IN DATABASE orders SET search_path = pg_catalog, public;
-- A deployment made before the schema: its tables move (their indexes with them).
SELECT pg_catalog.format('ALTER TABLE public.%I SET SCHEMA orders', c.relname) FROM pg_catalog.pg_class c
  WHERE c.relnamespace = 'public'::pg_catalog.regnamespace AND c.relkind = 'r'
    AND c.relname = ANY ('{$tables, $table}'::pg_catalog.name[])
    AND pg_catalog.to_regclass(pg_catalog.format('orders.%I', c.relname)) IS NULL\gexec
-- ... and the service's old right to create, with the event trigger that refused what it created.
DROP EVENT TRIGGER IF EXISTS orders_refuse_service_ddl;
DROP SCHEMA IF EXISTS orders_guard CASCADE;
SQL

# The migrations, in the owner's own session, then the service's grants on what they made.
{
  printf 'SET client_min_messages = warning;\nBEGIN;\nSELECT pg_advisory_xact_lock(%s) \\gset\n' "$lock"
  printf 'CREATE TABLE IF NOT EXISTS %s (\n    version    text PRIMARY KEY,\n    applied_at timestamptz NOT NULL DEFAULT now());\n' "$table"
  for file in "/opt/orders/migrations/$migrations"/*.sql; do
    version=$(basename "$file" .sql)
    printf "SELECT NOT EXISTS (SELECT FROM %s WHERE version = '%s') AS pending \\\\gset\n" "$table" "$version"
    printf '\\if :pending\n\\i %s\n' "$file"
    printf "INSERT INTO %s (version) VALUES ('%s');\n\\\\echo applied migration %s\n\\\\endif\n" "$table" "$version" "$version"
  done
  printf 'COMMIT;\n'
  printf 'GRANT SELECT, INSERT, UPDATE ON %s TO orders_service;\nGRANT SELECT ON %s TO orders_service;\n' "$tables" "$table"
} | psql_as_owner

psql_as_postgres -d orders -At <<'SQL'
SELECT pg_catalog.format('role %s: login %s, superuser %s, member of %s', r.rolname, r.rolcanlogin, r.rolsuper,
    coalesce((SELECT pg_catalog.string_agg(g.rolname, ', ' ORDER BY g.rolname) FROM pg_catalog.pg_auth_members m
              JOIN pg_catalog.pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid), 'nothing'))
FROM pg_catalog.pg_roles r WHERE r.rolname LIKE 'orders\_%' ORDER BY r.rolname;
SQL
psql_as_owner -At -c "SELECT format('orders: owner %s, applied migrations: %s', pg_get_userbyid(relowner),
    (SELECT string_agg(version, ', ' ORDER BY version) FROM $table)) FROM pg_class WHERE oid = 'orders'::regclass"
