#!/usr/bin/env bash
# Equal resource budgets for the local database servers: each server's whole process tree in a
# cgroup of its own, with the same CPU quota (10 ms period, so throttling is short pauses, not
# 100 ms stalls) and the same memory limit (the page cache counts against it, as on a droplet).
#
# How, in order of preference:
#   cgroup-v1     root, cgroup v1 with the cpu and memory controllers mounted: written directly under
#                 <mount>/orders-bench/<server>-<port> in the cpu, cpuacct and memory hierarchies
#   cgroup-v2     root, a cgroup v2 hierarchy with the cpu and memory controllers:
#                 <mount>/orders-bench/<server>-<port>
#   systemd-user  an ordinary user whose systemd user manager delegates cpu and memory: the server
#                 starts in `systemd-run --user --scope -p CPUQuota= -p CPUQuotaPeriodSec= -p MemoryMax=`
#   none          anything else: the servers run without budgets and every tool says so
#
# stack.sh sources this file. Run directly, it serves tests and people:
#   budget.sh method                        print the method (and why not, when none)
#   budget.sh run NAME CPUS MEMORY -- CMD   run CMD (and its children) inside budget NAME
#   budget.sh show PID                      the budget the kernel applies to PID
#   budget.sh remove NAME                   delete budget NAME's (empty) cgroups
# CPUS is a fraction of cores (0.1 and up) or "none", MEMORY a size (512M, 4G, bytes) or "none".

BUDGET_GROUP=orders-bench
BUDGET_PERIOD_US=10000 # 10 ms
BUDGET_MIN_CPUS=0.1    # the kernel's smallest quota is 1 ms per period
# Eight times the default CPU weight for each server's cgroup: a whole server (PostgreSQL's many
# backends, mongod's threads) then weighs about what its busy processes weighed on their own
# outside a cgroup, and a busy load path does not starve a database below its quota (a database
# droplet's cores are not shared with the load generator either); the quota caps it.
BUDGET_SHARES=8192 # cgroup v1 cpu.shares (default 1024)
BUDGET_WEIGHT=800  # cgroup v2 cpu.weight and systemd CPUWeight= (default 100)

budget_say() { printf 'stack: %s\n' "$*"; }
budget_fail() {
	printf 'stack: error: %s\n' "$*" >&2
	return 1
}

# --- sizes and fractions ------------------------------------------------------

# 512M, 4G, 1.5G, 4GiB, 1073741824 -> bytes; "none" -> "none".
budget_parse_size() {
	local text="${1^^}"
	text="${text%IB}"
	text="${text%B}"
	if [[ "$text" == NONE ]]; then
		echo none
		return
	fi
	[[ "$text" =~ ^([0-9]+(\.[0-9]+)?)([KMGT]?)$ ]] || {
		budget_fail "'$1' is not a size like 512M, 4G or a number of bytes"
		return 1
	}
	local number="${BASH_REMATCH[1]}" unit="${BASH_REMATCH[3]}"
	awk -v n="$number" -v u="$unit" 'BEGIN {
		f = 1; if (u == "K") f = 1024; if (u == "M") f = 1024^2; if (u == "G") f = 1024^3; if (u == "T") f = 1024^4
		printf "%.0f\n", n * f }'
}

# Bytes -> "4.0 GiB" / "512 MiB".
budget_human() {
	awk -v b="$1" 'BEGIN {
		if (b >= 1024^3) printf "%.1f GiB\n", b / 1024^3; else printf "%.0f MiB\n", b / 1024^2 }'
}

# Checks a CPU budget: "none" or a number from 0.1 to the number of cores.
budget_check_cpus() {
	[[ "$1" == none ]] && return 0
	[[ "$1" =~ ^[0-9]+(\.[0-9]+)?$ ]] || {
		budget_fail "--db-cpus: '$1' is not a number of cores like 0.25, 1 or 2 (or none)"
		return 1
	}
	local cores
	cores="$(nproc)"
	awk -v c="$1" -v min="$BUDGET_MIN_CPUS" -v max="$cores" 'BEGIN { exit !(c >= min && c <= max) }' || {
		budget_fail "--db-cpus $1: must lie between $BUDGET_MIN_CPUS (the kernel's smallest quota, 1 ms per 10 ms period) and the $cores cores of this machine"
		return 1
	}
}

# Checks a memory budget: "none" or at least MIN_MIB mebibytes (256 for a database server).
budget_check_memory() {
	local min_mib="${2:-256}"
	[[ "$1" == none ]] && return 0
	((${1} >= min_mib * 1024 * 1024)) || {
		budget_fail "--db-memory: $(budget_human "$1") is too small (${min_mib}M at least)"
		return 1
	}
}

# Quota in microseconds per period for CPUS cores.
budget_quota_us() {
	awk -v c="$1" -v p="$BUDGET_PERIOD_US" 'BEGIN { printf "%.0f\n", c * p }'
}

# --- engine caches, as each engine's own guidance sizes them for a machine of MEMORY bytes -------

# PostgreSQL: shared_buffers about 25% of RAM (the PostgreSQL manual, "Resource Consumption").
budget_pg_shared_buffers_mb() {
	awk -v m="$1" 'BEGIN { mb = int(m / 4 / 1024^2); if (mb < 128) mb = 128; print mb }'
}

# WiredTiger: the larger of 256 MB and 50% of (RAM - 1 GB) (MongoDB's default cache size).
budget_wt_cache_gb() {
	awk -v m="$1" 'BEGIN { g = (m - 1024^3) / 2 / 1024^3; if (g < 0.25) g = 0.25; printf "%.2f\n", g }'
}

# --- where the cgroup filesystems are ------------------------------------------------------------

# The mount point of the cgroup v1 hierarchy holding CONTROLLER (from /proc/self/mountinfo).
budget_v1_mount() {
	awk -v c="$1" '{
		split($0, halves, " - "); split(halves[2], post, " ")
		if (post[1] != "cgroup") next
		n = split(post[3], opts, ",")
		for (i = 1; i <= n; i++) if (opts[i] == c) { split(halves[1], pre, " "); print pre[5]; exit }
	}' /proc/self/mountinfo
}

budget_v2_mount() {
	awk '{ split($0, halves, " - "); split(halves[2], post, " ")
		if (post[1] == "cgroup2") { split(halves[1], pre, " "); print pre[5]; exit } }' /proc/self/mountinfo
}

budget_v2_has() { # DIR CONTROLLER...
	local dir="$1" controller
	shift
	for controller in "$@"; do
		grep -qw "$controller" "$dir/cgroup.controllers" 2>/dev/null || return 1
	done
}

# Sets BUDGET_METHOD (cgroup-v1, cgroup-v2, systemd-user or none) and BUDGET_WHY (why none).
budget_detect() {
	BUDGET_METHOD=none
	BUDGET_WHY=""
	local cpu memory v2
	if [[ "$(id -u)" == 0 ]]; then
		cpu="$(budget_v1_mount cpu)"
		memory="$(budget_v1_mount memory)"
		if [[ -n "$cpu" && -n "$memory" && -f "$cpu/cpu.cfs_quota_us" && -f "$memory/memory.limit_in_bytes" ]]; then
			BUDGET_METHOD="cgroup-v1"
			return
		fi
		v2="$(budget_v2_mount)"
		if [[ -n "$v2" ]] && budget_v2_has "$v2" cpu memory; then
			BUDGET_METHOD="cgroup-v2"
			return
		fi
		BUDGET_WHY="running as root, but neither cgroup v1 with the cpu and memory controllers nor cgroup v2 with them is mounted"
		return
	fi
	if ! command -v systemd-run >/dev/null || ! command -v systemctl >/dev/null; then
		BUDGET_WHY="not root, and systemd-run is not installed (budgets need root or a systemd user session)"
		return
	fi
	local group
	if ! group="$(systemctl --user show --property=ControlGroup --value 2>/dev/null)" || [[ -z "$group" ]]; then
		BUDGET_WHY="not root, and there is no systemd user manager to ask (systemctl --user fails; PID 1 is $(cat /proc/1/comm 2>/dev/null || echo unknown))"
		return
	fi
	v2="$(budget_v2_mount)"
	if [[ -z "$v2" ]] || ! budget_v2_has "$v2$group" cpu memory; then
		BUDGET_WHY="not root, and the systemd user manager is not delegated the cpu and memory controllers (see systemd's 'Delegate=' for user@.service)"
		return
	fi
	BUDGET_METHOD=systemd-user
}

# The cgroup directories of budget NAME, one per line (cgroup-v1: cpu, cpuacct, memory; each
# once, since several controllers may share one hierarchy).
budget_dirs() {
	local name="$1" controller mount
	case "$BUDGET_METHOD" in
	cgroup-v1)
		for controller in cpu cpuacct memory; do
			mount="$(budget_v1_mount "$controller")"
			[[ -n "$mount" ]] && printf '%s\n' "$mount/$BUDGET_GROUP/$name"
		done | sort -u
		;;
	cgroup-v2) printf '%s\n' "$(budget_v2_mount)/$BUDGET_GROUP/$name" ;;
	esac
}

budget_unit() { printf 'orders-bench-%s.scope\n' "$1"; }

# --- creating, limiting, entering ----------------------------------------------------------------

budget_write() { # FILE VALUE
	if ! printf '%s\n' "$2" >"$1" 2>/dev/null; then
		budget_fail "could not write '$2' to $1"
		return 1
	fi
}

# Gives the group DIR the sum of its members' CPU weights (FILE: cpu.shares or cpu.weight), so each
# member competes with the rest of the machine as if it stood alone.
budget_sum_weights() {
	local dir="$1" file="$2" sum
	sum="$(cat "$dir"/*/"$file" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')"
	((sum > 0)) || return 0
	((sum <= 10000)) || [[ "$file" != cpu.weight ]] || sum=10000
	printf '%s\n' "$sum" >"$dir/$file" 2>/dev/null || true
}

# Creates budget NAME's cgroups (root methods) and sets CPUS and MEMORY ("none" lifts a limit),
# with a high CPU weight (see BUDGET_SHARES).
budget_set() {
	local name="$1" cpus="$2" memory="$3" dir v2 quota
	quota=-1
	[[ "$cpus" == none ]] || quota="$(budget_quota_us "$cpus")"
	case "$BUDGET_METHOD" in
	cgroup-v1)
		while read -r dir; do
			# A budget being removed at the same moment may take the shared parent away once.
			mkdir -p "$dir" 2>/dev/null || { sleep 0.1 && mkdir -p "$dir"; } || return 1
			if [[ -f "$dir/cpu.cfs_quota_us" ]]; then
				# Period first: a 10 ms period with the old quota may be rejected, a quota above
				# the old 100 ms period never is once the period is short.
				budget_write "$dir/cpu.cfs_quota_us" -1 || return 1
				budget_write "$dir/cpu.cfs_period_us" "$BUDGET_PERIOD_US" || return 1
				budget_write "$dir/cpu.cfs_quota_us" "$quota" || return 1
				budget_write "$dir/cpu.shares" "$BUDGET_SHARES" || return 1
				budget_sum_weights "$(dirname "$dir")" cpu.shares
			fi
			if [[ -f "$dir/memory.limit_in_bytes" ]]; then
				# Moved processes take their charges along (deprecated in newer kernels; best effort).
				printf '3\n' >"$dir/memory.move_charge_at_immigrate" 2>/dev/null || true
				budget_write "$dir/memory.limit_in_bytes" "$([[ "$memory" == none ]] && echo -1 || echo "$memory")" ||
					return 1
			fi
		done < <(budget_dirs "$name")
		;;
	cgroup-v2)
		v2="$(budget_v2_mount)"
		budget_write "$v2/cgroup.subtree_control" "+cpu +memory" || return 1
		dir="$v2/$BUDGET_GROUP/$name"
		mkdir -p "$v2/$BUDGET_GROUP" 2>/dev/null || { sleep 0.1 && mkdir -p "$v2/$BUDGET_GROUP"; } || return 1
		budget_write "$v2/$BUDGET_GROUP/cgroup.subtree_control" "+cpu +memory" || return 1
		mkdir -p "$dir" || return 1
		budget_write "$dir/cpu.max" "$([[ "$cpus" == none ]] && echo max || echo "$quota") $BUDGET_PERIOD_US" || return 1
		budget_write "$dir/cpu.weight" "$BUDGET_WEIGHT" || return 1
		budget_sum_weights "$v2/$BUDGET_GROUP" cpu.weight
		budget_write "$dir/memory.max" "$([[ "$memory" == none ]] && echo max || echo "$memory")" || return 1
		;;
	systemd-user)
		local -a properties=(CPUQuotaPeriodSec=10ms "CPUWeight=$BUDGET_WEIGHT")
		if [[ "$cpus" == none ]]; then properties+=(CPUQuota=); else properties+=("CPUQuota=$(awk -v c="$cpus" 'BEGIN { printf "%.0f", c * 100 }')%"); fi
		if [[ "$memory" == none ]]; then properties+=(MemoryMax=infinity); else properties+=("MemoryMax=$memory"); fi
		systemctl --user set-property --runtime "$(budget_unit "$name")" "${properties[@]}" ||
			budget_fail "systemctl --user set-property $(budget_unit "$name") failed"
		;;
	*) budget_fail "no way to set budgets here: $BUDGET_WHY" ;;
	esac
}

# Moves process PID (all its threads) into budget NAME.
budget_move_one() {
	local name="$1" pid="$2" dir
	while read -r dir; do
		printf '%s\n' "$pid" >"$dir/cgroup.procs" 2>/dev/null || [[ ! -d "/proc/$pid" ]] || return 1
	done < <(budget_dirs "$name")
}

# PID and all its descendants, from /proc/<pid>/stat (the name may hold spaces and parentheses).
budget_tree() {
	local root="$1" file line rest pid
	local -A parent=()
	for file in /proc/[0-9]*/stat; do
		read -r line 2>/dev/null <"$file" || continue
		pid="${line%% *}"
		rest="${line##*) }"
		rest="${rest#* }" # drop the state field
		parent[$pid]="${rest%% *}"
	done
	local -a tree=("$root")
	local i=0 candidate
	while ((i < ${#tree[@]})); do
		for candidate in "${!parent[@]}"; do
			[[ "${parent[$candidate]}" == "${tree[$i]}" ]] && tree+=("$candidate")
		done
		i=$((i + 1))
	done
	printf '%s\n' "${tree[@]}"
}

# Moves the whole process tree of ROOT into budget NAME (root methods). The root goes first, so
# children forked meanwhile are born inside; a second pass catches any born before it moved.
budget_move_tree() {
	local name="$1" root="$2" pid
	for _ in 1 2; do
		while read -r pid; do
			budget_move_one "$name" "$pid" || {
				budget_fail "could not move pid $pid into budget $name"
				return 1
			}
		done < <(budget_tree "$root")
	done
}

# Runs CMD... inside budget NAME, which must exist (root methods) or is created (systemd-user).
budget_exec() {
	local name="$1" cpus="$2" memory="$3"
	shift 3
	case "$BUDGET_METHOD" in
	cgroup-v1 | cgroup-v2)
		budget_move_one "$name" "$BASHPID" || {
			budget_fail "could not enter budget $name"
			return 1
		}
		exec "$@"
		;;
	systemd-user)
		local -a properties=(-p CPUQuotaPeriodSec=10ms -p "CPUWeight=$BUDGET_WEIGHT")
		[[ "$cpus" == none ]] || properties+=(-p "CPUQuota=$(awk -v c="$cpus" 'BEGIN { printf "%.0f", c * 100 }')%")
		[[ "$memory" == none ]] || properties+=(-p "MemoryMax=$memory")
		exec systemd-run --user --scope --quiet --collect --unit="$(budget_unit "$name")" "${properties[@]}" -- "$@"
		;;
	*)
		exec "$@"
		;;
	esac
}

# Deletes budget NAME's cgroups once no process is left in them (a systemd scope goes by itself).
budget_remove() {
	local name="$1" dir parent
	while read -r dir; do
		[[ -d "$dir" ]] || continue
		rmdir "$dir" 2>/dev/null || budget_fail "could not remove $dir (processes left in it?)" || return 1
		parent="$(dirname "$dir")"
		rmdir "$parent" 2>/dev/null || true # the shared parent, once empty
		if [[ -f "$parent/cpu.shares" ]]; then budget_sum_weights "$parent" cpu.shares; fi
		if [[ -f "$parent/cpu.weight" ]]; then budget_sum_weights "$parent" cpu.weight; fi
	done < <(budget_dirs "$name")
}

# Lifts budget NAME from the process tree of ROOT (root methods): moves every process back to the
# root of each hierarchy, where processes without a budget are, and deletes NAME's cgroups.
budget_release() {
	local name="$1" root="$2" dir pid
	while read -r dir; do
		[[ -d "$dir" ]] || continue
		for _ in 1 2; do
			while read -r pid; do
				printf '%s\n' "$pid" >"${dir%/"$BUDGET_GROUP"/"$name"}/cgroup.procs" 2>/dev/null ||
					[[ ! -d "/proc/$pid" ]] || budget_fail "could not move pid $pid out of budget $name" || return 1
			done < <(budget_tree "$root")
		done
	done < <(budget_dirs "$name")
	budget_remove "$name"
}

# --- reading back what the kernel applies ------------------------------------------------------------

# "cpus=0.25 period_us=10000 memory=4294967296 cgroup=/orders-bench/postgres-55432" for PID, from
# its own cgroups (cpus/memory "none" when unlimited).
budget_show() {
	local pid="$1" line controllers path cpus=none period="" memory=none cgroup="" mount value quota
	while IFS= read -r line; do
		controllers="${line#*:}"
		path="${controllers#*:}"
		controllers="${controllers%%:*}"
		if [[ -z "$controllers" ]]; then # cgroup v2
			mount="$(budget_v2_mount)"
			if [[ -r "$mount$path/cpu.max" ]]; then
				read -r quota period <"$mount$path/cpu.max"
				[[ "$quota" == max ]] || cpus="$(awk -v q="$quota" -v p="$period" 'BEGIN { printf "%.3g", q / p }')"
				cgroup="$path"
			fi
			if [[ -r "$mount$path/memory.max" ]]; then
				value="$(cat "$mount$path/memory.max")"
				[[ "$value" == max ]] || memory="$value"
			fi
			continue
		fi
		if [[ ",$controllers," == *,cpu,* ]]; then
			mount="$(budget_v1_mount cpu)"
			quota="$(cat "$mount$path/cpu.cfs_quota_us" 2>/dev/null || echo -1)"
			period="$(cat "$mount$path/cpu.cfs_period_us" 2>/dev/null || echo "")"
			if [[ "$quota" != -1 && -n "$period" ]]; then
				cpus="$(awk -v q="$quota" -v p="$period" 'BEGIN { printf "%.3g", q / p }')"
			fi
			cgroup="$path"
		fi
		if [[ ",$controllers," == *,memory,* ]]; then
			mount="$(budget_v1_mount memory)"
			value="$(cat "$mount$path/memory.limit_in_bytes" 2>/dev/null || echo "")"
			# "No limit" is the largest page-aligned 64-bit value.
			[[ -n "$value" ]] && ((${#value} < 19)) && memory="$value"
		fi
	done <"/proc/$pid/cgroup"
	printf 'cpus=%s period_us=%s memory=%s cgroup=%s\n' "$cpus" "${period:-none}" "$memory" "${cgroup:-/}"
}

# --- direct use ----------------------------------------------------------------------------------------

budget_main() {
	set -euo pipefail
	budget_detect
	case "${1:-}" in
	method)
		printf '%s\n' "$BUDGET_METHOD"
		[[ -z "$BUDGET_WHY" ]] || printf '%s\n' "$BUDGET_WHY"
		;;
	run)
		[[ $# -ge 5 && "$5" == -- ]] || budget_fail "usage: budget.sh run NAME CPUS MEMORY -- CMD..."
		local name="$2" cpus="$3" memory
		memory="$(budget_parse_size "$4")"
		budget_check_cpus "$cpus"
		budget_check_memory "$memory" 16
		shift 5
		[[ "$BUDGET_METHOD" != none ]] || budget_fail "budgets are not available here: $BUDGET_WHY"
		[[ "$BUDGET_METHOD" == systemd-user ]] || budget_set "$name" "$cpus" "$memory"
		budget_exec "$name" "$cpus" "$memory" "$@"
		;;
	show) budget_show "$2" ;;
	remove) budget_remove "$2" ;;
	*) budget_fail "usage: budget.sh {method|run NAME CPUS MEMORY -- CMD...|show PID|remove NAME}" ;;
	esac
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	budget_main "$@"
fi
