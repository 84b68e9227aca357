# shellcheck shell=bash
# The least-privilege checks of infra/ci/test-do-simcloud.sh (docs/security.md, "On droplets"),
# sourced by it and run at its steps with its helpers (expect, refuse, on, operator, state, ...).
# Each refusal is asserted by the server's own message, so a check cannot pass because a
# connection or a login failed instead.
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

# Grafana (3000) and Prometheus (9090): no firewall rule opens them, they listen on the monitor's
# loopback only, and the operator's address is admitted to SSH alone.
check_monitor_closed() {
  expect "no firewall rule opens Grafana's or Prometheus's port" \
    state "not any(r.startswith(('protocol:tcp,ports:3000,', 'protocol:tcp,ports:9090,')) for f in s['firewalls'] for r in f['inbound'].split()) or exit(1)"
  expect "the operator's address is let in to SSH (22) only" \
    state "all(r.startswith('protocol:tcp,ports:22,') for f in s['firewalls'] for r in f['inbound'].split() if 'address:' in r) or exit(1)"
  local port
  for port in 3000 9090; do
    refuse "the operator does not reach the monitor's :$port" operator timeout 2 bash -c "</dev/tcp/$(public_ip monitor)/$port"
    expect "the monitor's :$port answers on its loopback" on monitor "curl -fsS http://127.0.0.1:$port/"
    refuse "the monitor's :$port does not answer on its VPC address" on monitor "curl -fsS http://$(private_ip monitor):$port/"
  done
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
  expect "six passwords: two PostgreSQL roles, two MongoDB users, Grafana, MongoDB's administrator" \
    test "$(grep -c . "$values")" = 6
  expect "the user-data given to doctl holds none of them" bash -c "! cat '$STATE_DIR'/user-data/*.yaml | grep -qF -f '$values'"
  for role in postgres-db mongo-db postgres-app mongo-app load-1 load-2 monitor; do
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

# psql on postgres-db as ROLE over TCP with its password (read on the droplet from the root-only
# file; it reaches psql in its environment); the SQL on standard input.
pg_as() { # ROLE PASSWORD-VARIABLE
  on postgres-db "cd / && PGPASSWORD=\$(sed -n 's/^$2=//p' /etc/orders/postgres-db.env) \
    /usr/lib/postgresql/*/bin/psql -X -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -U $1 -d orders -f -"
}
service_sql() { pg_as orders_service PG_SERVICE_PASSWORD <<<"$1"; }
loader_sql() { pg_as orders_loader PG_LOADER_PASSWORD <<<"$1"; }

check_postgres_roles() {
  expect "the migrations were applied as orders_owner by up" contains "$W/up.out" "applied migration 0003_idempotency_key"
  expect "orders_service: logs in, is no superuser, owns nothing" test "$(service_sql "SELECT rolsuper, (SELECT count(*) FROM pg_class
    WHERE relowner = r.oid) FROM pg_roles r WHERE rolname = current_user")" = "f|0"
  expect "orders_loader: logs in, is no superuser" test "$(loader_sql "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")" = f
  refused_with "orders_service cannot COPY ... TO PROGRAM (a shell on the database droplet)" \
    "permission denied to COPY to or from an external program" service_sql "COPY orders TO PROGRAM 'id'"
  refused_with "orders_loader cannot COPY ... TO PROGRAM either" \
    "permission denied to COPY to or from an external program" loader_sql "COPY orders TO PROGRAM 'id'"
  refused_with "orders_service cannot DROP TABLE orders" "must be owner of table orders" service_sql "DROP TABLE orders"
  refused_with "orders_service cannot TRUNCATE or DELETE" "permission denied for table orders" \
    service_sql "DELETE FROM orders"
  refused_with "orders_service cannot create a table" "it does not change the schema (CREATE TABLE)" \
    service_sql "CREATE TABLE stolen (id int)"
  refused_with "orders_service cannot create a function" "it does not change the schema (CREATE FUNCTION)" \
    service_sql "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'"
  refused_with "orders_service cannot change the GIN index (hence do.sh toggle runs it as the owner)" \
    "must be owner of index orders_items" service_sql "ALTER INDEX orders_items SET (fastupdate = off)"
  refused_with "orders_service cannot read the roles' password hashes" "permission denied for table pg_authid" \
    service_sql "SELECT rolpassword FROM pg_authid"
  expect "orders-pg applied no migration itself (its role could not)" \
    on postgres-app "journalctl -u orders-pg | grep -q 'listening on' && ! journalctl -u orders-pg | grep -q 'applied migrations'"
  expect "orders-pg's /diagnostics is complete with its role (settings, GIN pending list)" on postgres-app \
    "curl -fsS http://127.0.0.1:8080/diagnostics | jq -e '.error == null and (.gin_index.pending_pages | type == \"number\")
      and (.settings.shared_preload_libraries | test(\"pg_stat_statements\")) and (.product_query.generic_plan.nodes | length > 0)'"
}

# mongosh on mongo-db as USER against DATABASE, one command (JSON); the password is read on the
# droplet and reaches mongosh in a root-only file, removed afterwards.
mongo_as() { # USER PASSWORD-VARIABLE DATABASE COMMAND
  on mongo-db "umask 077; pw=\$(sed -n 's/^$2=//p' /etc/orders/mongo-db.env /etc/orders/mongo-admin.env)
    printf 'connect(\"mongodb://$1:%s@127.0.0.1:27017/$3?authSource=admin\").runCommand(%s)\n' \"\$pw\" '$4' >/root/check.js
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
# loopback, through SSH, and nowhere else.
check_tunnel() {
  setsid nsenter --net="/run/netns/$OPNS" env PATH="$W/bin:$PATH" SIMCLOUD_WORLD="$W" \
    bash "$DO" tunnel >"$W/tunnel.out" 2>&1 &
  local session=$! port
  for _ in $(seq 40); do
    operator timeout 1 bash -c '</dev/tcp/127.0.0.1/9090' 2>/dev/null && break
    sleep 0.5
  done
  expect "tunnel prints the local URLs" bash -c "grep -q 'Grafana: *http://127.0.0.1:3000' '$W/tunnel.out' && grep -q 'Prometheus: http://127.0.0.1:9090' '$W/tunnel.out'"
  for port in 3000:grafana 9090:prometheus; do
    expect "the tunnel reaches ${port#*:} on the monitor's loopback (127.0.0.1:${port%:*} here)" \
      bash -c "nsenter --net=/run/netns/$OPNS curl -fsS http://127.0.0.1:${port%:*}/ | grep -qx '${port#*:} (simulated)'"
  done
  kill -TERM -- "-$session" 2>/dev/null || true
  wait "$session" 2>/dev/null || true
  # The ssh ends a moment after do.sh.
  for _ in $(seq 20); do
    operator timeout 1 bash -c '</dev/tcp/127.0.0.1/3000' 2>/dev/null || break
    sleep 0.25
  done
  refuse "closed with the tunnel" operator timeout 2 bash -c '</dev/tcp/127.0.0.1/3000'
}
