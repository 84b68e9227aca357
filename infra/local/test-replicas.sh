#!/usr/bin/env bash
# Checks the replicated local stack (issue 42, point 1) end to end: starts it with
# `stack.sh start --replicas 3 --rtt 0.5 --only-replicas` (the single servers are left alone),
# checks the members' roles, PostgreSQL's synchronous replication, the round-trip times and the
# budgets, runs COMMAND (if given) while the stack is up with its REPLICA_* variables exported
# (scripts/test.sh: the services' replica tests, so CI starts one replicated stack, not two),
# stops it and checks that nothing is left. Needs root. Exits non-zero on any failed check (the
# command's failure is one) and ends with "N passed, N failed". About a minute without a command.
#
# Usage: infra/local/test-replicas.sh [COMMAND ARGS...]   (RTT_MS=0.5 and RTT_TOLERANCE_MS=0.1 may be set)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STACK="$REPO/infra/local/stack.sh"
RTT_MS="${RTT_MS:-0.5}"
RTT_TOLERANCE_MS="${RTT_TOLERANCE_MS:-0.1}"
PREFIX="${STACK_REPLICA_PREFIX:-orders}"
STARTED_AT=$SECONDS

passed=0
failed=0
ok() {
	passed=$((passed + 1))
	printf 'ok    %s\n' "$*"
}
not_ok() {
	failed=$((failed + 1))
	printf 'FAIL  %s\n' "$*"
}
check() { # DESCRIPTION CMD...: ok when CMD succeeds
	local what="$1"
	shift
	if "$@"; then ok "$what"; else not_ok "$what"; fi
}

[[ "$(id -u)" == 0 ]] || {
	echo "test-replicas: needs root (network namespaces, cgroups)" >&2
	exit 2
}
# Namespaces of a killed run outlive its processes: with nothing running in them they are
# leftovers, and stop --only-replicas clears them. With a process inside, someone's replicas run.
leftover_namespaces() { ip netns list | awk '{ print $1 }' | grep -E "^$PREFIX-(lan|mongo|pg|etcd)" || true; }
if [[ -n "$(leftover_namespaces)" ]]; then
	for ns in $(leftover_namespaces); do
		if [[ -n "$(ip netns pids "$ns" 2>/dev/null)" ]]; then
			echo "test-replicas: replicas are running already (namespace $ns has processes); stop them first: $STACK stop --only-replicas" >&2
			exit 2
		fi
	done
	echo "test-replicas: clearing a killed run's empty namespaces: $(leftover_namespaces | tr '\n' ' ')"
	bash "$STACK" stop --only-replicas >/dev/null
fi
command -v ping >/dev/null || {
	echo "test-replicas: needs ping (Debian: apt-get install iputils-ping)" >&2
	exit 2
}

stopped=""
finish() {
	[[ -n "$stopped" ]] || bash "$STACK" stop --only-replicas >/dev/null 2>&1 || true
}
trap finish EXIT

# --- start ---------------------------------------------------------------------------------------
t0=$SECONDS
if bash "$STACK" start --replicas 3 --rtt "$RTT_MS" --only-replicas >/tmp/test-replicas-start.$$.log 2>&1; then
	ok "stack.sh start --replicas 3 --rtt $RTT_MS ($((SECONDS - t0)) s)"
else
	not_ok "stack.sh start --replicas 3 --rtt $RTT_MS"
	tail -n 40 /tmp/test-replicas-start.$$.log
	echo "$passed passed, $failed failed"
	exit 1
fi
grep -E "budget|calibrated" /tmp/test-replicas-start.$$.log | sed 's/^/      /'
rm -f /tmp/test-replicas-start.$$.log
eval "$(bash "$STACK" env)"
PY="$REPO/.venv/bin/python"
PSQL=("$PG_BIN/psql" -X -q -t -A -v ON_ERROR_STOP=1)

check "env prints REPLICA_MONGODB_URI with three members and replicaSet=rs0" \
	grep -qE '^mongodb://(198\.1[89]\.[0-9.]+:27017,){2}198\.1[89]\.[0-9.]+:27017/\?replicaSet=rs0$' <<<"$REPLICA_MONGODB_URI"
check "env prints REPLICA_DATABASE_URL with three hosts and target_session_attrs=read-write" \
	grep -qE '^postgres://postgres@(198\.1[89]\.[0-9.]+:5432,){2}198\.1[89]\.[0-9.]+:5432/orders\?target_session_attrs=read-write$' <<<"$REPLICA_DATABASE_URL"

# --- MongoDB ---------------------------------------------------------------------------------------
mongo_roles="$("$PY" - "$REPLICA_MONGODB_URI" <<'EOF'
import sys
from pymongo import MongoClient
client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
status = client.admin.command("replSetGetStatus")
print(" ".join(sorted(m["stateStr"] for m in status["members"])))
EOF
)" || mongo_roles="(no answer)"
check "MongoDB replSetGetStatus: one PRIMARY, two SECONDARY (got: $mongo_roles)" test "$mongo_roles" == "PRIMARY SECONDARY SECONDARY"

mongo_write="$("$PY" - "$REPLICA_MONGODB_URI" <<'EOF'
import sys
from pymongo import MongoClient, ReadPreference
from pymongo.write_concern import WriteConcern
client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
orders = client.orders.get_collection("replica_check", write_concern=WriteConcern(w="majority", j=True))
with client.start_session() as session:
    orders.insert_one({"check": "majority"}, session=session)
    written = session.operation_time
# A majority of three is the primary and one secondary: once the insert is acknowledged, at
# least two members have its oplog entry.
have_it = 0
for host in sys.argv[1].removeprefix("mongodb://").split("/")[0].split(","):
    member = MongoClient(host, directConnection=True, serverSelectionTimeoutMS=5000)
    if member.local["oplog.rs"].find_one({"ns": "orders.replica_check", "ts": written}):
        have_it += 1
print(have_it)
EOF
)" || mongo_write=0
check "MongoDB: a w:majority, j:true insert, once acknowledged, is in the oplog of at least 2 members (of $mongo_write)" test "${mongo_write:-0}" -ge 2

# --- PostgreSQL / Patroni ----------------------------------------------------------------------------
patroni_roles="$("$PY" - "$REPLICA_PATRONI_URLS" <<'EOF'
import json, sys, urllib.request
for url in sys.argv[1].split(","):
    try:
        with urllib.request.urlopen(url + "/cluster", timeout=3) as answer:
            members = json.load(answer)["members"]
        break
    except OSError:
        continue
else:
    print("(no answer)")
    sys.exit(0)
print(" ".join(sorted(f"{m['role']}:{m['state']}" for m in members)))
EOF
)"
check "Patroni: a leader, a sync standby and a replica, both streaming (got: $patroni_roles)" \
	test "$patroni_roles" == "leader:running replica:streaming sync_standby:streaming"

primary_url="$REPLICA_DATABASE_URL"
sync_host="$("$PY" - "$REPLICA_PATRONI_URLS" <<'EOF'
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1].split(",")[0] + "/cluster", timeout=3) as answer:
    print(next(m["host"] for m in json.load(answer)["members"] if m["role"] == "sync_standby"))
EOF
)" || sync_host=""
sync_name="$("$PY" - "$REPLICA_PATRONI_URLS" <<'EOF'
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1].split(",")[0] + "/cluster", timeout=3) as answer:
    print(next(m["name"] for m in json.load(answer)["members"] if m["role"] == "sync_standby"))
EOF
)" || sync_name=""
standby_url="postgres://postgres@$sync_host:5432/orders"

ssn="$("${PSQL[@]}" "$primary_url" -c "SHOW synchronous_standby_names")" || ssn=""
check "synchronous_standby_names on the primary names the sync standby $sync_name (got: '$ssn')" \
	grep -q "$sync_name" <<<"$ssn"
sc="$("${PSQL[@]}" "$primary_url" -c "SHOW synchronous_commit")" || sc=""
check "synchronous_commit on the primary is on by default (got: '$sc')" test "$sc" == on
in_recovery="$("${PSQL[@]}" "$standby_url" -c "SELECT pg_is_in_recovery()")" || in_recovery=""
check "the sync standby $sync_host is a standby (pg_is_in_recovery: $in_recovery)" test "$in_recovery" == t

# synchronous_commit = on: the commit returns once the sync standby has flushed its WAL.
commit_lsn="$("${PSQL[@]}" "$primary_url" \
	-c "CREATE TABLE IF NOT EXISTS replica_check (id bigserial PRIMARY KEY, note text NOT NULL)" \
	-c "INSERT INTO replica_check (note) VALUES ('on')" -c "SELECT pg_current_wal_insert_lsn()")" || commit_lsn=""
flushed="$("${PSQL[@]}" "$standby_url" -c "SELECT pg_last_wal_receive_lsn() >= '${commit_lsn:-0/0}'::pg_lsn")" || flushed=""
check "synchronous_commit=on: after the commit, the sync standby has flushed the WAL up to it ($commit_lsn: $flushed)" test "$flushed" == t
# synchronous_commit = remote_apply: the commit returns once the sync standby has applied it,
# so a read there right after the commit sees the row.
marker="row-$$-$RANDOM"
"${PSQL[@]}" "$primary_url" -c "SET synchronous_commit = remote_apply" \
	-c "INSERT INTO replica_check (note) VALUES ('$marker')" >/dev/null || true
seen="$("${PSQL[@]}" "$standby_url" -c "SELECT count(*) FROM replica_check WHERE note = '$marker'")" || seen=""
check "synchronous_commit=remote_apply: a row written on the primary is visible on the sync standby right after the commit" test "$seen" == 1
first_row="$("${PSQL[@]}" "$standby_url" -c "SELECT count(*) FROM replica_check WHERE note = 'on'")" || first_row=""
check "the row committed with synchronous_commit=on is on the sync standby too" test "$first_row" == 1

# --- the network --------------------------------------------------------------------------------
median_rtt_ms() { # NS ADDRESS: median of 20 pings after a first one
	local -a in_ns=()
	[[ -z "$1" ]] || in_ns=(ip netns exec "$1")
	"${in_ns[@]}" ping -n -c 21 -i 0.05 -W 1 "$2" | sed -n 's/.*time=\([0-9.]*\).*/\1/p' | tail -n +2 |
		sort -g | awk '{ t[NR] = $1 } END { if (NR == 0) { print "none"; exit } print t[int((NR + 1) / 2)] }'
}
near_rtt() { awk -v m="$1" -v r="$RTT_MS" -v t="$RTT_TOLERANCE_MS" 'BEGIN { exit !(m != "none" && m >= r - t && m <= r + t) }'; }
mongo1_ip="${REPLICA_MONGODB_URI#mongodb://}"
mongo1_ip="${mongo1_ip%%:*}"
pg2_ip="$(cut -d, -f2 <<<"${REPLICA_DATABASE_URL#postgres://postgres@}" | cut -d: -f1)"
rtt="$(median_rtt_ms "$PREFIX-mongo1" "$pg2_ip")"
check "ping from $PREFIX-mongo1 to $PREFIX-pg2 ($pg2_ip): median RTT $rtt ms, ~$RTT_MS" near_rtt "$rtt"
rtt="$(median_rtt_ms "$PREFIX-pg1" "$(cut -d, -f3 <<<"${REPLICA_DATABASE_URL#postgres://postgres@}" | cut -d: -f1)")"
check "ping from $PREFIX-pg1 to $PREFIX-pg3: median RTT $rtt ms, ~$RTT_MS" near_rtt "$rtt"
rtt="$(median_rtt_ms "" "$mongo1_ip")"
check "ping from the root namespace (the services' side) to $PREFIX-mongo1: median RTT $rtt ms, ~$RTT_MS" near_rtt "$rtt"
routes_ok=1
for ns in $(ip netns list | awk '{ print $1 }' | grep -E "^$PREFIX-(etcd|mongo[0-9]|pg[0-9])$"); do
	if ip -n "$ns" route show | grep -q '^default'; then routes_ok=0; fi
	if ip -n "$ns" route show | grep -vqE '^198\.1[89]\.'; then routes_ok=0; fi
done
check "no member namespace has a default route or a route outside 198.18.0.0/15" test "$routes_ok" == 1
check "the bridge has no uplink: only the members' and the root namespace's veths are its ports" \
	test "$(ip -n "$PREFIX-lan" -o link show master br0 | awk -F': ' '{ print $2 }' | cut -d@ -f1 | sort | tr '\n' ' ')" == "etcd mongo1 mongo2 mongo3 pg1 pg2 pg3 root "

# --- budgets ---------------------------------------------------------------------------------------
budgets="$(for ns in "$PREFIX"-mongo{1..3} "$PREFIX"-pg{1..3}; do
	pid="$(ip netns pids "$ns" | while read -r p; do [[ "$(cat "/proc/$p/comm")" =~ ^(mongod|postgres)$ ]] && echo "$p"; done | head -1)"
	bash "$REPO/infra/local/budget.sh" show "$pid" | sed -E 's/ cgroup=.*//'
done | sort | uniq -c)"
check "every member of both engines has the same budget, 0.25 CPU and 2 GiB ($(tr -s ' \n' ' ' <<<"$budgets"))" \
	grep -qE '^ *6 cpus=0.25 period_us=10000 memory=2147483648$' <<<"$budgets"

# --- the caller's command, on the stack just checked ---------------------------------------------
if (($# > 0)); then
	t0=$SECONDS
	if (
		export REPLICA_DATABASE_URL REPLICA_MONGODB_URI REPLICA_PATRONI_URLS
		"$@"
	); then ok "while the stack was up: $* ($((SECONDS - t0)) s)"; else not_ok "while the stack was up: $*"; fi
fi

# --- stop --------------------------------------------------------------------------------------------
t0=$SECONDS
if bash "$STACK" stop --only-replicas >/dev/null 2>&1; then ok "stack.sh stop --only-replicas ($((SECONDS - t0)) s)"; else not_ok "stack.sh stop --only-replicas"; fi
stopped=1
check "no namespace $PREFIX-* left" test -z "$(ip netns list | grep -E "^$PREFIX-" || true)"
check "no root-namespace veth $PREFIX-r0 left" bash -c "! ip link show $PREFIX-r0 >/dev/null 2>&1"
check "no member cgroup left" test -z "$(find /sys/fs/cgroup -maxdepth 3 -type d -path "*/orders-bench/$PREFIX-*" -print -quit 2>/dev/null)"
# A process ended by stop may stay a zombie for a moment, until whoever inherited it reaps it
# (seen here: three orders-netdelay <defunct> right after stop, gone a second later).
replica_processes() { pgrep -af "$REPO/.local/replicas|orders-netdelay" | grep -v pgrep || true; }
no_replica_process() {
	local _
	for _ in {1..20}; do
		[[ -n "$(replica_processes)" ]] || return 0
		sleep 0.25
	done
	replica_processes | sed 's/^/      left: /'
	return 1
}
check "no replica process left (mongod, patroni, postgres, etcd, orders-netdelay of .local/replicas) within 5 s" \
	no_replica_process
check "no replica data left (.local/replicas)" test ! -e "$REPO/.local/replicas"
check "stack.sh stop --only-replicas again succeeds (idempotent)" bash -c "bash '$STACK' stop --only-replicas >/dev/null 2>&1"

echo "test-replicas: $((SECONDS - STARTED_AT)) s"
echo "$passed passed, $failed failed"
((failed == 0))
