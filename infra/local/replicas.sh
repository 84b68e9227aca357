#!/usr/bin/env bash
# The replicated local stack (issue 42, `stack.sh start --replicas N`): every engine's replicated
# deployment beside the single servers, each member in a network namespace of its own on one
# bridge with no uplink, with a round-trip time set between them, and the same CPU and memory
# budget for every member of every engine. Sourced by infra/local/stack.sh after the engines'
# local.sh; each engine's members are its folder's replicas.sh (infra/engines/<engine>/), which
# defines <engine>_replicas_start COUNT, _stop, _status, _env and _check (infra/engines/README.md).
#
# The network (addresses from 198.18.0.0/15, the range RFC 2544 sets aside for benchmarks; no
# route leaves it):
#   namespace <prefix>-lan      the bridge br0, and the bridge's end of every veth
#   namespace <prefix>-<member> eth0 with the member's address, lo; no default route
#   root namespace              <prefix>-r0 with $REPLICA_SUBNET.1/24: the services, the load
#                               generator and these scripts reach the members through it
# The delay: `tc netem` where the kernel has it (rtt/2 on each member's eth0 and on <prefix>-r0,
# so member to member and root to member both take rtt). Kernels built without it
# (CONFIG_NET_SCH_NETEM unset, as these machines) get the same from orders-netdelay
# (infra/local/netdelay): an iptables NFQUEUE rule in each member's namespace hands it every
# packet leaving eth0, and it holds the packet rtt/2 (to another member) or rtt (to the root
# namespace, whose own side has no rule, so that nothing is changed outside our namespaces).
#
# Members are new on every start (their data in .local/replicas is deleted by stop and by the
# next start): a leftover of a killed run (namespaces, processes in them, cgroups) is cleaned
# by the next start or stop.
# shellcheck disable=SC2154 # LOCAL, VENV, SITE, ASK_* ... come from stack.sh

REPLICA_PREFIX="${STACK_REPLICA_PREFIX:-orders}"
# The members' /24, inside 198.18.0.0/15.
REPLICA_SUBNET="${STACK_REPLICA_SUBNET:-198.18.42}"
REPLICA_DIR="$LOCAL/replicas"
REPLICA_STATE="$REPLICA_DIR/state"
REPLICA_ROOT_IF="$REPLICA_PREFIX-r0"
REPLICA_DEFAULT_CPUS=0.25
REPLICA_DEFAULT_MEMORY=2G
REPLICA_DEFAULT_RTT=0.5
# Installed on the first start with replicas (pip into .venv, apt-get), not by `install`.
REPLICA_WHEELS=("patroni[etcd3]==4.1.5" "psycopg[binary]==3.3.9" "pymongo==4.20.1")
REPLICA_STAMP="$VENV/.replicas-installed"
REPLICA_ETCD_DEB="etcd-server=3.4.23-4+b4"
REPLICA_IPTABLES_DEB="iptables=1.8.9-2"
REPLICA_PING_DEB="iputils-ping=3:20221126-1+deb12u1"

# What start was asked for ("" = not asked).
ASK_REPLICAS=""
ASK_RTT=""
ASK_ONLY_REPLICAS=""
ASK_PG_SYNC_COMMIT=""

# shellcheck source=infra/local/replica-network.sh
source "$REPO/infra/local/replica-network.sh"

for engine in "${STACK_ENGINES[@]}"; do
	if [[ -f "$REPO/infra/engines/$engine/replicas.sh" ]]; then
		# shellcheck source=/dev/null # infra/engines/*/replicas.sh, checked on their own
		source "$REPO/infra/engines/$engine/replicas.sh"
	fi
done
unset engine

# The engines that have a replicated deployment.
replica_engines() {
	local engine
	for engine in "${STACK_ENGINES[@]}"; do
		if declare -F "${engine}_replicas_start" >/dev/null; then echo "$engine"; fi
	done
}

# --- flags ---------------------------------------------------------------------------------------

# Takes one of start's replica flags: NAME VALUE.
replicas_flag() {
	case "$1" in
	--replicas)
		if ! { [[ "$2" =~ ^[0-9]+$ ]] && (($2 >= 3 && $2 <= 9)); }; then
			die "--replicas: a member count from 3 to 9, got '$2'"
		fi
		ASK_REPLICAS="$2"
		;;
	--rtt)
		if ! { [[ "$2" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v r="$2" 'BEGIN { exit !(r <= 100) }'; }; then
			die "--rtt: a round-trip time in milliseconds (0 to 100, e.g. 0.5), got '$2'"
		fi
		ASK_RTT="$2"
		;;
	--pg-synchronous-commit)
		[[ "$2" == on || "$2" == remote_apply ]] || die "--pg-synchronous-commit: on or remote_apply, got '$2'"
		ASK_PG_SYNC_COMMIT="$2"
		;;
	esac
}

# Refuses start --replicas to an ordinary user, before anything else: START's arguments.
replicas_need_root() {
	is_root && return 0
	local arg
	for arg in "$@"; do
		case "$arg" in
		--replicas | --replicas=*)
			die "--replicas needs root: its members run in network namespaces on a bridge (ip netns), with cgroup budgets. As an ordinary user, start the single servers only (no --replicas)."
			;;
		esac
	done
}

# Checks the replica flags together, before anything starts.
replicas_check_flags() {
	if [[ -z "$ASK_REPLICAS" ]]; then
		[[ -z "$ASK_RTT$ASK_ONLY_REPLICAS$ASK_PG_SYNC_COMMIT" ]] ||
			die "--rtt, --only-replicas and --pg-synchronous-commit go with --replicas N"
		return
	fi
	is_root || die "--replicas needs root: its members run in network namespaces on a bridge (ip netns), with cgroup budgets. As an ordinary user, start the single servers only (no --replicas)."
	if ! [[ "$REPLICA_SUBNET" =~ ^198\.(18|19)\.([0-9]{1,3})$ ]] || ((10#${BASH_REMATCH[2]} > 255)); then
		die "STACK_REPLICA_SUBNET must be the first three octets of a /24 inside 198.18.0.0/15 (e.g. 198.18.42), got '$REPLICA_SUBNET'"
	fi
	command -v ip >/dev/null || die "--replicas needs the ip command (Debian: iproute2)"
	[[ "$BUDGET_METHOD" == cgroup-v1 || "$BUDGET_METHOD" == cgroup-v2 ]] ||
		die "--replicas gives every member a budget, and budgets are not available here: $BUDGET_WHY"
}

# --- installation --------------------------------------------------------------------------------

replicas_install() {
	if [[ ! -f "$REPLICA_STAMP" || "$(cat "$REPLICA_STAMP")" != "${REPLICA_WHEELS[*]}" ]]; then
		say "pip install ${REPLICA_WHEELS[*]} (Patroni, its PostgreSQL driver, and the MongoDB driver that initiates the replica set)"
		"$VENV/bin/python" -m pip install --disable-pip-version-check --no-input -q "${REPLICA_WHEELS[@]}" ||
			die "pip install ${REPLICA_WHEELS[*]} failed"
		printf '%s\n' "${REPLICA_WHEELS[*]}" >"$REPLICA_STAMP"
	fi
	local -a debs=()
	command -v etcd >/dev/null || debs+=("$REPLICA_ETCD_DEB")
	if ! replica_has_netem; then
		# orders-netdelay's rule, and the pings that calibrate it.
		command -v iptables-legacy >/dev/null || debs+=("$REPLICA_IPTABLES_DEB")
		command -v ping >/dev/null || debs+=("$REPLICA_PING_DEB")
	fi
	((${#debs[@]} == 0)) && return
	command -v apt-get >/dev/null || die "missing ${debs[*]} and no apt-get: install etcd 3.4+ (and iptables) yourself"
	say "apt-get install ${debs[*]} (their system services are neither started nor enabled)"
	local policy=''
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${debs[@]}" >/dev/null ||
		die "apt-get install ${debs[*]} failed"
	[[ -z "$policy" ]] || rm -f "$policy"
	if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
		systemctl disable --now --quiet etcd 2>/dev/null || true
	fi
}

# orders-netdelay, built like orders-budget (budget.sh) when missing or older than its sources.
replica_netdelay_bin() {
	if [[ -n "${ORDERS_NETDELAY:-}" ]]; then
		printf '%s\n' "$ORDERS_NETDELAY"
		return
	fi
	local here="$REPO/infra/local/netdelay" target bin
	target="${CARGO_TARGET_DIR:-$REPO/target}"
	bin="$target/release/orders-netdelay"
	if [[ ! -x "$bin" ]] || [[ -n "$(find "$here/src" "$here/Cargo.toml" -newer "$bin" -print -quit)" ]]; then
		command -v cargo >/dev/null || die "this kernel has no tc netem: the delay needs orders-netdelay, built with cargo, or ORDERS_NETDELAY=<path to it>"
		say "building orders-netdelay (cargo build --release -p orders-netdelay)" >&2
		cargo build --quiet --release --manifest-path "$here/Cargo.toml" --bin orders-netdelay >&2 ||
			die "could not build orders-netdelay"
		touch "$bin"
	fi
	printf '%s\n' "$bin"
}

# --- processes in the members ---------------------------------------------------------------------

# Runs CMD... in MEMBER's namespace inside its budget, in the foreground (a daemon that forks).
replica_run_budgeted() { # MEMBER CMD...
	local member="$1"
	shift
	local ASK_CPUS="$REPLICA_CPUS" ASK_MEMORY="$REPLICA_MEMORY"
	in_budget "$(replica_budget_name "$member")" ip netns exec "$(replica_ns "$member")" "$@" 9>&-
}

# Starts CMD... in MEMBER's namespace in the background, in a session of its own, its output to
# LOG; with BUDGET=1 inside the member's budget.
replica_spawn() { # MEMBER LOG CMD...
	local member="$1" log="$2"
	shift 2
	if [[ "${BUDGET:-0}" == 1 ]]; then
		local ASK_CPUS="$REPLICA_CPUS" ASK_MEMORY="$REPLICA_MEMORY"
		in_budget "$(replica_budget_name "$member")" setsid ip netns exec "$(replica_ns "$member")" "$@" \
			</dev/null >>"$log" 2>&1 9>&- &
	else
		setsid ip netns exec "$(replica_ns "$member")" "$@" </dev/null >>"$log" 2>&1 9>&- &
	fi
}

# Waits until TCP ADDRESS:PORT accepts, up to SECONDS; status 1 if not.
replica_wait_port() { # ADDRESS PORT SECONDS
	local waited=0
	until timeout 1 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; do
		((waited < $3 * 10)) || return 1
		sleep 0.1
		waited=$((waited + 1))
	done
}

# Sends SIGNAL to every process in namespace NS.
replica_signal_namespace() { # NS SIGNAL
	local -a pids
	mapfile -t pids < <(ip netns pids "$1" 2>/dev/null)
	((${#pids[@]} == 0)) || kill "-$2" "${pids[@]}" 2>/dev/null || true
}

# Signals every process in namespace NS, waits up to SECONDS for them to go, then kills what is left.
replica_end_namespace() { # NS SECONDS [SIGNAL]
	local ns="$1" seconds="$2" signal="${3:-TERM}" waited=0
	local -a pids
	mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
	((${#pids[@]} > 0)) || return 0
	kill "-$signal" "${pids[@]}" 2>/dev/null || true
	while [[ -n "$(ip netns pids "$ns" 2>/dev/null)" ]]; do
		if ((waited >= seconds * 10)); then
			mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
			warn "$ns: ${#pids[@]} process(es) still there after ${seconds}s, killing them (pids ${pids[*]})"
			kill -KILL "${pids[@]}" 2>/dev/null || true
			sleep 0.5
			break
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
}

# --- the commands ---------------------------------------------------------------------------------

# Whether the replicas run: a start finished (REPLICA_READY in the state), and every member's
# namespace is there with a process in it. Anything less is a leftover, which start cleans.
replicas_running() {
	[[ -f "$REPLICA_STATE" ]] && grep -qx 'REPLICA_READY=1' "$REPLICA_STATE" || return 1
	local count ns members=0
	count="$(sed -n 's/^REPLICA_COUNT=//p' "$REPLICA_STATE")"
	for ns in $(replica_namespaces); do
		[[ "$ns" != "$(replica_ns lan)" ]] || continue
		[[ -n "$(ip netns pids "$ns" 2>/dev/null)" ]] || return 1
		members=$((members + 1))
	done
	# Every engine's members, and etcd.
	((members == count * $(replica_engines | wc -l) + 1))
}

# Reads what the running replicas were started with (state written by start).
replica_load_state() {
	[[ -f "$REPLICA_STATE" ]] || return 1
	# shellcheck source=/dev/null
	source "$REPLICA_STATE"
}

replicas_start() {
	REPLICA_COUNT="$ASK_REPLICAS"
	REPLICA_RTT="${ASK_RTT:-$REPLICA_DEFAULT_RTT}"
	REPLICA_RTT_US="$(replica_rtt_us "$REPLICA_RTT" 1)"
	REPLICA_CPUS="${ASK_CPUS:-$REPLICA_DEFAULT_CPUS}"
	REPLICA_MEMORY="${ASK_MEMORY:-$(budget_parse_size "$REPLICA_DEFAULT_MEMORY")}"
	REPLICA_PG_SYNC_COMMIT="${ASK_PG_SYNC_COMMIT:-on}"
	if replicas_running; then
		say "replicas already running (stop them first to change them):"
		replicas_status || true
		return
	fi
	replicas_install
	replicas_cleanup quiet
	if replica_has_netem; then
		REPLICA_DELAY_METHOD=netem
	else
		REPLICA_DELAY_METHOD=nfqueue
		REPLICA_NETDELAY="$(replica_netdelay_bin)"
	fi
	say "replicas: $REPLICA_COUNT members per engine ($(replica_engines | tr '\n' ' ' | sed 's/ $//')) on $REPLICA_SUBNET.0/24," \
		"rtt $REPLICA_RTT ms ($(replica_delay_words)); every member's budget: $REPLICA_CPUS CPU, $(replica_memory_words) memory ($BUDGET_METHOD)"
	mkdir -p "$REPLICA_DIR"
	{
		printf 'REPLICA_COUNT=%q\n' "$REPLICA_COUNT"
		printf 'REPLICA_RTT=%q\n' "$REPLICA_RTT"
		printf 'REPLICA_RTT_US=%q\n' "$REPLICA_RTT_US"
		printf 'REPLICA_CPUS=%q\n' "$REPLICA_CPUS"
		printf 'REPLICA_MEMORY=%q\n' "$REPLICA_MEMORY"
		printf 'REPLICA_DELAY_METHOD=%q\n' "$REPLICA_DELAY_METHOD"
		printf 'REPLICA_PG_SYNC_COMMIT=%q\n' "$REPLICA_PG_SYNC_COMMIT"
	} >"$REPLICA_STATE"
	replica_network_up
	replica_calibrate
	printf 'REPLICA_HALF_US=%q\nREPLICA_ROOT_US=%q\n' "$REPLICA_HALF_US" "$REPLICA_ROOT_US" >>"$REPLICA_STATE"
	local engine
	for engine in $(replica_engines); do
		"${engine}_replicas_start" "$REPLICA_COUNT"
	done
	echo REPLICA_READY=1 >>"$REPLICA_STATE"
	say "replicas ready"
}

replica_memory_words() {
	if [[ "$REPLICA_MEMORY" == none ]]; then echo unlimited; else budget_human "$REPLICA_MEMORY"; fi
}

replica_delay_words() {
	case "$REPLICA_DELAY_METHOD" in
	netem) echo "tc netem, rtt/2 on every member's link and on the root namespace's" ;;
	nfqueue) echo "this kernel has no tc netem: orders-netdelay holds each packet a member sends rtt/2, rtt towards the root namespace" ;;
	esac
}

replicas_stop() {
	if [[ ! -f "$REPLICA_STATE" && -z "$(replica_namespaces)" ]]; then
		say "replicas not running"
		return
	fi
	replica_load_state || true
	say "stopping the replicas"
	replicas_cleanup
	say "replicas stopped (namespaces, bridge, cgroups and data removed)"
}

# Ends every process in our namespaces (the engines' own stop first, then whatever is left),
# deletes the namespaces (and with them the bridge and the veths), the budgets' cgroups and the
# members' data. Used by stop, and by start for a leftover of a killed run.
replicas_cleanup() { # [quiet]
	local ns engine
	local -a namespaces
	mapfile -t namespaces < <(replica_namespaces)
	if [[ "${1:-}" == quiet ]] && ((${#namespaces[@]} > 0)); then
		say "cleaning up a previous run's replicas (${namespaces[*]})"
	fi
	if ((${#namespaces[@]} > 0)); then
		# The delay first (no packet waits for a program that is going away), then the engines.
		for ns in "${namespaces[@]}"; do
			ip netns exec "$ns" iptables-legacy -w -F OUTPUT 2>/dev/null || true
		done
		for engine in $(replica_engines); do
			"${engine}_replicas_stop"
		done
		for ns in "${namespaces[@]}"; do
			replica_end_namespace "$ns" 30
		done
		for ns in "${namespaces[@]}"; do
			ip netns del "$ns" 2>/dev/null || warn "could not delete namespace $ns"
		done
	fi
	if ip link show "$REPLICA_ROOT_IF" >/dev/null 2>&1; then ip link del "$REPLICA_ROOT_IF" || true; fi
	local member
	for member in etcd mongo{1..9} pg{1..9} cal{1..2}; do
		if [[ -n "$(replica_cgroup_exists "$(replica_budget_name "$member")")" ]]; then
			budget_remove "$(replica_budget_name "$member")" || warn "left the cgroups of budget $(replica_budget_name "$member") behind"
		fi
	done
	rm -rf "$REPLICA_DIR"
}

# Prints something when budget NAME has a cgroup in any hierarchy.
replica_cgroup_exists() { # NAME
	find /sys/fs/cgroup -maxdepth 3 -type d -path "*/orders-bench/$1" -print -quit 2>/dev/null
}

replicas_status() {
	if ! replicas_running; then
		say "replicas: not running; leftovers of an unfinished or killed run ($(replica_namespaces | tr '\n' ' ')): stop or the next start cleans them"
		return 1
	fi
	replica_load_state
	say "replicas: $REPLICA_COUNT members per engine, rtt $REPLICA_RTT ms ($REPLICA_DELAY_METHOD), every member's budget $REPLICA_CPUS CPU, memory $(replica_memory_words)"
	local engine rc=0
	for engine in $(replica_engines); do
		"${engine}_replicas_status" || rc=1
	done
	return "$rc"
}

# The replicas' connection settings, for `env` (only while they run).
replicas_env() {
	replicas_running || return 0
	replica_load_state
	STACK_ENV+=(
		REPLICA_COUNT "$REPLICA_COUNT"
		REPLICA_RTT_MS "$REPLICA_RTT"
		REPLICA_DELAY_METHOD "$REPLICA_DELAY_METHOD"
		REPLICA_DB_CPUS "$REPLICA_CPUS"
		REPLICA_DB_MEMORY "$REPLICA_MEMORY"
		REPLICA_NS_PREFIX "$REPLICA_PREFIX-"
	)
	local engine
	for engine in $(replica_engines); do
		"${engine}_replicas_env"
	done
}
