#!/usr/bin/env bash
# What the services cost on top of their databases, in one run (docs/service-cost.md):
#  1. GET /orders/{id} through orders-pg (wrk) against pgbench running the same SELECT with as
#     many connections as the service's pool: `prepared` mode vs `pgbench -M prepared`, and
#     `unprepared` mode vs `pgbench -M extended` (unnamed statements, planned every time);
#  2. GET /orders/{id} through orders-mongo against the same find_one straight from the driver
#     (services/orders-mongo/examples/find_one_loop.rs), same pool and concurrency;
#     each as PAIRS alternating (service, direct) runs, with the median ratio, and the ratio a
#     service costing nothing would reach (direct CPU per request / (database + wrk) through it)
#     and one costing what the direct client costs (/ (database + wrk + direct client)), which
#     for orders-mongo, whose direct client is the same driver call, the service cannot beat;
#  3. the services' own CPU time per request (user and system apart, from /proc/<pid>/stat) for
#     every endpoint: get by id, by customer, by product, insert, status update; with
#     BEFORE_BIN_DIR, side by side with the same services built from an earlier commit (below).
# Every CPU figure is user + system time from /proc (the database server's from the local stack's
# pid files), and the load clients' own from `times`.
# Seeds ORDERS orders with `orders-bench seed` into a database of its own, starts release builds
# on free loopback ports, and removes what it made when it ends. Needs wrk (apt-get install wrk).
# Every run is bounded in time; everything stays on 127.0.0.1.
#
# Settings (environment): ORDERS=200000 DURATION=10 PAIRS=3 CONNECTIONS=64 THREADS=2 POOL=16
# CPU_DURATION=5 (seconds per endpoint), KEEP_DATA=1 keeps the seeded databases for the next run,
# BIN_DIR=dir uses binaries built already (orders-pg, orders-mongo, orders-bench and
# examples/find_one_loop) instead of building target/release.
# WORKER_THREADS=1 is passed to both services and to the driver loop alike (auto or 1..1024, as
# the services take it). The default 1 is for the shared 2-core machine the figures of docs/service-cost.md come
# from: both services and the driver loop run single-threaded, on a current-thread runtime
# (docs/configuration.md says why). Each service's runtime is read back from its /diagnostics and
# printed.
# BEFORE_BIN_DIR=dir: a folder with orders-pg and orders-mongo built from an earlier commit. The
# per-endpoint section then measures every endpoint PAIRS times with the earlier build and PAIRS
# times with this one, alternately (before then after, after then before, ...), with the same wrk
# settings on the same data (put back after every run's writes), and prints per endpoint the
# medians of each build's user and system microseconds per request and after/before of the
# medians of user + system, then per service whether a GET by id costs at most half of what it
# did. The earlier build gets only DATABASE_URL, PG_POOL_SIZE, PG_STATEMENT_MODE, MONGODB_URI,
# MONGODB_DB, MONGO_POOL_SIZE, BIND_ADDR, RUST_LOG and LOG_FORMAT
# (every service start gets an empty environment plus its settings), so it runs on the runtime it
# was built with.
# INSTRUCTIONS=1 adds, and INSTRUCTIONS=only runs alone, a count of each service's user-space
# instructions per request for every endpoint, under valgrind's callgrind (apt-get install
# valgrind), with BEFORE_BIN_DIR for both builds: CPU time on a shared virtual machine moves by a
# third between runs, an instruction count by about a percent, so a cut of a few percent in the
# services' own code shows there (the kernel's share, which the count leaves out, does not).
# INSTRUCTIONS_DURATION=5 seconds per endpoint (wrk -t1 -c16; the service runs ~50x slower).
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
worker_threads=${WORKER_THREADS:-1}
before_dir=${BEFORE_BIN_DIR:-}
instructions=${INSTRUCTIONS:-0}
instructions_duration=${INSTRUCTIONS_DURATION:-5}
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
[[ $worker_threads == auto || ($worker_threads =~ ^[0-9]{1,4}$ && $worker_threads -ge 1 && $worker_threads -le 1024) ]] ||
	die "WORKER_THREADS must be auto or a number from 1 to 1024"
[[ $instructions == 0 || $instructions == 1 || $instructions == only ]] || die "INSTRUCTIONS must be 0, 1 or only"
if [[ $instructions != 0 ]]; then
	for tool in valgrind callgrind_control; do
		command -v "$tool" >/dev/null || die "INSTRUCTIONS needs $tool (apt-get install valgrind)"
	done
fi
if [[ -n $before_dir ]]; then
	for binary in orders-pg orders-mongo; do
		[[ -x $before_dir/$binary ]] || die "BEFORE_BIN_DIR: $before_dir/$binary is missing"
	done
fi

work=$(mktemp -d)
bin=${BIN_DIR:-${CARGO_TARGET_DIR:-target}/release}
manifest=.local/service-bench/dataset.json
started_stack=0
service_pid=''
stop_service() {
	if [[ -n $service_pid ]]; then
		kill -TERM "$service_pid" 2>/dev/null || true
		wait "$service_pid" 2>/dev/null || true
		service_pid=''
	fi
}
cleanup() {
	stop_service
	if [[ $keep_data != 1 && -n ${admin_url:-} ]]; then
		psql_admin -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1 || true
		"$bin/examples/find_one_loop" "$MONGODB_URI" "$database" --drop >/dev/null 2>&1 || true
		rm -f "$manifest"
	fi
	[[ ${restore_autogroup:-0} == 1 ]] && echo 1 >"$autogroup" 2>/dev/null
	[[ $started_stack == 1 ]] && bash infra/local/stack.sh stop >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

# The kernel's autogroup schedules each session as one group: PostgreSQL's sixteen backends (the
# local stack's session) against this script's wrk and service. On two busy CPUs that left woken
# backends without a CPU for 0.3-2 s (their schedstat unchanged while runnable), so a few GETs
# through a service took seconds and wrk counted timeouts; pgbench alone never showed it. With
# root the script turns autogroup off for the run (and back on when it ends); without, it says so.
autogroup=/proc/sys/kernel/sched_autogroup_enabled restore_autogroup=0 autogroup_line='not in this kernel'
if [[ -r $autogroup && $(<"$autogroup") != 1 ]]; then
	autogroup_line='off'
elif [[ -r $autogroup ]]; then
	if echo 0 2>/dev/null >"$autogroup"; then
		restore_autogroup=1 autogroup_line='turned off for this run (back on at the end)'
	else
		autogroup_line='on (needs root to turn off): expect stalls of seconds and wrk timeouts'
	fi
fi

if ! bash infra/local/stack.sh status >/dev/null 2>&1; then
	bash infra/local/stack.sh start >/dev/null || die "could not start the local stack"
	started_stack=1
fi
eval "$(bash infra/local/stack.sh env)"
admin_url=$STACK_PG_ADMIN_URL
url="${admin_url%/*}/$database"
pg_env=(env LD_LIBRARY_PATH="$PG_BIN/../lib" PGOPTIONS="-c client_min_messages=warning")
psql_admin() { "${pg_env[@]}" "$PG_BIN/psql" -q -X -v ON_ERROR_STOP=1 "$admin_url" "$@"; }

if [[ -z ${BIN_DIR:-} ]]; then
	echo "building release binaries" >&2
	nice -n 19 cargo build --release -q -p orders-pg -p orders-mongo -p orders-bench \
		--bin orders-pg --bin orders-mongo --bin orders-bench --example find_one_loop ||
		die "cargo build failed"
fi
for binary in orders-pg orders-mongo orders-bench examples/find_one_loop; do
	[[ -x $bin/$binary ]] || die "$bin/$binary is missing"
done

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
# pg_stat_statements off in the bench's database, for the service and pgbench alike: every backend
# running the same statement updates one entry under one spinlock, and a holder that loses its CPU
# leaves the others in PostgreSQL's spin back-off, whose sleeps grow up to a second (seen as wait
# event SpinDelay under pgss_store, with autogroup on). The bench measures the request path.
psql_admin -c "ALTER DATABASE $database SET pg_stat_statements.track = 'none'" >/dev/null ||
	die "could not turn pg_stat_statements off in $database"

# --- the services -------------------------------------------------------------------------------

# start_service PATH [VAR=value...]: starts the service binary PATH on a free port (port 0) with
# an empty environment plus the given settings, BIND_ADDR, RUST_LOG and LOG_FORMAT (so an earlier
# build gets nothing it may not know, and nothing of this shell's environment reaches either
# build); the port is read back from its start-up log line, which every build so far writes as
# "listening on 127.0.0.1:PORT"; sets service_pid and base_url. The command in the array `wrapper`
# (empty but for the instruction counts) runs the service, in the same process.
wrapper=()
start_service() {
	local path=$1 name
	name=$(basename "$path")
	shift
	# The log exists before the service starts: the loop below reads it at once.
	: >"$work/$name.log"
	env -i "$@" BIND_ADDR=127.0.0.1:0 RUST_LOG=warn,orders_http::serve=info LOG_FORMAT=text \
		"${wrapper[@]}" "$path" >"$work/$name.log" 2>&1 &
	service_pid=$!
	local port=''
	for _ in $(seq 300); do
		port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/$name.log" | head -n1)
		[[ -n $port ]] && break
		kill -0 "$service_pid" 2>/dev/null || break
		sleep 0.1
	done
	if [[ -z $port ]] || ! curl -fs --max-time 5 "http://127.0.0.1:$port/readyz" >/dev/null; then
		cat "$work/$name.log" >&2
		die "$path did not start"
	fi
	base_url=http://127.0.0.1:$port
}

# start_build BUILD SERVICE [STATEMENT_MODE]: starts SERVICE (orders-pg, orders-mongo) of BUILD
# (after: this one, on WORKER_THREADS; before: BEFORE_BIN_DIR's, with only the settings it knows)
# on the seeded data, and sets db for `measure`.
start_build() {
	local build=$1 service=$2 mode=${3:-prepared} dir=$bin extra=(WORKER_THREADS="$worker_threads")
	if [[ $build == before ]]; then
		dir=$before_dir
		extra=()
	fi
	if [[ $service == orders-pg ]]; then
		db=pg
		start_service "$dir/orders-pg" "${extra[@]}" DATABASE_URL="$url" PG_POOL_SIZE="$pool" \
			PG_STATEMENT_MODE="$mode"
	else
		db=mongo
		start_service "$dir/orders-mongo" "${extra[@]}" MONGODB_URI="$MONGODB_URI" MONGODB_DB="$database" \
			MONGO_POOL_SIZE="$pool"
	fi
}

# restore_data SERVICE: after a service's write endpoints ran, puts its database back as seeded
# (but for the statuses the updates set): the orders they inserted (ids above ORDERS) are deleted,
# and on PostgreSQL the GIN pending list that inserts and updates filled is flushed and the table
# vacuumed, so the next run's reads meet the same data (a full pending list slows every product
# search, finding F1, until requests time out).
restore_data() {
	if [[ $1 == orders-pg ]]; then
		"${pg_env[@]}" "$PG_BIN/psql" -q -X -v ON_ERROR_STOP=1 "$url" -c "DELETE FROM orders WHERE id > $orders" \
			-c "SELECT gin_clean_pending_list('orders_items'::regclass)" -c "VACUUM (ANALYZE) orders" >/dev/null ||
			die "could not put the PostgreSQL data back"
	else
		"$bin/examples/find_one_loop" "$MONGODB_URI" "$database" --trim "$orders" ||
			die "could not put the MongoDB data back"
	fi
}

# The running service's runtime as its /diagnostics reports it ("current_thread, 1 worker(s)"), or
# "not reported" (an earlier build: tokio's default, one worker per core).
runtime_of() {
	curl -fs --max-time 10 "$base_url/diagnostics" |
		sed -n 's/.*"runtime":{"flavor":"\([a-z_]*\)","worker_threads":\([0-9]*\)}.*/\1, \2 worker(s)/p' |
		grep . || echo "not reported"
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

# "user sys" clock ticks of the database server under test ($db: pg or mongo): the postmaster,
# its live backends and the backends it has reaped; mongod (one process). Read from the local
# stack's pid files; "0 0" when they are not there (the report then says 0).
db_ticks() {
	local pid
	if [[ $db == pg ]]; then
		pid=$(head -n1 .local/pg/data/postmaster.pid 2>/dev/null) || pid=''
		[[ -n $pid && -r /proc/$pid/stat ]] || {
			echo "0 0"
			return
		}
		# Backends that are gone by now are in the postmaster's reaped-children times; read the
		# live ones first, so one reaped in between counts twice rather than not at all (and
		# `measure` waits for a client's backends to be reaped before it reads).
		{
			for child in $(pgrep -P "$pid"); do
				sed 's/^.*) //' "/proc/$child/stat" 2>/dev/null | awk '{ print $12, $13 }' || true
			done
			sed 's/^.*) //' "/proc/$pid/stat" | awk '{ print $12 + $14, $13 + $15 }'
		} | awk '{ u += $1; s += $2 } END { print u + 0, s + 0 }'
	else
		pid=$(cat .local/mongo/mongod.pid 2>/dev/null) || pid=''
		if [[ -n $pid && -r /proc/$pid/stat ]]; then cpu_ticks "$pid"; else echo "0 0"; fi
	fi
}

# After pgbench: until the backends it opened have ended (at most 5 s), so their CPU time is in
# the postmaster's reaped-children times when `db_ticks` reads them.
wait_for_backends_to_end() {
	for _ in $(seq 100); do
		[[ $(psql_admin -tAc "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgbench'") == 0 ]] &&
			break
		sleep 0.05
	done
	sleep 0.2 # the postmaster reaps an ended backend a moment later
}

# measure KIND COMMAND...: runs a load (KIND wrk: wrk against the running service; pgbench; loop:
# the driver loop) and prints "rate requests" and the CPU microseconds per request, user and
# system apart, of the service (0 unless KIND is wrk), the database server and the load client
# itself: "rate requests svc_user svc_sys db_user db_sys client_user client_sys". Fails on errors.
measure() {
	local kind=$1
	shift
	local service0=(0 0) service1=(0 0) db0 db1 client requests rate
	[[ $kind == wrk ]] && read -r -a service0 < <(cpu_ticks "$service_pid")
	read -r -a db0 < <(db_ticks)
	# `times` in the subshell reports what its one child, the load client, used.
	client=$( (
		"$@" >"$work/out.txt" 2>"$work/err.txt" || exit 1
		times
	) | awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); print u[1] * 60 + u[2], s[1] * 60 + s[2] }') || {
		cat "$work/out.txt" "$work/err.txt" >&2
		die "$kind run failed: $*"
	}
	[[ $kind == pgbench ]] && wait_for_backends_to_end
	read -r -a db1 < <(db_ticks)
	[[ $kind == wrk ]] && read -r -a service1 < <(cpu_ticks "$service_pid")
	case $kind in
	wrk)
		if grep -qE 'Non-2xx|Socket errors' "$work/out.txt"; then
			cat "$work/out.txt" >&2
			die "wrk saw errors from $base_url: $*"
		fi
		requests=$(awk '/ requests in / { print $1 }' "$work/out.txt")
		rate=$(awk '/^Requests\/sec/ { print $2 }' "$work/out.txt")
		;;
	pgbench)
		requests=$(awk '/^number of transactions actually processed/ { print $NF }' "$work/out.txt")
		rate=$(awk '/^tps = / { print $3 }' "$work/out.txt")
		;;
	loop)
		rate=$(cat "$work/out.txt")
		requests=$(awk -v r="$rate" -v d="$duration" 'BEGIN { printf "%d", r * d }')
		;;
	esac
	[[ ${requests:-0} -gt 0 ]] || die "$kind answered nothing: $(cat "$work/out.txt")"
	read -r -a client <<<"$client"
	awk -v rate="$rate" -v n="$requests" -v hz="$ticks_per_second" \
		-v su=$((service1[0] - service0[0])) -v ss=$((service1[1] - service0[1])) \
		-v du=$((db1[0] - db0[0])) -v ds=$((db1[1] - db0[1])) -v cu="${client[0]}" -v cs="${client[1]}" \
		'BEGIN { t = 1e6 / hz / n; printf "%.1f %d %.1f %.1f %.1f %.1f %.1f %.1f\n",
			rate, n, su * t, ss * t, du * t, ds * t, cu * 1e6 / n, cs * 1e6 / n }'
}

# run_wrk SCRIPT SECONDS: measure wrk with SCRIPT against the running service.
run_wrk() {
	measure wrk wrk -t"$threads" -c"$connections" -d"$2s" -s "$work/$1.lua" "$base_url"
}

# warm_up SCRIPT: 2 s of wrk with SCRIPT, then waits until the service answers a GET within a
# second again (for at most about a minute): wrk abandons the requests in flight when it stops, and
# orders-mongo of 7a40a78 then stalls for many seconds (about 19 s here), which the measured run
# must not start in. Says so when it waited.
warm_up() {
	wrk -t"$threads" -c"$connections" -d2s -s "$work/$1.lua" "$base_url" >/dev/null
	local started=$SECONDS tries
	for tries in $(seq 60); do
		[[ $(curl -s -m 1 -o /dev/null -w '%{http_code}' "$base_url/orders/1") == 200 ]] && break
		((tries < 60)) || die "$base_url did not answer a GET within a second for a minute after the warm-up"
		sleep 0.5
	done
	if ((SECONDS - started > 1)); then
		echo "service-bench: $base_url answered again $((SECONDS - started)) s after the $1 warm-up" >&2
	fi
}

pgbench_run() { # $1 = protocol
	measure pgbench "${pg_env[@]}" "$PG_BIN/pgbench" -n -M "$1" -c "$pool" -j "$threads" -T "$duration" \
		-f "$work/get.sql" "$url"
}

mongo_run() {
	measure loop "$bin/examples/find_one_loop" "$MONGODB_URI" "$database" "$pool" "$connections" "$duration" "$orders" \
		"$worker_threads"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# compare LABEL DIRECT_LABEL DIRECT_COMMAND...: PAIRS alternating runs of the running service's
# GET by id and of the direct command, one line each, then the medians. Besides requests per
# second it prints where the CPU of one request goes (database, service, load client, user+sys
# microseconds) and the ratio those costs predict when the machine's CPUs are the limit:
# (database + direct client) / (database + service + wrk), which other load on a shared machine
# disturbs far less than the throughput ratio.
compare() {
	local label=$1 direct_label=$2
	shift 2
	local ratios=() cpu_ratios=() bounds=() client_bounds=() services=() directs=()
	warm_up get
	for pair in $(seq "$pairs"); do
		local measured rate su ss du ds cu cs direct drate ddu dds dcu dcs costs
		local cpu_ratio db_cpu service_cpu wrk_cpu path_cpu direct_db_cpu direct_client_cpu direct_cpu bound client_bound
		measured=$(run_wrk get "$duration")
		read -r rate _ su ss du ds cu cs <<<"$measured"
		direct=$("$@")
		read -r drate _ _ _ ddu dds dcu dcs <<<"$direct"
		services+=("$rate")
		directs+=("$drate")
		ratios+=("$(awk -v a="$rate" -v b="$drate" 'BEGIN { printf "%.3f", a / b }')")
		# Where one request's CPU goes on each path, the CPU ratio, and two ceilings: the ratio a
		# service costing nothing would reach (the database's and wrk's CPU per request remain), and
		# one costing what the direct client costs (for orders-mongo the same driver call, which
		# the service cannot do for less; for orders-pg pgbench's libpq, a lean reference).
		costs=$(awk -v su="$su" -v ss="$ss" -v du="$du" -v ds="$ds" -v cu="$cu" -v cs="$cs" \
			-v ddu="$ddu" -v dds="$dds" -v dcu="$dcu" -v dcs="$dcs" 'BEGIN {
			db = du + ds; wrk = cu + cs; path = su + ss + db + wrk; client = dcu + dcs; direct = ddu + dds + client
			printf "%.3f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.3f %.3f\n", direct / path, db, su + ss, wrk,
				path, ddu + dds, client, direct, direct / (db + wrk), direct / (db + wrk + client) }')
		read -r cpu_ratio db_cpu service_cpu wrk_cpu path_cpu direct_db_cpu direct_client_cpu direct_cpu bound client_bound \
			<<<"$costs"
		cpu_ratios+=("$cpu_ratio")
		bounds+=("$bound")
		client_bounds+=("$client_bound")
		printf '  pair %d: %-22s %8.0f req/s | %-20s %8.0f/s | ratio %s\n' \
			"$pair" "$label" "$rate" "$direct_label" "$drate" "${ratios[-1]}"
		printf '          CPU us/request: database %5.1f + service %5.1f (user %4.1f, sys %4.1f) + wrk %4.1f = %5.1f | database %5.1f + client %4.1f = %5.1f | CPU ratio %s\n' \
			"$db_cpu" "$service_cpu" "$su" "$ss" "$wrk_cpu" "$path_cpu" "$direct_db_cpu" "$direct_client_cpu" \
			"$direct_cpu" "$cpu_ratio"
	done
	printf '  median: %-22s %8.0f req/s | %-20s %8.0f/s | ratio %s | CPU ratio %s\n' \
		"$label" "$(printf '%s\n' "${services[@]}" | median)" "$direct_label" \
		"$(printf '%s\n' "${directs[@]}" | median)" "$(printf '%s\n' "${ratios[@]}" | median)" \
		"$(printf '%s\n' "${cpu_ratios[@]}" | median)"
	printf '          ratio a service would reach costing nothing: %s; costing what the direct client costs: %s\n' \
		"$(printf '%s\n' "${bounds[@]}" | median)" "$(printf '%s\n' "${client_bounds[@]}" | median)"
}

# GET by id through each service against the direct client, PAIRS alternating runs each.
service_vs_direct() {
	printf '\nGET /orders/{id}, service vs direct\n'
	start_build after orders-pg prepared
	printf '  orders-pg runtime: %s\n' "$(runtime_of)"
	compare "orders-pg prepared" "pgbench -M prepared" pgbench_run prepared
	stop_service
	start_build after orders-pg unprepared
	compare "orders-pg unprepared" "pgbench -M extended" pgbench_run extended
	stop_service
	start_build after orders-mongo
	printf '  orders-mongo runtime: %s (the driver loop: WORKER_THREADS=%s too)\n' "$(runtime_of)" "$worker_threads"
	compare "orders-mongo" "driver find_one loop" mongo_run
	stop_service
}

endpoints=(get:get customer:by-customer product:by-product insert:insert status:status-update)
total() { awk -v u="$1" -v s="$2" 'BEGIN { print u + s }'; }

# The per-endpoint measurements: cpu_per_endpoint, before_and_after, instructions_per_endpoint.
# shellcheck source=scripts/service-bench-endpoints.sh
source scripts/service-bench-endpoints.sh

printf 'service-bench: %s orders; wrk -t%s -c%s for %ss against pgbench -c %s -j %s / the driver loop (%s tasks), pool %s; %s pairs; WORKER_THREADS=%s\n' \
	"$orders" "$threads" "$connections" "$duration" "$pool" "$threads" "$connections" "$pool" "$pairs" "$worker_threads"
nproc_line="$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'machine: %s; scheduler autogroup %s\n' "$nproc_line" "$autogroup_line"
if [[ $instructions != only ]]; then
	service_vs_direct
	if [[ -n $before_dir ]]; then before_and_after; else cpu_per_endpoint; fi
fi
if [[ $instructions != 0 ]]; then instructions_per_endpoint; fi
printf '\nThe machine may be shared: compare figures from one run only.\n'
