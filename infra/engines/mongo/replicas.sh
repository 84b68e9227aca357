#!/usr/bin/env bash
# MongoDB's replicated deployment on the local stack (stack.sh start --replicas N): a replica set
# rs0 of N members of the pinned mongod, member i in namespace <prefix>-mongo<i> at
# <subnet>.(10+i):27017, each inside the member budget (infra/local/replicas.sh).
#
# The wheel's mongod comes without a shell (no mongo, no mongosh; neither is on PyPI or in
# Debian), so the set is initiated, and waited for, with pymongo from the stack's virtualenv
# (pinned in replicas.sh): the Python venv is there already (the stack's wheels and Patroni live
# in it), a wheel installs in seconds, where a Rust client would be one more crate to compile on
# a two-core machine before the first start.
# shellcheck disable=SC2154 # MONGOD, VENV, REPLICA_* ... come from stack.sh and replicas.sh

MONGO_RS_NAME=rs0
MONGO_RS_PORT=27017

mongo_replicas_ip() { replica_ip $((10 + $1)); } # MEMBER NUMBER

# host:port of every member, comma-separated.
mongo_replicas_hosts() {
	local i sep=""
	for ((i = 1; i <= REPLICA_COUNT; i++)); do
		printf '%s%s:%s' "$sep" "$(mongo_replicas_ip "$i")" "$MONGO_RS_PORT"
		sep=,
	done
}

mongo_replicas_start() { # COUNT
	local count="$1" i ip dir cache_gb=1 out
	[[ "$REPLICA_MEMORY" == none ]] || cache_gb="$(budget_wt_cache_gb "$REPLICA_MEMORY")"
	for ((i = 1; i <= count; i++)); do
		ip="$(mongo_replicas_ip "$i")"
		dir="$REPLICA_DIR/mongo$i"
		mkdir -p "$dir/data"
		replica_member_up "mongo$i" "$ip"
		say "starting mongod rs0 member $i on $ip:$MONGO_RS_PORT (WiredTiger cache $cache_gb GB; log $dir/mongod.log)"
		if ! out="$(replica_run_budgeted "mongo$i" "$MONGOD" --replSet "$MONGO_RS_NAME" \
			--bind_ip "$ip,127.0.0.1" --port "$MONGO_RS_PORT" --nounixsocket --dbpath "$dir/data" \
			--logpath "$dir/mongod.log" --logappend --wiredTigerCacheSizeGB "$cache_gb" \
			--pidfilepath "$dir/mongod.pid" --fork 2>&1)"; then
			printf '%s\n' "$out" >&2
			show_log_tail "$dir/mongod.log"
			die "mongod rs0 member $i failed to start"
		fi
	done
	say "initiating replica set $MONGO_RS_NAME ($(mongo_replicas_hosts)) and waiting for a primary"
	mongo_replicas_py initiate "$MONGO_RS_NAME" "$(mongo_replicas_hosts)" ||
		die "replica set $MONGO_RS_NAME did not come up (logs: $REPLICA_DIR/mongo*/mongod.log)"
}

mongo_replicas_stop() {
	local i pid
	for i in {1..9}; do
		pid="$(tr -dc '0-9' 2>/dev/null <"$REPLICA_DIR/mongo$i/mongod.pid" || true)"
		[[ -n "$pid" && "$(cat "/proc/$pid/comm" 2>/dev/null)" == mongod ]] || continue
		say "stopping mongod rs0 member $i (pid $pid)"
		kill -TERM "$pid" 2>/dev/null || true
	done
	for i in {1..9}; do
		[[ -e "/var/run/netns/$(replica_ns "mongo$i")" ]] || continue
		replica_end_namespace_comm "$(replica_ns "mongo$i")" mongod 60
	done
}

# Waits up to SECONDS for the processes named COMM in namespace NS to end.
replica_end_namespace_comm() { # NS COMM SECONDS
	local waited=0 pid left
	while :; do
		left=""
		for pid in $(ip netns pids "$1" 2>/dev/null); do
			[[ "$(cat "/proc/$pid/comm" 2>/dev/null)" != "$2" ]] || left+="$pid "
		done
		[[ -n "$left" ]] || return 0
		((waited < $3 * 10)) || return 1
		sleep 0.1
		waited=$((waited + 1))
	done
}

mongo_replicas_status() {
	local i pid rc=0
	for ((i = 1; i <= REPLICA_COUNT; i++)); do
		pid="$(tr -dc '0-9' 2>/dev/null <"$REPLICA_DIR/mongo$i/mongod.pid" || true)"
		if [[ -n "$pid" && "$(cat "/proc/$pid/comm" 2>/dev/null)" == mongod ]]; then
			say "mongod rs0 member $i: running on $(mongo_replicas_ip "$i"):$MONGO_RS_PORT (pid $pid); $(budget_line "$pid")"
		else
			say "mongod rs0 member $i: stopped"
			rc=1
		fi
	done
	mongo_replicas_py status "$MONGO_RS_NAME" "$(mongo_replicas_hosts)" | sed 's/^/stack: /' || rc=1
	return "$rc"
}

mongo_replicas_env() {
	STACK_ENV+=(REPLICA_MONGODB_URI "mongodb://$(mongo_replicas_hosts)/?replicaSet=$MONGO_RS_NAME")
}

# The replica set's administration through pymongo: initiate NAME HOSTS | status NAME HOSTS.
mongo_replicas_py() {
	"$VENV/bin/python" - "$@" <<'EOF'
import sys
import time

from pymongo import MongoClient
from pymongo.errors import OperationFailure, PyMongoError

command, name, hosts = sys.argv[1], sys.argv[2], sys.argv[3].split(",")


def member_states(client):
    status = client.admin.command("replSetGetStatus")
    return [(m["name"], m["stateStr"]) for m in status["members"]]


if command == "initiate":
    first = MongoClient(hosts[0], directConnection=True, serverSelectionTimeoutMS=30000)
    config = {"_id": name, "members": [{"_id": i, "host": h} for i, h in enumerate(hosts)]}
    try:
        first.admin.command("replSetInitiate", config)
    except OperationFailure as e:
        if e.code != 23:  # AlreadyInitialized
            raise
    deadline = time.monotonic() + 120
    while True:
        try:
            states = member_states(first)
            roles = sorted(s for _, s in states)
            if roles.count("PRIMARY") == 1 and roles.count("SECONDARY") == len(hosts) - 1:
                primary = next(n for n, s in states if s == "PRIMARY")
                print(f"stack: replica set {name}: primary {primary}, {len(hosts) - 1} secondaries")
                break
        except PyMongoError:
            states = []
        if time.monotonic() > deadline:
            print(f"stack: error: replica set {name} not ready after 120 s: {states}", file=sys.stderr)
            sys.exit(1)
        time.sleep(0.5)
elif command == "status":
    client = MongoClient(",".join(hosts), replicaSet=name, serverSelectionTimeoutMS=5000)
    try:
        for host, state in member_states(client):
            print(f"replica set {name}: {host} {state}")
    except PyMongoError as e:
        print(f"replica set {name}: no answer ({e.__class__.__name__})")
        sys.exit(1)
EOF
}
