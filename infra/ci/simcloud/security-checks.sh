# shellcheck shell=bash
# The least-privilege checks of infra/ci/test-do-simcloud.sh (docs/security.md, "On droplets"),
# sourced by it and run at its steps with its helpers (expect, refuse, on, operator, state, ...).
# Each refusal is asserted by the server's own message, so a check cannot pass because a
# connection or a login failed instead. The test runs with HYBRID=1: what is checked of the
# PostgreSQL pair is checked of the hybrid's (hybrid-db, hybrid-app) too.
# shellcheck disable=SC2154 # W, DO, TAG, STATE_DIR, OPNS and the helpers come from the test

# What a command printed (stdout and stderr) must contain, and its exit status must be non-zero.
refused_with() { # DESCRIPTION TEXT COMMAND...
  local what=$1 text=$2 out
  shift 2
  if out=$("$@" 2>&1); then fail "$what: it was allowed"; fi
  if ! grep -qF -- "$text" <<<"$out"; then fail "$what: expected \"$text\", got: $(tail -n 3 <<<"$out")"; fi
  passed=$((passed + 1))
  echo "  ok    $what"
}

check_wide_operator_refused() {
  local range
  for range in 0.0.0.0/0 198.18.255.0/24; do
    refused_with "OPERATOR_IP=$range is refused, saying how to allow it" "ALLOW_WIDE_OPERATOR=1" \
      env OPERATOR_IP=$range nsenter --net="/run/netns/$OPNS" env PATH="$W/bin:$PATH" SIMCLOUD_WORLD="$W" bash "$DO" up --yes
  done
  expect "nothing was created for a wide range" test "$(state 'len(s["droplets"]) + len(s["vpcs"]) + len(s["firewalls"])')" = 0
}

# Grafana (3000): no firewall rule opens it and it listens on the monitor's loopback only.
# Prometheus (9090): open to the load droplets alone (their remote writes), listening on the
# monitor's VPC address alone. The operator's address is admitted to SSH alone.
check_monitor_closed() {
  expect "no firewall rule opens Grafana's port" \
    state "not any(r.startswith('protocol:tcp,ports:3000,') for f in s['firewalls'] for r in f['inbound'].split()) or exit(1)"
  expect "Prometheus's port is open to the load droplets alone" \
    state "[r for f in s['firewalls'] for r in f['inbound'].split() if r.startswith('protocol:tcp,ports:9090,')] == ['protocol:tcp,ports:9090,tag:$TAG-load'] or exit(1)"
  expect "the operator's address is let in to SSH (22) only" \
    state "all(r.startswith('protocol:tcp,ports:22,') for f in s['firewalls'] for r in f['inbound'].split() if 'address:' in r) or exit(1)"
  local port
  for port in 3000 9090; do
    refuse "the operator does not reach the monitor's :$port" operator timeout 2 bash -c "</dev/tcp/$(public_ip monitor)/$port"
  done
  expect "Grafana answers on the monitor's loopback" on monitor "curl -fsS http://127.0.0.1:3000/"
  refuse "Grafana does not answer on the monitor's VPC address" on monitor "curl -fsS http://$(private_ip monitor):3000/"
  expect "Prometheus answers on the monitor's VPC address" on monitor "curl -fsS http://$(private_ip monitor):9090/-/ready"
  refuse "Prometheus does not answer on the monitor's loopback or public address" \
    on monitor "curl -fsS http://127.0.0.1:9090/-/ready || curl -fsS http://$(public_ip monitor):9090/-/ready"
}

# A PromQL query to the monitor's Prometheus, its JSON answer.
prom_query() { on monitor "curl -fsS --get --data-urlencode $(printf '%q' "query=$1") http://$(private_ip monitor):9090/api/v1/query"; }
# Waits up to 40 seconds (scrapes every 5 s, file_sd and remote writes) for a query whose answer
# passes the jq test.
prom_until() { # QUERY JQ-TEST
  local _
  for _ in $(seq 40); do
    prom_query "$1" 2>/dev/null | jq -e "$2" >/dev/null 2>&1 && return 0
    sleep 1
  done
  prom_query "$1" >&2 || true
  return 1
}

# The exporters listen on their droplet's VPC address, answer the monitor (the firewall pairs of
# the test show nobody else gets through), and the monitor's Prometheus scrapes them.
check_exporters() {
  local pg mongo hybrid
  pg=$(private_ip postgres-db)
  mongo=$(private_ip mongo-db)
  hybrid=$(private_ip hybrid-db)
  expect "postgres_exporter answers the monitor: pg_up 1 and the project's queries (the GIN pending list) without an error" on monitor \
    "curl -fsS http://$pg:9187/metrics | awk '/^pg_up 1\$/ { u = 1 } /^orders_pg_gin_pending_tuples/ { g = 1 } /^pg_exporter_last_scrape_error 0\$/ { e = 1 } END { exit !(u && g && e) }'"
  expect "the hybrid's postgres_exporter answers the monitor: pg_up 1, the project's queries (WAL) without an error, and no GIN pending list (it has no GIN index)" on monitor \
    "curl -fsS http://$hybrid:9187/metrics | awk '/^pg_up 1\$/ { u = 1 } /^orders_pg_wal_records/ { w = 1 } /^pg_exporter_last_scrape_error 0\$/ { e = 1 } /^orders_pg_gin_/ { g = 1 } END { exit !(u && w && e && !g) }'"
  expect "the MongoDB exporter answers the monitor: mongodb_up 1 and Percona's names (opcounters)" on monitor \
    "curl -fsS http://$mongo:9216/metrics | awk '/^mongodb_up 1\$/ { u = 1 } /^mongodb_ss_opcounters\{/ { o = 1 } END { exit !(u && o) }'"
  refuse "postgres_exporter listens on the VPC address alone (not the loopback)" on postgres-db "curl -fsS http://127.0.0.1:9187/metrics"
  refuse "the hybrid's postgres_exporter too" on hybrid-db "curl -fsS http://127.0.0.1:9187/metrics"
  refuse "the MongoDB exporter listens on the VPC address alone (not the loopback)" on mongo-db "curl -fsS http://127.0.0.1:9216/metrics"
  refuse "the operator does not reach postgres_exporter" operator timeout 2 bash -c "</dev/tcp/$(public_ip postgres-db)/9187"
  refuse "the operator does not reach the hybrid's postgres_exporter" operator timeout 2 bash -c "</dev/tcp/$(public_ip hybrid-db)/9187"
  refuse "the operator does not reach the MongoDB exporter" operator timeout 2 bash -c "</dev/tcp/$(public_ip mongo-db)/9216"
  expect "the monitor's Prometheus scrapes the three exporters and the three services (up == 1)" prom_until 'up{job=~"postgres|mongodb|orders"}' \
    '[.data.result[] | select(.value[1] == "1") | .metric.job] | sort == ["mongodb", "orders", "orders", "orders", "postgres", "postgres"]'
  expect "the hybrid's service and database are labelled as its own (service=\"orders-pg-hybrid\", backend=\"pgh\")" \
    prom_until 'up{service="orders-pg-hybrid"}' '[.data.result[] | "\(.metric.job) \(.metric.backend // .metric.engine)"] | sort == ["orders pgh", "postgres postgres"]'
  expect "the engines' series reach Prometheus (GIN pending list, seq scans, WAL records, MongoDB opcounters)" prom_until \
    'count by (__name__) ({__name__=~"orders_pg_gin_pending_tuples|orders_pg_table_seq_scan|orders_pg_wal_records|mongodb_ss_opcounters"})' \
    '[.data.result[].metric.__name__] | sort == ["mongodb_ss_opcounters", "orders_pg_gin_pending_tuples", "orders_pg_table_seq_scan", "orders_pg_wal_records"]'
}

# After a round on two load droplets: the leader's k6 (the round's unit) and the follower's (its
# agent's unit) both pushed, each tagged with its droplet's name, latencies as native histograms.
check_remote_write() {
  expect "both load droplets' k6 pushed to Prometheus, apart (each tagged with its droplet's name)" \
    prom_until 'count by (instance) (k6_http_reqs_total)' "[.data.result[].metric.instance] | sort == [\"$TAG-load-1\", \"$TAG-load-2\"]"
  expect "latencies arrived as native histograms (--enable-feature=native-histograms)" \
    prom_until 'histogram_count(sum(k6_http_req_duration_seconds))' '.data.result[0].value[1] | tonumber > 0'
}

# The deployment's passwords (the operator's secrets.env, and the MongoDB administrator's, made on
# the mongo-db droplet), one per line.
secret_values() {
  sed -n 's/^[A-Z_]*PASSWORD=//p' "$STATE_DIR/secrets.env"
  on mongo-db 'sed -n "s/^MONGO_ADMIN_PASSWORD=//p" /etc/orders/mongo-admin.env'
}

check_secrets() {
  local values=$W/secret-values role
  secret_values >"$values"
  expect "eleven passwords: three PostgreSQL roles on each of two servers, three MongoDB users, Grafana, MongoDB's administrator" \
    test "$(grep -c . "$values")" = 11
  expect "the user-data given to doctl holds none of them" bash -c "! cat '$STATE_DIR'/user-data/*.yaml | grep -qF -f '$values'"
  for role in postgres-db mongo-db hybrid-db postgres-app mongo-app hybrid-app load-1 load-2 monitor; do
    # shellcheck disable=SC2016 # expanded by the droplet's shell
    expect "$role: its user-data (what the metadata service serves) holds no password" on "$role" \
      'test -s /var/lib/cloud/instance/user-data.txt && ! grep -qF -f /dev/stdin /var/lib/cloud/instance/user-data.txt' <"$values"
    # shellcheck disable=SC2016 # expanded by the droplet's shell
    expect "$role: the passwords it holds are in root-only 0600 files" on "$role" \
      'found=0; for f in $(grep -rlF -f /dev/stdin /etc /usr/local/sbin /var/lib/cloud /opt/orders 2>/dev/null); do
         found=1; [ "$(stat -c %a:%U "$f")" = 600:root ] || { echo "$f"; exit 1; }; done; [ "$found" = 1 ]' <"$values"
    expect "$role: no password on a command line" on "$role" \
      '! cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" "\n" | grep -qF -f /dev/stdin' <"$values"
  done
}

# The servers' own records of the statements they ran: pg_stat_statements (which orders_monitor
# reads, pg_monitor) and the server's logs (the stderr and JSON logs of logging_collector, which
# orders_loader reads through the plan log's functions) hold no password and no SCRAM verifier
# (with a verifier and one exchange seen on the VPC, which has no TLS, a client key can be worked
# out). Every `up` sets the roles' passwords (infra/engines/postgres/remote/setup.sh).
check_no_password_in_postgres() {
  local values=$W/secret-values db
  for db in postgres-db hybrid-db; do
    # shellcheck disable=SC2016 # expanded by the droplet's shell
    expect "$db: pg_stat_statements holds statements, none with a password or a SCRAM verifier" on "$db" \
      'p=$(cat); cd / && q=$(runuser -u postgres -- /usr/lib/postgresql/*/bin/psql -X -At -h /var/run/postgresql -d orders \
         -c "SELECT query FROM pg_stat_statements") && [ -n "$q" ] && ! grep -qF -f <(printf "%s\n" "$p") <<<"$q" &&
       ! grep -qF "SCRAM-SHA-256\$" <<<"$q"' <"$values"
    # shellcheck disable=SC2016 # expanded by the droplet's shell
    expect "$db: the server's logs (stderr and JSON) exist and hold no password or SCRAM verifier" on "$db" \
      'p=$(cat); cd / && sql() { runuser -u postgres -- /usr/lib/postgresql/*/bin/psql -X -At -h /var/run/postgresql -d orders -c "$1"; } &&
       d=$(sql "SHOW data_directory")/$(sql "SHOW log_directory") &&
       ls "$d"/*.json >/dev/null && ! grep -rqF -f <(printf "%s\n" "$p") "$d" /var/log/postgresql &&
       ! grep -rqF "SCRAM-SHA-256\$" "$d" /var/log/postgresql' <"$values"
  done
}

# CVE-2018-1058's pattern, as a compromised load droplet would try it: orders_loader plants, where
# it may create (its schema; `public` before issue 45), functions that PostgreSQL would pick
# over pg_catalog's for the setup scripts' own calls (format and string_agg with closer argument
# types) and a row-security policy on the migrations' table whose function leaves `SET ROLE`
# (RESET ROLE). Each records current_user and session_user. plant_as_loader before an `up`,
# check_planted_never_ran_as_postgres after it, then remove_planted.
planted_table() { if [ "$1" = hybrid-db ]; then echo schema_migrations_hybrid; else echo schema_migrations; fi; }
plant_as_loader() {
  local PG_DB
  for PG_DB in postgres-db hybrid-db; do
    expect "$PG_DB: orders_loader plants its functions and a policy on $(planted_table "$PG_DB") (in $(loader_sql "SELECT current_schema()"))" loader_sql "
CREATE TABLE planted_calls (what text, run_as name, session_as name);
GRANT INSERT ON planted_calls TO PUBLIC;
CREATE FUNCTION planted_record(what text) RETURNS void LANGUAGE sql SET search_path FROM CURRENT
  AS 'INSERT INTO planted_calls VALUES (what, current_user, session_user)';
CREATE FUNCTION format(text, name, boolean, boolean, text) RETURNS text LANGUAGE sql SET search_path FROM CURRENT
  AS \$\$ SELECT planted_record('format'); SELECT pg_catalog.format(\$1, \$2, \$3, \$4, \$5) \$\$;
CREATE FUNCTION format(text, name, text) RETURNS text LANGUAGE sql SET search_path FROM CURRENT
  AS \$\$ SELECT planted_record('format'); SELECT pg_catalog.format(\$1, \$2, \$3) \$\$;
CREATE FUNCTION format(text, text, text, text, text) RETURNS text LANGUAGE sql SET search_path FROM CURRENT
  AS \$\$ SELECT planted_record('format'); SELECT pg_catalog.format(\$1, \$2, \$3, \$4, \$5) \$\$;
CREATE FUNCTION planted_agg_step(text, name, text) RETURNS text LANGUAGE sql SET search_path FROM CURRENT
  AS \$\$ SELECT planted_record('string_agg'); SELECT CASE WHEN \$1 IS NULL THEN \$2::text ELSE \$1 || \$3 || \$2 END \$\$;
CREATE AGGREGATE string_agg(name, text) (SFUNC = planted_agg_step, STYPE = text);
CREATE FUNCTION planted_policy() RETURNS boolean LANGUAGE plpgsql SET search_path FROM CURRENT AS \$\$
BEGIN RESET ROLE; PERFORM planted_record('policy'); RETURN true; END \$\$;
ALTER TABLE $(planted_table "$PG_DB") ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY planted ON $(planted_table "$PG_DB") USING (planted_policy());"
  done
}
check_planted_never_ran_as_postgres() {
  local PG_DB calls
  for PG_DB in postgres-db hybrid-db; do
    calls=$(loader_sql "SELECT coalesce(string_agg(DISTINCT what || ' as ' || run_as || '/' || session_as, ', '), 'none') FROM planted_calls")
    expect "$PG_DB: up reached the planted policy (calls: $calls)" grep -q 'policy as ' <<<"$calls"
    expect "$PG_DB: nothing orders_loader planted ran as postgres during up" \
      test "$(loader_sql "SELECT count(*) FROM planted_calls WHERE 'postgres' IN (run_as, session_as)")" = 0
  done
}
remove_planted() {
  local PG_DB
  for PG_DB in postgres-db hybrid-db; do
    expect "$PG_DB: orders_loader removes what it planted" loader_sql "
DROP POLICY planted ON $(planted_table "$PG_DB");
ALTER TABLE $(planted_table "$PG_DB") NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY;
DROP AGGREGATE string_agg(name, text);
DROP FUNCTION planted_agg_step(text, name, text), planted_policy(), format(text, name, boolean, boolean, text),
  format(text, name, text), format(text, text, text, text, text), planted_record(text);
DROP TABLE planted_calls;"
  done
}

# psql on a PostgreSQL droplet (PG_DB: postgres-db unless set) as ROLE over TCP (to HOST, default
# the loopback) with its password (read on the droplet from the root-only file; it reaches psql in
# its environment); the SQL on standard input.
pg_as() { # ROLE PASSWORD-VARIABLE [HOST]
  on "${PG_DB:-postgres-db}" "cd / && PGPASSWORD=\$(sed -n 's/^$2=//p' /etc/orders/postgres-db.env) \
    /usr/lib/postgresql/*/bin/psql -X -At -v ON_ERROR_STOP=1 -h ${3:-127.0.0.1} -U $1 -d orders -f -"
}
service_sql() { pg_as orders_service PG_SERVICE_PASSWORD <<<"$1"; }
loader_sql() { pg_as orders_loader PG_LOADER_PASSWORD <<<"$1"; }
monitor_sql() { pg_as orders_monitor PG_MONITOR_PASSWORD <<<"$1"; }

# The roles of one PostgreSQL droplet (DB): postgres-db, orders-pg's on postgres-app, or hybrid-db,
# orders-pg-hybrid's on hybrid-app (its descriptions say so): the same roles with the same
# refusals, each on its layout's own tables and migrations.
check_postgres_roles() { # DB
  local PG_DB=$1 app=postgres-app service=orders-pg at='' diagnostics own='GIN pending list'
  diagnostics='(.gin_index.pending_pages | type == "number")'
  if [ "$PG_DB" = hybrid-db ]; then
    app=hybrid-app service=orders-pg-hybrid at='hybrid-db: ' own='both tables'
    diagnostics='.layout == "hybrid" and (.items_table | type == "object")'
    expect "${at}its own migrations were applied as orders_owner by up (schema_migrations_hybrid)" \
      grep -qx 'orders: owner orders_owner, applied migrations: 0001_orders, 0002_extensions, 0003_pgstattuple' "$W/up.out"
  else
    expect "the migrations were applied as orders_owner by up" contains "$W/up.out" "applied migration 0003_idempotency_key"
  fi
  expect "${at}orders_service: logs in, is no superuser, owns nothing" test "$(service_sql "SELECT rolsuper, (SELECT count(*) FROM pg_class
    WHERE relowner = r.oid) FROM pg_roles r WHERE rolname = current_user")" = "f|0"
  expect "${at}orders_loader: logs in, is no superuser" test "$(loader_sql "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")" = f
  refused_with "${at}orders_service cannot COPY ... TO PROGRAM (a shell on the database droplet)" \
    "permission denied to COPY to or from an external program" service_sql "COPY orders TO PROGRAM 'id'"
  refused_with "${at}orders_loader cannot COPY ... TO PROGRAM either" \
    "permission denied to COPY to or from an external program" loader_sql "COPY orders TO PROGRAM 'id'"
  refused_with "${at}orders_service cannot DROP TABLE orders" "must be owner of table orders" service_sql "DROP TABLE orders"
  refused_with "${at}orders_service cannot TRUNCATE or DELETE" "permission denied for table orders" \
    service_sql "DELETE FROM orders"
  if [ "$PG_DB" = hybrid-db ]; then
    refused_with "${at}orders_service cannot DELETE from order_items either" "permission denied for table order_items" \
      service_sql "DELETE FROM order_items"
  fi
  expect "${at}the tables are in the schema orders, which the service's and the seeding role search" \
    test "$(service_sql "SELECT current_schema(), to_regclass('orders.orders') IS NOT NULL")/$(loader_sql "SELECT current_schema()")" = "orders|t/orders"
  refused_with "${at}orders_service cannot create a table (no CREATE on any schema)" "permission denied for schema orders" \
    service_sql "CREATE TABLE stolen (id int)"
  refused_with "${at}orders_service cannot create a function" "permission denied for schema public" \
    service_sql "CREATE FUNCTION public.f() RETURNS int LANGUAGE sql AS 'SELECT 1'"
  refused_with "${at}orders_loader cannot create in public (the extensions' schema, which every role searches)" \
    "permission denied for schema public" loader_sql "CREATE FUNCTION public.f() RETURNS int LANGUAGE sql AS 'SELECT 1'"
  expect "${at}orders_owner has no password (it logs in from the droplet's postgres user alone)" test "$(on "$PG_DB" \
    "cd / && runuser -u postgres -- /usr/lib/postgresql/*/bin/psql -X -At -h /var/run/postgresql -d orders \
       -c \"SELECT rolcanlogin AND rolpassword IS NULL FROM pg_authid WHERE rolname = 'orders_owner'\"")" = t
  if [ "$PG_DB" = postgres-db ]; then
    refused_with "orders_service cannot change the GIN index (hence do.sh toggle runs it as the owner)" \
      "must be owner of index orders_items" service_sql "ALTER INDEX orders_items SET (fastupdate = off)"
  fi
  refused_with "${at}orders_service cannot read the roles' password hashes" "permission denied for table pg_authid" \
    service_sql "SELECT rolpassword FROM pg_authid"
  expect "$service applied no migration itself (its role could not)" \
    on "$app" "journalctl -u $service | grep -q 'listening on' && ! journalctl -u $service | grep -q 'applied migrations'"
  expect "$service's /diagnostics is complete with its role (settings, $own)" on "$app" \
    "curl -fsS http://127.0.0.1:8080/diagnostics | jq -e '.error == null and $diagnostics
      and (.settings.shared_preload_libraries | test(\"pg_stat_statements\")) and (.product_query.generic_plan.nodes | length > 0)'"
}

# mongosh on mongo-db as USER against DATABASE, one command (JSON), over TLS (mongod requires it,
# on the loopback too); the password is read on the droplet and reaches mongosh in a root-only
# file, removed afterwards.
mongo_as() { # USER PASSWORD-VARIABLE DATABASE COMMAND
  on mongo-db "umask 077; pw=\$(sed -n 's/^$2=//p' /etc/orders/mongo-db.env /etc/orders/mongo-admin.env)
    printf 'connect(\"mongodb://$1:%s@127.0.0.1:27017/$3?authSource=admin&tls=true&tlsCAFile=/etc/orders/tls/ca.crt\").runCommand(%s)\n' \"\$pw\" '$4' >/root/check.js
    mongosh --quiet --nodb /root/check.js; rc=\$?; rm -f /root/check.js; exit \$rc"
}

check_mongo_users() {
  expect "another database holds data (written by the administrator)" \
    mongo_as orders_admin MONGO_ADMIN_PASSWORD other '{"insert": "secrets", "documents": [{"k": 1}]}'
  refused_with "the service's user cannot drop the orders collection" "not authorized on orders" \
    mongo_as orders_service MONGO_SERVICE_PASSWORD orders '{"drop": "orders"}'
  refused_with "the service's user cannot delete orders" "not authorized on orders" \
    mongo_as orders_service MONGO_SERVICE_PASSWORD orders '{"delete": "orders", "deletes": [{"q": {}, "limit": 0}]}'
  refused_with "the service's user cannot read another database" "not authorized on other" \
    mongo_as orders_service MONGO_SERVICE_PASSWORD other '{"find": "secrets"}'
  refused_with "the service's user cannot read the users" "not authorized on admin" \
    mongo_as orders_service MONGO_SERVICE_PASSWORD admin '{"find": "system.users"}'
  refused_with "the seeding user cannot read another database" "not authorized on other" \
    mongo_as orders_loader MONGO_LOADER_PASSWORD other '{"find": "secrets"}'
  refused_with "the seeding user cannot shut the server down" "not authorized on admin" \
    mongo_as orders_loader MONGO_LOADER_PASSWORD admin '{"shutdown": 1}'
  expect "orders-mongo's /diagnostics is complete with its user (serverStatus, getCmdLineOpts, \$collStats)" on mongo-app \
    "curl -fsS http://127.0.0.1:8080/diagnostics | jq -e '([.. | objects | .error? // empty | strings | select(test(\"not authorized|Unauthorized\"))] | length == 0)
      and (.opcounters.insert | type == \"number\") and (.collection.count | type == \"number\") and (.settings.journal | type == \"object\")'"
}

# do.sh tunnel, in a session of its own: Grafana and Prometheus answer on the operator's own
# loopback, through SSH (Grafana from the monitor's loopback, Prometheus from its VPC address).
check_tunnel() {
  setsid nsenter --net="/run/netns/$OPNS" env PATH="$W/bin:$PATH" SIMCLOUD_WORLD="$W" \
    bash "$DO" tunnel >"$W/tunnel.out" 2>&1 &
  local session=$!
  for _ in $(seq 40); do
    operator timeout 1 bash -c '</dev/tcp/127.0.0.1/9090' 2>/dev/null && break
    sleep 0.5
  done
  expect "tunnel prints the local URLs" bash -c "grep -q 'Grafana: *http://127.0.0.1:3000' '$W/tunnel.out' && grep -q 'Prometheus: http://127.0.0.1:9090' '$W/tunnel.out'"
  expect "the tunnel reaches Grafana (127.0.0.1:3000 here)" \
    bash -c "nsenter --net=/run/netns/$OPNS curl -fsS http://127.0.0.1:3000/ | grep -qx 'grafana (simulated)'"
  expect "the tunnel reaches Prometheus (127.0.0.1:9090 here)" \
    bash -c "nsenter --net=/run/netns/$OPNS curl -fsS http://127.0.0.1:9090/-/ready | grep -q 'Prometheus.* Ready'"
  kill -TERM -- "-$session" 2>/dev/null || true
  wait "$session" 2>/dev/null || true
  # The ssh ends a moment after do.sh.
  for _ in $(seq 20); do
    operator timeout 1 bash -c '</dev/tcp/127.0.0.1/3000' 2>/dev/null || break
    sleep 0.25
  done
  refuse "closed with the tunnel" operator timeout 2 bash -c '</dev/tcp/127.0.0.1/3000'
}

# The exporters' own database roles read statistics and nothing else: no data, no write.
check_exporter_roles() {
  local PG_DB at
  for PG_DB in postgres-db hybrid-db; do
    at=''
    if [ "$PG_DB" = hybrid-db ]; then at='hybrid-db: '; fi
    expect "${at}orders_monitor (postgres_exporter): no superuser, a member of pg_monitor" \
      test "$(monitor_sql "SELECT rolsuper, pg_has_role('pg_monitor', 'member') FROM pg_roles WHERE rolname = current_user")" = "f|t"
    refused_with "${at}orders_monitor cannot read the orders" "permission denied for table orders" monitor_sql "SELECT count(*) FROM orders.orders"
    refused_with "${at}orders_monitor cannot write an order" "permission denied for table orders" \
      monitor_sql "INSERT INTO orders.orders (id) VALUES (1)"
    refused_with "${at}orders_monitor cannot create a table" "permission denied for schema public" monitor_sql "CREATE TABLE public.t (i int)"
    refused_with "${at}orders_monitor cannot create a table beside the orders" "permission denied for schema orders" \
      monitor_sql "CREATE TABLE orders.t (i int)"
    refused_with "${at}orders_monitor cannot COPY ... TO PROGRAM" "permission denied to COPY to or from an external program" \
      monitor_sql "COPY (SELECT 1) TO PROGRAM 'id'"
    refused_with "${at}orders_monitor logs in over the loopback only, not from the VPC (pg_hba)" "no pg_hba.conf entry" \
      pg_as orders_monitor PG_MONITOR_PASSWORD "$(private_ip "$PG_DB")" <<<"SELECT 1"
  done
  expect "orders_monitor (the MongoDB exporter) reads the server's statistics" \
    mongo_as orders_monitor MONGO_MONITOR_PASSWORD admin '{"serverStatus": 1}'
  refused_with "orders_monitor cannot write an order" "not authorized on orders" \
    mongo_as orders_monitor MONGO_MONITOR_PASSWORD orders '{"insert": "orders", "documents": [{"_id": 1}]}'
  refused_with "orders_monitor cannot drop the collection" "not authorized on orders" \
    mongo_as orders_monitor MONGO_MONITOR_PASSWORD orders '{"drop": "orders"}'
  refused_with "orders_monitor cannot read the orders" "not authorized on orders" \
    mongo_as orders_monitor MONGO_MONITOR_PASSWORD orders '{"find": "orders"}'
}

# The plan log on droplets (infra/engines/postgres/remote/setup-plan-log.sh): auto_explain's threshold is set
# server-wide, orders_loader reads a slow statement's plan through orders_bench_log_position and
# orders_bench_read_log, and has no way to read another file. Wants the seeded orders.
check_plan_log() {
  local position log=$W/plan-log.json
  expect "auto_explain is set server-wide (PG_PLAN_LOG_MS=0), so the runner needs no ALTER DATABASE: 0 ms, JSON" \
    test "$(loader_sql "SHOW auto_explain.log_min_duration; SHOW auto_explain.log_format" | tr '\n' ' ')" = "0 json "
  expect "orders_loader sees it as the server's own (what orders-bench takes for the round's threshold)" \
    test "$(loader_sql "SELECT setting, source FROM pg_settings WHERE name = 'auto_explain.log_min_duration'")" = "0|configuration file"
  position=$(loader_sql "SELECT file, size FROM orders_bench_log_position()")
  expect "orders_loader: orders_bench_log_position() names the current JSON log and its size ($position)" \
    grep -qE '^log/[^|]*\.json\|[1-9][0-9]*$' <<<"$position"
  # A statement slower than the threshold, then what the log gained since the position.
  loader_sql "\\o /dev/null
SELECT size AS before FROM orders_bench_log_position() \\gset
SELECT pg_sleep(0.1), count(*) FROM orders WHERE doc->>'note' IS NULL;
SELECT pg_sleep(1);
\\o
SELECT convert_from(orders_bench_read_log(:before, 4194304), 'UTF8');" >"$log"
  # shellcheck disable=SC2016 # jq's program
  expect "orders_loader: orders_bench_read_log() returns auto_explain's plan of its slow statement (a Seq Scan of orders)" \
    jq -R -n -e '[inputs | fromjson? | select(.dbname == "orders" and .user == "orders_loader" and (.message | startswith("duration:")))
      | .message | sub("^duration: [0-9.]+ ms +plan:\\s*"; "") | fromjson | .. | objects
      | select(."Node Type" == "Seq Scan") | ."Relation Name"] | index("orders") != null' "$log"
  refused_with "orders_loader cannot read a server file itself" "permission denied for function pg_read_binary_file" \
    loader_sql "SELECT pg_read_binary_file('postgresql.auto.conf')"
  refused_with "the log reader takes no path" "function orders_bench_read_log(unknown, integer, integer) does not exist" \
    loader_sql "SELECT orders_bench_read_log('global/pg_control', 0, 100)"
  refused_with "orders_loader cannot become the functions' owner" "permission denied to set role" \
    loader_sql "SET ROLE orders_log_reader"
  refused_with "orders_loader cannot replace the functions (in public, where it creates nothing)" "permission denied for schema public" \
    loader_sql "CREATE OR REPLACE FUNCTION public.orders_bench_read_log(\"offset\" bigint, length bigint) RETURNS bytea LANGUAGE sql AS 'SELECT NULL::bytea'"
  refused_with "orders_loader cannot move the log elsewhere" "permission denied to set parameter" \
    loader_sql "ALTER SYSTEM SET log_directory = '/etc'"
  refused_with "a negative offset is refused" "offset and length must be 0 or more" loader_sql "SELECT orders_bench_read_log(-1, 10)"
  refused_with "orders_service may not call the log reader" "permission denied for function orders_bench_read_log" \
    service_sql "SELECT orders_bench_read_log(0, 10)"
  refused_with "orders_monitor may not call the log reader" "permission denied for function orders_bench_read_log" \
    monitor_sql "SELECT orders_bench_read_log(0, 10)"
}
