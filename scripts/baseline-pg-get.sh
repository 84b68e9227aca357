#!/usr/bin/env bash
# Measures what orders-pg's HTTP path costs on top of PostgreSQL itself, for GET by id:
# wrk (64 connections, random ids) through orders-pg against pgbench running the same SELECT
# with as many database connections as the service's pool, in one run, for both statement
# modes: `prepared` vs `pgbench -M prepared`, `unprepared` vs `pgbench -M extended` (unnamed
# statements, planned every time). Needs wrk (apt-get install wrk). Everything stays on
# 127.0.0.1 and stops by itself.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

orders=${ORDERS:-100000}
connections=${CONNECTIONS:-64}
pool=${POOL:-16}
duration=${DURATION:-20}
port=${PORT:-28080}
database=baseline_get_by_id

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
	echo "port $port is already in use; set PORT" >&2
	exit 1
fi
bash infra/local/stack.sh start >/dev/null
eval "$(bash infra/local/stack.sh env)"
admin=(env LD_LIBRARY_PATH="$PG_BIN/../lib" "$PG_BIN/psql" -q -X -v ON_ERROR_STOP=1 "$STACK_PG_ADMIN_URL")
url="${STACK_PG_ADMIN_URL%/*}/$database"
psql=(env LD_LIBRARY_PATH="$PG_BIN/../lib" "$PG_BIN/psql" -q -X -v ON_ERROR_STOP=1 "$url")

cargo build --release -q -p orders-pg
"${admin[@]}" -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" -c "CREATE DATABASE $database"

service_pid=''
stop_service() {
	if [ -n "$service_pid" ]; then
		kill -TERM "$service_pid" 2>/dev/null || true
		wait "$service_pid" 2>/dev/null || true
		service_pid=''
	fi
}
trap stop_service EXIT

start_service() { # $1 = statement mode
	DATABASE_URL=$url BIND_ADDR=127.0.0.1:$port PG_POOL_SIZE=$pool PG_STATEMENT_MODE=$1 RUST_LOG=warn \
		target/release/orders-pg &
	service_pid=$!
	for _ in $(seq 100); do
		curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return
		sleep 0.1
	done
	echo "orders-pg did not become ready" >&2
	exit 1
}

# Migrate through the service, then load orders shaped exactly like the API's (three items).
start_service prepared
stop_service
"${psql[@]}" -v orders="$orders" <<'SQL'
INSERT INTO orders (id, doc)
SELECT g, jsonb_build_object(
    'id', g,
    'customer', jsonb_build_object('id', 1 + g % 10000, 'name', 'Customer ' || (1 + g % 10000),
                                   'email', 'c' || (1 + g % 10000) || '@example.com'),
    'status', 'pending',
    'items', (SELECT jsonb_agg(jsonb_build_object('product_id', 1 + (g * 7 + i) % 10000, 'sku', 'SKU-' || i,
                                                  'name', 'Product ' || i, 'quantity', i, 'unit_price_cents', 1999))
              FROM generate_series(1, 3) i),
    'total_cents', 11994, 'currency', 'EUR',
    'shipping', jsonb_build_object('street', 'Example Street 1', 'city', 'Berlin', 'postal_code', '10115',
                                   'country', 'DE'),
    'created_at', '2026-11-30T10:00:00.000Z', 'updated_at', '2026-11-30T10:00:00.000Z')
FROM generate_series(1, :orders) g;
VACUUM ANALYZE orders;
SQL

script=$(mktemp -d)
cat >"$script/get.lua" <<LUA
math.randomseed(42)
request = function() return wrk.format("GET", "/orders/" .. math.random(1, $orders)) end
LUA
printf '\\set id random(1, %s)\nSELECT doc FROM orders WHERE id = :id;\n' "$orders" >"$script/get.sql"

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

http_rate() { # $1 = statement mode; prints requests/s and the service's CPU microseconds per request
	start_service "$1"
	wrk -t2 -c"$connections" -d2s -s "$script/get.lua" "http://127.0.0.1:$port" >/dev/null # warm-up
	local before after
	before=$(cpu_ticks "$service_pid")
	wrk -t2 -c"$connections" -d"${duration}s" -s "$script/get.lua" "http://127.0.0.1:$port" >"$script/wrk-$1.txt"
	after=$(cpu_ticks "$service_pid")
	stop_service
	if grep -q 'Non-2xx' "$script/wrk-$1.txt"; then
		echo "orders-pg answered errors:" >&2
		cat "$script/wrk-$1.txt" >&2
		exit 1
	fi
	awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" -v d="$duration" \
		'/^Requests\/sec/ { printf "%s %.0f\n", $2, ticks / hz * 1e6 / ($2 * d) }' "$script/wrk-$1.txt"
}

pgbench_rate() { # $1 = pgbench protocol; prints transactions/s
	env LD_LIBRARY_PATH="$PG_BIN/../lib" "$PG_BIN/pgbench" -n -M "$1" -c "$pool" -j 2 -T "$duration" \
		-f "$script/get.sql" "$url" 2>/dev/null | awk '/^tps = / { print $3 }'
}

printf '%s orders, wrk %s connections through orders-pg (pool %s) vs pgbench -c %s, %ss each\n' \
	"$orders" "$connections" "$pool" "$pool" "$duration"
for pair in prepared:prepared unprepared:extended; do
	mode=${pair%%:*}
	protocol=${pair#*:}
	read -r service service_cpu < <(http_rate "$mode")
	direct=$(pgbench_rate "$protocol")
	awk -v m="$mode" -v p="$protocol" -v s="$service" -v c="$service_cpu" -v d="$direct" 'BEGIN {
		printf "%-10s orders-pg %6.0f req/s (%s us CPU/request) | pgbench -M %-8s %6.0f tps | ratio %.2f\n",
			m, s, c, p, d, s / d }'
done
rm -rf "$script"
"${admin[@]}" -c "DROP DATABASE IF EXISTS $database WITH (FORCE)"
