# shellcheck shell=bash
# The TLS checks of the simulated journeys (docs/security.md, "On droplets", TLS to the databases),
# sourced by infra/ci/test-do-simcloud.sh and test-do-simcloud-replicas.sh and run with their
# helpers (expect, refuse, refused_with, on, private_ip, ...): each database refuses a session
# without TLS from a load droplet and a client that checks its certificate with another CA, and
# listens on its VPC address and loopback alone; each service connects with verify-full / tls=true
# and its /diagnostics says the connection is encrypted; no private key leaves its place.
# Refusals are asserted by the client's own message, so a check cannot pass because the server
# was simply down.
# shellcheck disable=SC2154 # W, REPO, STATE_DIR and the helpers come from the test

# The clients the droplets run the checks with: the simulated PostgreSQL's psql (built with
# OpenSSL), and pymongo from the simulated mongosh's virtualenv.
TLS_PSQL=$REPO/.local/simcloud/postgresql-18.6.0/bin/psql
TLS_PYTHON=$REPO/.local/simcloud/venv/bin/python
TLS_CA=/etc/orders/tls/ca.crt

# A CA that signed nothing of the deployment's (made on this machine, visible to every droplet).
tls_other_ca() {
  local dir=$W/other-ca
  [ -s "$dir/ca.crt" ] && return 0
  mkdir -p "$dir"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -sha256 -subj "/CN=another CA" \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
  chmod 0644 "$dir/ca.crt"
}

# psql from droplet FROM to PostgreSQL on droplet DB as orders_service (or PG_USER), with the
# libpq options given; no password (-w): a session that gets that far is refused for want of one.
pg_from() { # FROM DB OPTIONS
  on "$1" "cd / && $TLS_PSQL -X -w -At 'host=$(private_ip "$2") port=5432 dbname=orders user=${PG_USER:-orders_service} connect_timeout=5 $3' -c 'SELECT 1'"
}
# pymongo from droplet FROM to mongod on droplet DB, no user: `ping` (which needs no login).
mongo_from() { # FROM DB URI-OPTIONS
  on "$1" "$TLS_PYTHON -c 'import sys, pymongo; c = pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=4000, directConnection=True); print(c.admin.command(\"ping\"))' 'mongodb://$(private_ip "$2"):27017/?$3'"
}
# The addresses a droplet's server listens on for PORT, sorted, one line (ss inside its namespace).
listening() { # DROPLET PORT
  on "$1" "ss -Hltn 'sport = :$2' | awk '{ print \$4 }' | sort | paste -sd' '"
}
expect_listening() { # DROPLET PORT WHAT [vpc]: on the VPC address and loopback (vpc: the VPC address alone)
  local want got
  want=$(printf '%s\n' "127.0.0.1:$2" "$(private_ip "$1"):$2" | sort | paste -sd' ')
  if [ "${4:-}" = vpc ]; then want=$(private_ip "$1"):$2; fi
  got=$(listening "$1" "$2")
  if [ "$got" = "$want" ]; then
    passed=$((passed + 1))
    echo "  ok    $1: $3 listens on $got alone"
  else
    fail "$1: $3 listens on $got, not on $want alone"
  fi
}

# PostgreSQL on DB (its service on APP): TLS for the service's role, verify-full, encrypted.
check_postgres_tls() { # DB APP SERVICE
  local db=$1 app=$2 service=$3
  tls_other_ca
  refused_with "$db: a session without TLS from a load droplet is refused (hostssl alone for orders_service)" \
    "no encryption" pg_from load-1 "$db" "sslmode=disable"
  PG_USER=orders_loader refused_with "$db: and for orders-bench's seeding role (hostssl alone for orders_loader)" \
    "no encryption" pg_from load-1 "$db" "sslmode=disable"
  expect "orders-bench's URL on the load droplets asks for verify-full with the deployment's CA" on load-1 \
    "grep -q '^DATABASE_URL=.*sslmode=verify-full&sslrootcert=$TLS_CA' /etc/orders/bench.env"
  refused_with "$db: a client that checks the server with another CA refuses it" \
    "certificate verify failed" pg_from load-1 "$db" "sslmode=verify-full sslrootcert=$W/other-ca/ca.crt"
  refused_with "$db: with the deployment's CA, verify-full gets through TLS and pg_hba to the password" \
    "no password supplied" pg_from load-1 "$db" "sslmode=verify-full sslrootcert=$TLS_CA"
  expect "$service's URL asks for verify-full with the deployment's CA" on "$app" \
    "grep -q '^DATABASE_URL=.*sslmode=verify-full&sslrootcert=$TLS_CA' /etc/orders/$service.env"
  expect "$service's /diagnostics: its session is encrypted (pg_stat_ssl)" on "$app" \
    "curl -fsS http://127.0.0.1:8080/diagnostics | jq -e '.tls.ssl == true and (.tls.version | startswith(\"TLS\"))'"
  expect_listening "$db" 5432 PostgreSQL
}

# MongoDB on DB (orders-mongo on APP): TLS required, the service verifies, encrypted.
check_mongo_tls() { # DB APP
  local db=$1 app=$2
  tls_other_ca
  refused_with "$db: a connection without TLS from a load droplet is refused (requireTLS)" \
    "ServerSelectionTimeoutError" mongo_from load-1 "$db" "tls=false"
  refused_with "$db: a client that checks the server with another CA refuses it" \
    "certificate verify failed" mongo_from load-1 "$db" "tls=true&tlsCAFile=$W/other-ca/ca.crt"
  expect "$db: with the deployment's CA a load droplet's TLS connection is verified and answers" \
    mongo_from load-1 "$db" "tls=true&tlsCAFile=$TLS_CA"
  expect "orders-mongo's URI asks for tls=true with the deployment's CA" on "$app" \
    "grep -q '^MONGODB_URI=.*tls=true&tlsCAFile=$TLS_CA' /etc/orders/orders-mongo.env"
  expect "orders-mongo's /diagnostics: encrypted, verified, the server requires TLS" on "$app" \
    "curl -fsS http://127.0.0.1:8080/diagnostics | jq -e '.tls.encrypted == true and .tls.verified == true and (.tls.server_tls_mode | tostring | test(\"requireTLS\"))'"
  expect_listening "$db" 27017 mongod
}

# The private keys: the CA's stays on the operator's machine (0600 in a 0700 folder) and is on no
# droplet; each database droplet's key is there alone, in its server's 0600 file; none is in a
# log, in user-data or in what do.sh printed (every *.out of the test so far). A key is recognised
# by the first line of its PEM body. DBS: the database droplets, then the other droplets.
check_tls_keys() { # "DB..." "OTHER..."
  local dir=$STATE_DIR/tls keys=$W/key-lines role f
  expect "the CA's key and every database droplet's key are 0600 in a 0700 folder on the operator's machine" \
    bash -c "[ \$(stat -c %a '$dir') = 700 ] && for f in '$dir'/*.key; do [ \$(stat -c %a \"\$f\") = 600 ] || exit 1; done"
  for f in "$dir"/*.key; do sed -n 2p "$f"; done >"$keys"
  expect "keys to look for: the CA's and one per database droplet" test "$(grep -c . "$keys")" = "$(($(wc -w <<<"$1") + 1))"
  expect "no key in what do.sh printed or in the user-data" bash -c "! cat '$W'/*.out '$STATE_DIR'/user-data/*.yaml | grep -qF -f '$keys'"
  for role in $1; do
    # shellcheck disable=SC2016 # expanded by the droplet's shell
    expect "$role: its own key only, in its server's 0600 file; no key in a log" on "$role" \
      'k=$(cat); files=$(grep -rlF -f <(printf "%s\n" "$k") /etc /opt/orders /var/log /var/lib/cloud /tmp 2>/dev/null | grep -v "^/opt/orders/incoming/") || exit 1
       [ "$(wc -l <<<"$files")" = 1 ] && [ "$(stat -c %a "$files")" = 600 ] && case $files in /var/log/*) exit 1 ;; esac' <"$keys"
  done
  for role in $2; do
    # shellcheck disable=SC2016 # expanded by the droplet's shell
    expect "$role: holds no private key of the deployment" on "$role" \
      'k=$(cat); ! grep -rqF -f <(printf "%s\n" "$k") /etc /opt/orders /var/log /var/lib/cloud /tmp 2>/dev/null' <"$keys"
  done
}

# The replicated journey's members: each server where it should listen, replication encrypted,
# a standby refusing a session without TLS, the services encrypted.
check_replicas_tls() {
  local m
  for m in postgres-db postgres-db-2 postgres-db-3; do
    expect_listening "$m" 5432 PostgreSQL
    expect_listening "$m" 8008 "Patroni's REST API" vpc
    expect_listening "$m" 2379 "etcd (clients)"
    expect_listening "$m" 2380 "etcd (peers)" vpc
  done
  for m in mongo-db mongo-db-2 mongo-db-3; do expect_listening "$m" 27017 mongod; done
  expect "both standbys stream over TLS (pg_stat_ssl of the primary's walsenders)" on postgres-db \
    "cd / && runuser -u postgres -- /usr/lib/postgresql/*/bin/psql -X -h /var/run/postgresql -d postgres -At -c \"SELECT count(*) FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid) WHERE s.ssl\" | grep -qx 2"
  refused_with "postgres-db-2: a session without TLS from a load droplet is refused" "no encryption" pg_from load-1 postgres-db-2 "sslmode=disable"
  refused_with "mongo-db-2: a connection without TLS from a load droplet is refused" "ServerSelectionTimeoutError" mongo_from load-1 mongo-db-2 "tls=false"
  expect "orders-pg's /diagnostics: its session is encrypted" on postgres-app \
    "curl -fsS http://127.0.0.1:8080/diagnostics | jq -e '.tls.ssl == true'"
  expect "orders-mongo's /diagnostics: encrypted and verified" on mongo-app \
    "curl -fsS http://127.0.0.1:8080/diagnostics | jq -e '.tls.encrypted == true and .tls.verified == true'"
}
