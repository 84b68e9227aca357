#!/usr/bin/env bash
# Runs on the postgres-db droplet as root (do.sh up, after setup.sh; safe to run again):
# the plan log that orders-bench reads to say which plan ran each sequential scan of a round.
# Locally its role is a superuser and turns auto_explain on for the database and reads the server
# log itself; here its role orders_loader is none, so:
#   - the server logs the plans: auto_explain is preloaded and writes JSON into the server's JSON
#     log (the first boot's conf.d/orders.conf); the threshold, auto_explain.log_min_duration, is
#     MS milliseconds (PG_PLAN_LOG_MS in infra/engines/postgres/droplets.sh; -1: no plan log), in
#     conf.d/orders-plan-log.conf, applied by a reload when it changed;
#   - two functions read the current JSON log for orders_loader, and nothing else (no path
#     argument), as the role orders_log_reader: NOLOGIN, nobody is a member, may run
#     pg_current_logfile, pg_stat_file and pg_read_binary_file (without pg_read_server_files:
#     inside the data and log directories only) and owns the functions (SECURITY DEFINER, a fixed
#     search_path); EXECUTE for orders_loader alone:
#       orders_bench_log_position(OUT file text, OUT size bigint)  (one row)
#           the current JSON log (relative to the data directory) and its size in bytes; NULLs when
#           the server writes no JSON log
#       orders_bench_read_log("offset" bigint, length bigint) RETURNS bytea
#           up to `length` bytes of that file from byte `offset` (empty past its end); an error for
#           a negative argument or when there is no JSON log
# usage: setup-plan-log.sh MS
set -euo pipefail
ms=${1:-}
[[ $ms =~ ^(-1|[0-9]+)$ ]] || { echo "usage: setup-plan-log.sh MS (whole milliseconds, or -1: no plan log)" >&2; exit 2; }
# shellcheck source=/dev/null
. /etc/orders/pg-cluster.env
cd /
# Privileged SQL resolves no name through a schema another role may create in (CVE-2018-1058).
psql_as_postgres() {
  runuser -u postgres -- env PGOPTIONS='-c search_path=pg_catalog,pg_temp' "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h /var/run/postgresql "$@"
}

conf=$PG_CONF_DIR/conf.d/orders-plan-log.conf
threshold=-1
if [ "$ms" != -1 ]; then threshold="'${ms}ms'"; fi
wanted=$(printf '# Written by infra/engines/postgres/remote/setup-plan-log.sh (PG_PLAN_LOG_MS).\nauto_explain.log_min_duration = %s\n' "$threshold")
if [ "$(cat "$conf" 2>/dev/null)" != "$wanted" ]; then
  printf '%s\n' "$wanted" >"$conf"
  chown postgres:postgres "$conf"
  psql_as_postgres -d postgres -At -c 'SELECT pg_catalog.pg_reload_conf()' >/dev/null
  # The reload is asynchronous: wait until new sessions see the threshold.
  applied=0
  for _ in $(seq 20); do
    if [ "$(psql_as_postgres -d postgres -At -c "SELECT setting FROM pg_catalog.pg_settings WHERE name = 'auto_explain.log_min_duration'")" = "$ms" ]; then
      applied=1
      break
    fi
    sleep 0.2
  done
  if [ "$applied" != 1 ]; then
    echo "setup-plan-log: PostgreSQL did not take auto_explain.log_min_duration = $ms within 4 s of the reload" >&2
    exit 1
  fi
fi

psql_as_postgres -d orders <<'SQL'
SET client_min_messages = warning;
SELECT 'CREATE ROLE orders_log_reader' WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'orders_log_reader')\gexec
ALTER ROLE orders_log_reader NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
GRANT EXECUTE ON FUNCTION pg_catalog.pg_current_logfile(text), pg_catalog.pg_stat_file(text, boolean),
  pg_catalog.pg_read_binary_file(text, bigint, bigint, boolean) TO orders_log_reader;

CREATE OR REPLACE FUNCTION public.orders_bench_log_position(OUT file text, OUT size bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT f, (pg_stat_file(f, true)).size FROM (SELECT pg_current_logfile('jsonlog') AS f) AS current
$$;

CREATE OR REPLACE FUNCTION public.orders_bench_read_log("offset" bigint, length bigint) RETURNS bytea
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  log text := pg_current_logfile('jsonlog');
BEGIN
  IF log IS NULL THEN
    RAISE EXCEPTION 'the server writes no JSON log'
      USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'log_destination with jsonlog, logging_collector = on';
  END IF;
  IF "offset" IS NULL OR length IS NULL OR "offset" < 0 OR length < 0 THEN
    RAISE EXCEPTION 'offset and length must be 0 or more (got %, %)', "offset", length
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN coalesce(pg_read_binary_file(log, "offset", length, true), ''::bytea);
END
$$;

ALTER FUNCTION public.orders_bench_log_position() OWNER TO orders_log_reader;
ALTER FUNCTION public.orders_bench_read_log(bigint, bigint) OWNER TO orders_log_reader;
REVOKE ALL ON FUNCTION public.orders_bench_log_position(), public.orders_bench_read_log(bigint, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.orders_bench_log_position(), public.orders_bench_read_log(bigint, bigint) TO orders_loader;
SQL

psql_as_postgres -d orders -At <<'SQL'
SELECT pg_catalog.format('plan log: auto_explain %s, log_min_duration %s, format %s; JSON log %s',
    CASE WHEN pg_catalog.current_setting('shared_preload_libraries') ~ 'auto_explain' THEN 'preloaded'
         ELSE 'NOT preloaded (a droplet made before the plan log: do.sh down, then up)' END,
    pg_catalog.current_setting('auto_explain.log_min_duration', true), pg_catalog.current_setting('auto_explain.log_format', true),
    coalesce(pg_catalog.pg_current_logfile('jsonlog'), 'none'));
SQL
