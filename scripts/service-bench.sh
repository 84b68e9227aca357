#!/usr/bin/env bash
# What the services cost on top of their databases, in one run (README "Service cost"):
#  1. GET /orders/{id} through orders-pg (wrk) against pgbench running the same SELECT with as
#     many connections as the service's pool: `prepared` mode vs `pgbench -M prepared`, and
#     `unprepared` mode vs `pgbench -M extended` (unnamed statements, planned every time);
#  2. GET /orders/{id} through orders-mongo against the same find_one straight from the driver
#     (services/orders-mongo/examples/find_one_loop.rs), same pool and concurrency;
#     each as PAIRS alternating (service, direct) runs, with the median ratio;
#  3. the services' own CPU time per request (user and system apart, from /proc/<pid>/stat) for
#     every endpoint: get by id, by customer, by product, insert, status update.
# Seeds ORDERS orders with `orders-bench seed` into a database of its own, starts release builds
# on free loopback ports, and removes what it made when it ends. Needs wrk (apt-get install wrk).
# Every run is bounded in time; everything stays on 127.0.0.1.
#
# Settings (environment): ORDERS=200000 DURATION=10 PAIRS=3 CONNECTIONS=64 THREADS=2 POOL=16
# CPU_DURATION=5 (seconds per endpoint), KEEP_DATA=1 keeps the seeded databases for the next run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

orders=${ORDERS:-200000}
duration=${DURATION:-10}
pairs=${PAIRS:-3}
connections=${CONNECTIONS:-64}
threads=${THREADS:-2}
pool=${POOL:-16}
cpu_duration=${CPU_DURATION:-5}
keep_data=${KEEP_DATA:-0}
database=service_bench
customers=$(((orders / 10) > 0 ? orders / 10 : 1))
products=$customers

die() {
	echo "service-bench: $*" >&2
	exit 1
}
command -v wrk >/dev/null || die "wrk is missing (apt-get install wrk)"
[[ $orders =~ ^[0-9]+$ && $orders -ge 10 ]] || die "ORDERS must be an integer of at least 10"
[[ $pairs =~ ^[0-9]+$ && $pairs -ge 1 ]] || die "PAIRS must be a positive integer"

work=$(mktemp -d)
bin=target/release
manifest=.local/service-bench/dataset.json
started_stack=0
service_pid=''
cleanup() {
	stop_service
	if [[ $keep_data != 1 && -n ${admin_url:-} ]]; then
		psql_admin -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1 || true
		"$bin/examples/find_one_loop" "$MONGODB_URI" "$database" --drop >/dev/null 2>&1 || true
		rm -f "$manifest"
	fi
	[[ $started_stack == 1 ]] && bash infra/local/stack.sh stop >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

if ! bash infra/local/stack.sh status >/dev/null 2>&1; then
	bash infra/local/stack.sh start >/dev/null || die "could not start the local stack"
	started_stack=1
fi
eval "$(bash infra/local/stack.sh env)"
admin_url=$STACK_PG_ADMIN_URL
url="${admin_url%/*}/$database"
pg_env=(env LD_LIBRARY_PATH="$PG_BIN/../lib" PGOPTIONS="-c client_min_messages=warning")
psql_admin() { "${pg_env[@]}" "$PG_BIN/psql" -q -X -v ON_ERROR_STOP=1 "$admin_url" "$@"; }

echo "building release binaries" >&2
nice -n 19 cargo build --release -q -p orders-pg -p orders-mongo -p orders-bench \
	--bin orders-pg --bin orders-mongo --bin orders-bench --example find_one_loop ||
	die "cargo build failed"

seeded_orders() { sed -n 's/.*"orders": *\([0-9]*\).*/\1/p' "$manifest" 2>/dev/null | head -n1; }
if [[ $keep_data == 1 && "$(seeded_orders)" == "$orders" ]] &&
	psql_admin -tAc "SELECT 1 FROM pg_database WHERE datname = '$database'" | grep -q 1; then
	echo "reusing the $orders orders seeded by an earlier KEEP_DATA=1 run" >&2
else
	psql_admin -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" -c "CREATE DATABASE $database" ||
		die "could not create the database $database"
	mkdir -p "$(dirname "$manifest")"
	echo "seeding $orders orders into PostgreSQL and MongoDB" >&2
	"$bin/orders-bench" seed --target both --reset --orders "$orders" --database-url "$url" \
		--mongodb-uri "$MONGODB_URI" --mongodb-db "$database" --manifest "$manifest" >/dev/null ||
		die "seeding failed"
fi

# --- the services -------------------------------------------------------------------------------

stop_service() {
	if [[ -n $service_pid ]]; then
		kill -TERM "$service_pid" 2>/dev/null || true
		wait "$service_pid" 2>/dev/null || true
		service_pid=''
	fi
}

# start_service NAME [VAR=value...]: starts target/release/NAME on a free port (port 0; the port
# is read back from its start-up log line); sets service_pid and base_url.
start_service() {
	local name=$1
	shift
	env "$@" BIND_ADDR=127.0.0.1:0 RUST_LOG=warn,orders_http::serve=info LOG_FORMAT=text \
		"$bin/$name" >"$work/$name.log" 2>&1 &
	service_pid=$!
	local port=''
	for _ in $(seq 300); do
		port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/$name.log" | head -n1)
		[[ -n $port ]] && break
		kill -0 "$service_pid" 2>/dev/null || break
		sleep 0.1
	done
	if [[ -z $port ]] || ! curl -fs "http://127.0.0.1:$port/readyz" >/dev/null; then
		cat "$work/$name.log" >&2
		die "$name did not start"
	fi
	base_url=http://127.0.0.1:$port
}

# --- load scripts -------------------------------------------------------------------------------

cat >"$work/get.lua" <<LUA
math.randomseed(42)
request = function() return wrk.format("GET", "/orders/" .. math.random(1, $orders)) end
LUA
cat >"$work/customer.lua" <<LUA
math.randomseed(43)
request = function() return wrk.format("GET", "/customers/" .. math.random(1, $customers) .. "/orders") end
LUA
cat >"$work/product.lua" <<LUA
math.randomseed(44)
request = function() return wrk.format("GET", "/products/" .. math.random(1, $products) .. "/orders") end
LUA
cat >"$work/insert.lua" <<LUA
math.randomseed(45)
local headers = { ["Content-Type"] = "application/json" }
local function item(product, quantity)
  return string.format('{"product_id":%d,"sku":"SKU-%06d","name":"Product number %d","quantity":%d,'
    .. '"unit_price_cents":1999}', product, product, product, quantity)
end
request = function()
  local body = string.format('{"customer":{"id":%d,"name":"Ada Lovelace","email":"ada@example.com"},'
    .. '"items":[%s,%s,%s],"currency":"EUR","shipping":{"street":"Example Street 1","city":"Berlin",'
    .. '"postal_code":"10115","country":"DE"}}', math.random(1, $customers),
    item(math.random(1, $products), 1), item(math.random(1, $products), 2), item(math.random(1, $products), 3))
  return wrk.format("POST", "/orders", headers, body)
end
LUA
cat >"$work/status.lua" <<LUA
math.randomseed(46)
local headers = { ["Content-Type"] = "application/json" }
local statuses = { "pending", "paid", "shipped", "delivered", "cancelled" }
request = function()
  return wrk.format("PATCH", "/orders/" .. math.random(1, $orders) .. "/status", headers,
    '{"status":"' .. statuses[math.random(1, 5)] .. '"}')
end
LUA
printf '\\set id random(1, %s)\nSELECT doc FROM orders WHERE id = :id;\n' "$orders" >"$work/get.sql"

# --- measuring ----------------------------------------------------------------------------------

# utime and stime of a process (all threads), in clock ticks; fields counted after the name.
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12, $13 }'; }
ticks_per_second=$(getconf CLK_TCK)

# run_wrk SCRIPT SECONDS: wrk against base_url; prints "requests/s requests user_us sys_us" (the
# service's CPU microseconds per request). Fails on any non-2xx answer or socket error.
run_wrk() {
	local script=$1 seconds=$2 user0 sys0 user1 sys1
	read -r user0 sys0 < <(cpu_ticks "$service_pid")
	wrk -t"$threads" -c"$connections" -d"${seconds}s" -s "$work/$script.lua" "$base_url" >"$work/wrk.txt"
	read -r user1 sys1 < <(cpu_ticks "$service_pid")
	if grep -qE 'Non-2xx|Socket errors' "$work/wrk.txt"; then
		cat "$work/wrk.txt" >&2
		die "wrk saw errors from $base_url ($script)"
	fi
	awk -v u=$((user1 - user0)) -v s=$((sys1 - sys0)) -v hz="$ticks_per_second" '
		/ requests in / { requests = $1 }
		/^Requests\/sec/ { rate = $2 }
		END {
			if (requests == 0) exit 1
			printf "%.1f %d %.1f %.1f\n", rate, requests, u / hz * 1e6 / requests, s / hz * 1e6 / requests
		}' "$work/wrk.txt"
}

warm_up() { wrk -t"$threads" -c"$connections" -d2s -s "$work/$1.lua" "$base_url" >/dev/null; }

pgbench_rate() { # $1 = protocol
	"${pg_env[@]}" "$PG_BIN/pgbench" -n -M "$1" -c "$pool" -j "$threads" -T "$duration" -f "$work/get.sql" \
		"$url" 2>"$work/pgbench.err" | awk '/^tps = / { print $3 }' | grep . ||
		{
			cat "$work/pgbench.err" >&2
			die "pgbench -M $1 failed"
		}
}

mongo_rate() {
	"$bin/examples/find_one_loop" "$MONGODB_URI" "$database" "$pool" "$connections" "$duration" "$orders" ||
		die "find_one_loop failed"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# compare LABEL DIRECT_LABEL DIRECT_COMMAND...: PAIRS alternating runs of the running service's
# GET by id and of the direct command; one line per pair, then the medians.
compare() {
	local label=$1 direct_label=$2
	shift 2
	local ratios=() services=() directs=() cpus=()
	warm_up get
	for pair in $(seq "$pairs"); do
		local rate requests user sys direct
		read -r rate requests user sys < <(run_wrk get "$duration")
		direct=$("$@")
		services+=("$rate")
		directs+=("$direct")
		cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')")
		ratios+=("$(awk -v a="$rate" -v b="$direct" 'BEGIN { printf "%.3f", a / b }')")
		printf '  pair %d: %-22s %8.0f req/s (CPU %5.1f us user + %5.1f us sys) | %-20s %8.0f/s | ratio %s\n' \
			"$pair" "$label" "$rate" "$user" "$sys" "$direct_label" "$direct" "${ratios[-1]}"
	done
	printf '  median: %-22s %8.0f req/s (CPU %5.1f us) | %-20s %8.0f/s | ratio %s\n' "$label" \
		"$(printf '%s\n' "${services[@]}" | median)" "$(printf '%s\n' "${cpus[@]}" | median)" \
		"$direct_label" "$(printf '%s\n' "${directs[@]}" | median)" "$(printf '%s\n' "${ratios[@]}" | median)"
}

printf 'service-bench: %s orders; wrk -t%s -c%s for %ss against pgbench -c %s -j %s / the driver loop (%s tasks), pool %s; %s pairs\n' \
	"$orders" "$threads" "$connections" "$duration" "$pool" "$threads" "$connections" "$pool" "$pairs"
nproc_line="$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'machine: %s\n\nGET /orders/{id}, service vs direct\n' "$nproc_line"

start_service orders-pg DATABASE_URL="$url" PG_POOL_SIZE="$pool" PG_STATEMENT_MODE=prepared
compare "orders-pg prepared" "pgbench -M prepared" pgbench_rate prepared
stop_service
start_service orders-pg DATABASE_URL="$url" PG_POOL_SIZE="$pool" PG_STATEMENT_MODE=unprepared
compare "orders-pg unprepared" "pgbench -M extended" pgbench_rate extended
stop_service
start_service orders-mongo MONGODB_URI="$MONGODB_URI" MONGODB_DB="$database" MONGO_POOL_SIZE="$pool"
compare "orders-mongo" "driver find_one loop" mongo_rate
stop_service

printf '\nService CPU per request (wrk -t%s -c%s, %ss per endpoint; orders-pg in prepared mode)\n' \
	"$threads" "$connections" "$cpu_duration"
printf '  %-13s %-20s %10s %9s %9s %9s\n' service endpoint "req/s" "user us" "sys us" "total us"
for service in orders-pg orders-mongo; do
	if [[ $service == orders-pg ]]; then
		start_service orders-pg DATABASE_URL="$url" PG_POOL_SIZE="$pool" PG_STATEMENT_MODE=prepared
	else
		start_service orders-mongo MONGODB_URI="$MONGODB_URI" MONGODB_DB="$database" MONGO_POOL_SIZE="$pool"
	fi
	for endpoint in get:get customer:by-customer product:by-product insert:insert status:status-update; do
		script=${endpoint%%:*}
		warm_up "$script"
		read -r rate requests user sys < <(run_wrk "$script" "$cpu_duration")
		printf '  %-13s %-20s %10.0f %9.1f %9.1f %9.1f\n' "$service" "${endpoint#*:}" "$rate" "$user" "$sys" \
			"$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')"
	done
	stop_service
done
printf '\nThe machine may be shared: compare figures from one run only.\n'
