#!/usr/bin/env bash
# Monitoring for the local stack: the exporters of its three servers and a real Prometheus, the same
# jobs and metric names as on the droplets and under docker compose, so the dashboard's queries
# (infra/monitoring/grafana/dashboards/orders.json) run here unchanged. No Grafana: Debian has no
# package of it; open Prometheus' own graph page, or point a Grafana at this Prometheus.
#
#   postgres_exporter   Debian's prometheus-postgres-exporter 0.11.1 with the custom queries of
#                       infra/monitoring/exporters/postgres-queries.yaml, on the orders database;
#                       two of them: orders-pg's server and the hybrid layout's (label `service`
#                       orders-pg / orders-pg-hybrid; MONITOR_PGH_SERVICE= leaves the hybrid out)
#   MongoDB             mongo-serverstatus-exporter (infra/monitoring/src): serverStatus with the
#                       names of Percona's mongodb_exporter (Debian's 2018 mongodb exporter cannot
#                       talk to MongoDB 6.0)
#   node_exporter       Debian's prometheus-node-exporter 1.5.0: this machine's CPU, memory, disks
#   Prometheus          Debian's prometheus 2.42.0, scraping the exporters and the services,
#                       receiving remote writes from k6 and `orders-bench load --prometheus-rw`
#
# Everything listens on 127.0.0.1; data, logs, pid files and the generated configuration live in
# .local/monitor/ (MONITOR_DIR). See infra/local/README.md ("Monitoring").
#
# `start --replicas` watches the replicated stack (stack.sh start --replicas) instead of the single
# servers: one postgres_exporter and one mongo-serverstatus-exporter per member, at the members'
# addresses on the bridge (taken from REPLICA_DATABASE_URL and REPLICA_MONGODB_URI, or from
# `stack.sh env`), each target labelled `member` with its member's host:port, on the ports from
# MONITOR_REPLICA_PG_EXPORTER_PORT (19287) and MONITOR_REPLICA_MONGO_EXPORTER_PORT (19316) up.
#
# Usage: infra/local/monitor.sh {install|start [--replicas]|stop|status|env}
# Ports and targets (environment): MONITOR_PROMETHEUS_PORT (19090), MONITOR_PG_EXPORTER_PORT
# (19187), MONITOR_PGH_EXPORTER_PORT (19188), MONITOR_MONGO_EXPORTER_PORT (19216),
# MONITOR_NODE_EXPORTER_PORT (19100), MONITOR_PG_SERVICE (127.0.0.1:8080), MONITOR_MONGO_SERVICE
# (127.0.0.1:8081), MONITOR_PGH_SERVICE (127.0.0.1:8082; empty: no hybrid exporter or service),
# MONITOR_SCRAPE_INTERVAL (5s), MONITOR_PG_DSN and MONITOR_PGH_DSN (the local stack's orders
# databases), MONGODB_URI (the local stack's mongod), STACK_PG_PORT/STACK_PGH_PORT/STACK_MONGO_PORT
# (as for stack.sh), MONGO_EXPORTER_BIN (a built mongo-serverstatus-exporter; else cargo builds it).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIR="${MONITOR_DIR:-$REPO/.local/monitor}"
TARGETS="$DIR/targets"

# Debian 12 (bookworm) versions, pinned to the upstream release and Debian revision; the suffix
# is left open (`*`, apt's version glob) because the archive replaces a rebuild by its security
# update (2.42.0+ds-5+b6 became 2.42.0+ds-5+deb12u1 and the old one could no longer be installed).
PROMETHEUS_DEB="prometheus=2.42.0+ds-5*"
PG_EXPORTER_DEB="prometheus-postgres-exporter=0.11.1-3*"
NODE_EXPORTER_DEB="prometheus-node-exporter=1.5.0-1*"

PROM_PORT="${MONITOR_PROMETHEUS_PORT:-19090}"
PG_EXPORTER_PORT="${MONITOR_PG_EXPORTER_PORT:-19187}"
PGH_EXPORTER_PORT="${MONITOR_PGH_EXPORTER_PORT:-19188}"
MONGO_EXPORTER_PORT="${MONITOR_MONGO_EXPORTER_PORT:-19216}"
REPLICA_PG_EXPORTER_PORT="${MONITOR_REPLICA_PG_EXPORTER_PORT:-19287}"
REPLICA_MONGO_EXPORTER_PORT="${MONITOR_REPLICA_MONGO_EXPORTER_PORT:-19316}"
NODE_EXPORTER_PORT="${MONITOR_NODE_EXPORTER_PORT:-19100}"
PG_SERVICE="${MONITOR_PG_SERVICE:-127.0.0.1:8080}"
MONGO_SERVICE="${MONITOR_MONGO_SERVICE:-127.0.0.1:8081}"
PGH_SERVICE="${MONITOR_PGH_SERVICE-127.0.0.1:8082}"
SCRAPE_INTERVAL="${MONITOR_SCRAPE_INTERVAL:-5s}"
PG_DSN="${MONITOR_PG_DSN:-postgresql://postgres@127.0.0.1:${STACK_PG_PORT:-55432}/orders?sslmode=disable}"
PGH_DSN="${MONITOR_PGH_DSN:-postgresql://postgres@127.0.0.1:${STACK_PGH_PORT:-55433}/orders?sslmode=disable}"
MONGO_URI="${MONGODB_URI:-mongodb://127.0.0.1:${STACK_MONGO_PORT:-57017}}"

say() { printf 'monitor: %s\n' "$*"; }
die() {
	printf 'monitor: error: %s\n' "$*" >&2
	exit 1
}

check_port() {
	if ! [[ "$2" =~ ^[0-9]{1,5}$ ]] || ((10#$2 < 1 || 10#$2 > 65535)); then
		die "$1 must be a TCP port number (1-65535), got '$2'"
	fi
}

port_open() { timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# --- install ----------------------------------------------------------------------------------

# The pinned Debian packages whose command is missing (the version of one already there is kept).
missing_packages() {
	command -v prometheus >/dev/null || printf '%s\n' "$PROMETHEUS_DEB"
	command -v prometheus-postgres-exporter >/dev/null || printf '%s\n' "$PG_EXPORTER_DEB"
	command -v prometheus-node-exporter >/dev/null || printf '%s\n' "$NODE_EXPORTER_DEB"
}

cmd_install() {
	local -a need
	mapfile -t need < <(missing_packages)
	if ((${#need[@]} > 0)); then
		command -v apt-get >/dev/null || die "missing ${need[*]} and no apt-get: install Prometheus 2.42+, postgres_exporter 0.11.1 and node_exporter yourself"
		local sudo=''
		[[ "$(id -u)" == 0 ]] || sudo=sudo
		say "apt-get install ${need[*]} (their system services are neither started nor enabled)"
		# A policy-rc.d keeps the packages from starting their daemons on all interfaces.
		local policy=''
		if [[ ! -e /usr/sbin/policy-rc.d ]]; then
			policy=/usr/sbin/policy-rc.d
			$sudo sh -c "printf '#!/bin/sh\nexit 101\n' >$policy && chmod +x $policy"
		fi
		$sudo apt-get update -qq
		DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
			--no-install-recommends "${need[@]}" >/dev/null
		[[ -z "$policy" ]] || $sudo rm -f "$policy"
		if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
			local package
			for package in "${need[@]}"; do
				$sudo systemctl disable --quiet "${package%%=*}" 2>/dev/null || true
			done
		fi
	fi
	say "prometheus $(version_of prometheus), postgres_exporter $(version_of prometheus-postgres-exporter)," \
		"node_exporter $(version_of prometheus-node-exporter)"
}

version_of() { "$1" --version 2>&1 | awk 'NR == 1 { print $3 }'; }

mongo_exporter_bin() {
	if [[ -n "${MONGO_EXPORTER_BIN:-}" ]]; then
		[[ -x "$MONGO_EXPORTER_BIN" ]] || die "MONGO_EXPORTER_BIN=$MONGO_EXPORTER_BIN is not an executable"
		printf '%s\n' "$MONGO_EXPORTER_BIN"
		return
	fi
	# The whole workspace's features, so the build shares what `cargo build --workspace` compiled.
	(cd "$REPO" && cargo build --quiet --workspace --bin mongo-serverstatus-exporter) >&2 ||
		die "building mongo-serverstatus-exporter failed"
	printf '%s\n' "$REPO/target/debug/mongo-serverstatus-exporter"
}

# --- processes --------------------------------------------------------------------------------

pid_of() { # NAME: the pid of our running NAME, else nothing
	local file="$DIR/$1.pid" pid
	[[ -s "$file" ]] || return 0
	pid="$(cat "$file")"
	if [[ "$pid" =~ ^[0-9]+$ ]] && [[ -d "/proc/$pid" ]]; then printf '%s\n' "$pid"; fi
}

# Starts NAME (COMMAND...) in the background with its log in .local/monitor/NAME.log, then waits
# until PORT answers.
launch() {
	local name="$1" port="$2"
	shift 2
	if [[ -n "$(pid_of "$name")" ]]; then
		say "$name already running (pid $(pid_of "$name"))"
		return
	fi
	port_open "$port" && die "port $port is already in use; set the MONITOR_*_PORT variables"
	setsid "$@" >"$DIR/$name.log" 2>&1 </dev/null &
	printf '%s\n' "$!" >"$DIR/$name.pid"
	local waited=0
	until port_open "$port"; do
		if ((waited >= 300)) || [[ -z "$(pid_of "$name")" ]]; then
			tail -n 20 "$DIR/$name.log" >&2 || true
			die "$name did not come up on 127.0.0.1:$port"
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	say "$name on http://127.0.0.1:$port (pid $(pid_of "$name"), log $DIR/$name.log)"
}

stop_one() {
	local name="$1" pid
	pid="$(pid_of "$name")"
	if [[ -z "$pid" ]]; then
		say "$name not running"
		rm -f "$DIR/$name.pid"
		return
	fi
	kill -TERM "$pid" 2>/dev/null || true
	local waited=0
	while [[ -d "/proc/$pid" ]] && ((waited < 100)); do
		sleep 0.1
		waited=$((waited + 1))
	done
	[[ ! -d "/proc/$pid" ]] || kill -KILL "$pid" 2>/dev/null || true
	rm -f "$DIR/$name.pid"
	say "$name stopped"
}

# The shared infra/monitoring/prometheus.yml with this machine's target folder and interval.
write_prometheus_config() {
	mkdir -p "$TARGETS"
	sed -e "s|/etc/prometheus/targets/|$TARGETS/|g" \
		-e "s|^  scrape_interval: .*|  scrape_interval: $SCRAPE_INTERVAL|" \
		-e "s|^  scrape_timeout: .*|  scrape_timeout: $SCRAPE_INTERVAL|" \
		-e "s|\"localhost:9090\"|\"127.0.0.1:$PROM_PORT\"|" \
		"$REPO/infra/monitoring/prometheus.yml" >"$DIR/prometheus.yml"
	local hybrid_service='' hybrid_exporter=''
	if [[ -n "$PGH_SERVICE" ]]; then
		hybrid_service=",
  {\"targets\": [\"$PGH_SERVICE\"], \"labels\": {\"service\": \"orders-pg-hybrid\", \"backend\": \"pgh\"}}"
		hybrid_exporter=",
  {\"targets\": [\"127.0.0.1:$PGH_EXPORTER_PORT\"], \"labels\": {\"service\": \"orders-pg-hybrid\", \"engine\": \"postgres\"}}"
	fi
	cat >"$TARGETS/orders-local.json" <<EOF
[
  {"targets": ["$PG_SERVICE"], "labels": {"service": "orders-pg", "backend": "pg"}},
  {"targets": ["$MONGO_SERVICE"], "labels": {"service": "orders-mongo", "backend": "mongo"}}$hybrid_service
]
EOF
	if ((${#PG_MEMBERS[@]} > 0)); then
		member_targets orders-pg postgres "$REPLICA_PG_EXPORTER_PORT" "${PG_MEMBERS[@]}" >"$TARGETS/postgres-local.json"
		member_targets orders-mongo mongodb "$REPLICA_MONGO_EXPORTER_PORT" "${MONGO_MEMBERS[@]}" >"$TARGETS/mongodb-local.json"
	else
		cat >"$TARGETS/postgres-local.json" <<EOF
[
  {"targets": ["127.0.0.1:$PG_EXPORTER_PORT"], "labels": {"service": "orders-pg", "engine": "postgres"}}$hybrid_exporter
]
EOF
		cat >"$TARGETS/mongodb-local.json" <<EOF
[{"targets": ["127.0.0.1:$MONGO_EXPORTER_PORT"], "labels": {"service": "orders-mongo", "engine": "mongodb"}}]
EOF
	fi
	cat >"$TARGETS/node-local.json" <<EOF
[{"targets": ["127.0.0.1:$NODE_EXPORTER_PORT"], "labels": {"host": "local", "role": "local"}}]
EOF
	promtool check config "$DIR/prometheus.yml" >/dev/null 2>&1 ||
		die "the generated $DIR/prometheus.yml does not pass promtool check config"
}

# The file_sd targets of one exporter per member: SERVICE ENGINE FIRST_PORT MEMBER...
member_targets() {
	local service="$1" engine="$2" port="$3" member separator=''
	shift 3
	printf '[\n'
	for member in "$@"; do
		printf '%s  {"targets": ["127.0.0.1:%s"], "labels": {"service": "%s", "engine": "%s", "member": "%s"}}' \
			"$separator" "$port" "$service" "$engine" "$member"
		separator=$',\n'
		port=$((port + 1))
	done
	printf '\n]\n'
}

# The replicated stack's members (host:port), from REPLICA_DATABASE_URL and REPLICA_MONGODB_URI
# (or `stack.sh env`): sets PG_MEMBERS, MONGO_MEMBERS, PG_REPLICA_USER and PG_REPLICA_DB.
read_replica_members() {
	if [[ -z "${REPLICA_DATABASE_URL:-}" || -z "${REPLICA_MONGODB_URI:-}" ]]; then
		eval "$(bash "$REPO/infra/local/stack.sh" env 2>/dev/null | grep -E '^export REPLICA_(DATABASE_URL|MONGODB_URI)=' || true)"
	fi
	[[ -n "${REPLICA_DATABASE_URL:-}" && -n "${REPLICA_MONGODB_URI:-}" ]] ||
		die "--replicas: no replicated stack (REPLICA_DATABASE_URL and REPLICA_MONGODB_URI unset, and stack.sh env prints none): stack.sh start --replicas 3 first"
	local pattern='^postgres(ql)?://([^@/]+)@([^/]+)/([A-Za-z0-9_]+)'
	[[ "$REPLICA_DATABASE_URL" =~ $pattern ]] ||
		die "REPLICA_DATABASE_URL is not postgres://USER@HOST:PORT,.../DATABASE: '$REPLICA_DATABASE_URL'"
	PG_REPLICA_USER="${BASH_REMATCH[2]}"
	PG_REPLICA_DB="${BASH_REMATCH[4]}"
	IFS=, read -r -a PG_MEMBERS <<<"${BASH_REMATCH[3]}"
	pattern='^mongodb://([^/?]+)'
	[[ "$REPLICA_MONGODB_URI" =~ $pattern ]] ||
		die "REPLICA_MONGODB_URI is not mongodb://HOST:PORT,.../?...: '$REPLICA_MONGODB_URI'"
	IFS=, read -r -a MONGO_MEMBERS <<<"${BASH_REMATCH[1]}"
	local member
	for member in "${PG_MEMBERS[@]}" "${MONGO_MEMBERS[@]}"; do
		[[ "$member" =~ ^[A-Za-z0-9.-]+:[0-9]{1,5}$ ]] || die "a replica member is not HOST:PORT: '$member'"
	done
	check_port MONITOR_REPLICA_PG_EXPORTER_PORT "$((REPLICA_PG_EXPORTER_PORT + ${#PG_MEMBERS[@]} - 1))"
	check_port MONITOR_REPLICA_MONGO_EXPORTER_PORT "$((REPLICA_MONGO_EXPORTER_PORT + ${#MONGO_MEMBERS[@]} - 1))"
}

# postgres_exporter NAME on PORT for the database DSN, with the project's queries (one file for
# both layouts).
launch_postgres_exporter() {
	launch "$1" "$2" env DATA_SOURCE_NAME="$3" prometheus-postgres-exporter \
		--web.listen-address="127.0.0.1:$2" \
		--extend.query-path="$REPO/infra/monitoring/exporters/postgres-queries.yaml" \
		--no-collector.bgwriter
}

PG_MEMBERS=()
MONGO_MEMBERS=()

cmd_start() {
	case "${1:-}" in
	--replicas)
		read_replica_members
		PGH_SERVICE=''
		;;
	'') ;;
	*) die "start takes --replicas or nothing, got '$1'" ;;
	esac
	cmd_install
	mkdir -p "$DIR"
	local mongo_exporter i
	mongo_exporter="$(mongo_exporter_bin)"
	write_prometheus_config
	if ((${#PG_MEMBERS[@]} > 0)); then
		for i in "${!PG_MEMBERS[@]}"; do
			launch_postgres_exporter "postgres-exporter-member$((i + 1))" "$((REPLICA_PG_EXPORTER_PORT + i))" \
				"postgresql://$PG_REPLICA_USER@${PG_MEMBERS[i]}/$PG_REPLICA_DB?sslmode=disable"
		done
		for i in "${!MONGO_MEMBERS[@]}"; do
			launch "mongo-exporter-member$((i + 1))" "$((REPLICA_MONGO_EXPORTER_PORT + i))" \
				env MONGODB_URI="mongodb://${MONGO_MEMBERS[i]}/?directConnection=true" "$mongo_exporter" \
				--listen "127.0.0.1:$((REPLICA_MONGO_EXPORTER_PORT + i))"
		done
	else
		launch_postgres_exporter postgres-exporter "$PG_EXPORTER_PORT" "$PG_DSN"
		[[ -z "$PGH_SERVICE" ]] || launch_postgres_exporter postgres-hybrid-exporter "$PGH_EXPORTER_PORT" "$PGH_DSN"
		launch mongo-exporter "$MONGO_EXPORTER_PORT" env MONGODB_URI="$MONGO_URI" "$mongo_exporter" \
			--listen "127.0.0.1:$MONGO_EXPORTER_PORT"
	fi
	launch node-exporter "$NODE_EXPORTER_PORT" prometheus-node-exporter \
		--web.listen-address="127.0.0.1:$NODE_EXPORTER_PORT"
	launch prometheus "$PROM_PORT" prometheus --config.file="$DIR/prometheus.yml" \
		--storage.tsdb.path="$DIR/prometheus-data" --storage.tsdb.retention.time=7d \
		--web.listen-address="127.0.0.1:$PROM_PORT" \
		--web.enable-remote-write-receiver --enable-feature=native-histograms
	print_env
}

cmd_stop() {
	stop_one prometheus
	stop_one node-exporter
	local file name
	for file in "$DIR"/postgres-exporter-member*.pid "$DIR"/mongo-exporter-member*.pid; do
		[[ -e "$file" ]] || continue
		name="${file##*/}"
		stop_one "${name%.pid}"
	done
	stop_one mongo-exporter
	stop_one postgres-hybrid-exporter
	stop_one postgres-exporter
}

cmd_status() {
	local rc=0 name pid
	local -a names=(postgres-exporter mongo-exporter node-exporter prometheus)
	[[ -z "$PGH_SERVICE" ]] || names+=(postgres-hybrid-exporter)
	for name in "${names[@]}"; do
		pid="$(pid_of "$name")"
		if [[ -n "$pid" ]]; then say "$name: running (pid $pid)"; else
			say "$name: stopped"
			rc=3
		fi
	done
	return "$rc"
}

print_env() {
	printf 'export %s=%q\n' \
		PROMETHEUS_URL "http://127.0.0.1:$PROM_PORT" \
		PROMETHEUS_RW_URL "http://127.0.0.1:$PROM_PORT/api/v1/write"
}

usage() {
	cat <<EOF
usage: $0 <command>

  install   apt-get install the pinned $PROMETHEUS_DEB, $PG_EXPORTER_DEB
            and $NODE_EXPORTER_DEB when their commands are missing
  start     install if needed, build mongo-serverstatus-exporter, start the exporters (two
            postgres_exporters, the hybrid's unless MONITOR_PGH_SERVICE is empty) and Prometheus
            on 127.0.0.1 (scraping the services at $PG_SERVICE, $MONGO_SERVICE${PGH_SERVICE:+ and $PGH_SERVICE})
  start --replicas
            the same for the replicated stack: one exporter per member (label member=HOST:PORT),
            from port $REPLICA_PG_EXPORTER_PORT (PostgreSQL) and $REPLICA_MONGO_EXPORTER_PORT (MongoDB) up
  stop      stop them
  status    say which run (exit 0 if all, 3 otherwise)
  env       print PROMETHEUS_URL and PROMETHEUS_RW_URL (for --prometheus-rw and k6's remote write)

ports: MONITOR_PROMETHEUS_PORT ($PROM_PORT), MONITOR_PG_EXPORTER_PORT ($PG_EXPORTER_PORT),
       MONITOR_PGH_EXPORTER_PORT ($PGH_EXPORTER_PORT), MONITOR_MONGO_EXPORTER_PORT ($MONGO_EXPORTER_PORT), MONITOR_NODE_EXPORTER_PORT ($NODE_EXPORTER_PORT);
       data and logs in $DIR
EOF
}

main() {
	check_port MONITOR_PROMETHEUS_PORT "$PROM_PORT"
	check_port MONITOR_PG_EXPORTER_PORT "$PG_EXPORTER_PORT"
	check_port MONITOR_PGH_EXPORTER_PORT "$PGH_EXPORTER_PORT"
	check_port MONITOR_MONGO_EXPORTER_PORT "$MONGO_EXPORTER_PORT"
	check_port MONITOR_NODE_EXPORTER_PORT "$NODE_EXPORTER_PORT"
	case "${1:-}" in
	install) cmd_install ;;
	start) cmd_start "${@:2}" ;;
	stop) cmd_stop ;;
	status) cmd_status ;;
	env) print_env ;;
	-h | --help | help) usage ;;
	*)
		usage >&2
		exit 2
		;;
	esac
}

main "$@"
