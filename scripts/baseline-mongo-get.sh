#!/usr/bin/env bash
# Measures what orders-mongo's HTTP path costs on top of the driver, for GET by id: wrk
# (64 connections, random ids) through orders-mongo against the same find_one from a small Rust
# program (services/orders-mongo/examples/find_one_loop.rs) with the same pool size and
# concurrency, in one run. Needs wrk (apt-get install wrk). Only 127.0.0.1; stops by itself.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

orders=${ORDERS:-100000}
connections=${CONNECTIONS:-64}
pool=${POOL:-16}
duration=${DURATION:-20}
port=${PORT:-28081}
database=baseline_get_by_id

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
	echo "port $port is already in use; set PORT" >&2
	exit 1
fi
bash infra/local/stack.sh start >/dev/null
eval "$(bash infra/local/stack.sh env)"

cargo build --release -q -p orders-mongo -p orders-bench --example find_one_loop
target/release/orders-bench seed --target mongo --reset --orders "$orders" --mongodb-uri "$MONGODB_URI" \
	--mongodb-db "$database" --manifest "$(mktemp -d)/dataset.json" >/dev/null

MONGODB_DB=$database BIND_ADDR=127.0.0.1:$port MONGO_POOL_SIZE=$pool RUST_LOG=warn target/release/orders-mongo &
service_pid=$!
trap 'kill -TERM $service_pid 2>/dev/null || true; wait $service_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
	sleep 0.1
done

script=$(mktemp -d)
cat >"$script/get.lua" <<LUA
math.randomseed(42)
request = function() return wrk.format("GET", "/orders/" .. math.random(1, $orders)) end
LUA
wrk -t2 -c"$connections" -d2s -s "$script/get.lua" "http://127.0.0.1:$port" >/dev/null # warm-up
wrk -t2 -c"$connections" -d"${duration}s" -s "$script/get.lua" "http://127.0.0.1:$port" >"$script/wrk.txt"
if grep -q 'Non-2xx' "$script/wrk.txt"; then
	cat "$script/wrk.txt" >&2
	exit 1
fi
service=$(awk '/^Requests\/sec/ { print $2 }' "$script/wrk.txt")
kill -TERM "$service_pid" 2>/dev/null || true
wait "$service_pid" 2>/dev/null || true
direct=$(target/release/examples/find_one_loop "$MONGODB_URI" "$database" "$pool" "$connections" "$duration" "$orders")

printf '%s orders, %s concurrent, pool %s, %ss each\n' "$orders" "$connections" "$pool" "$duration"
awk -v s="$service" -v d="$direct" \
	'BEGIN { printf "orders-mongo %8.0f req/s | driver find_one loop %8.0f finds/s | ratio %.2f\n", s, d, s / d }'
rm -rf "$script"
