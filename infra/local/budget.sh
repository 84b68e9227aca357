#!/usr/bin/env bash
# Equal resource budgets for the local database servers: each server's whole process tree in a
# cgroup of its own, with the same CPU quota (10 ms period, so throttling is short pauses, not
# 100 ms stalls) and the same memory limit (the page cache counts against it, as on a droplet).
# This file holds the flags' side (sizes, checks, the engines' caches for a budget); the cgroups
# themselves are the orders-budget binary's (infra/local/budget, whose lib.rs says how: cgroup v1
# or v2 as root, a systemd user scope for an ordinary user with a delegating user manager, or none).
#
# stack.sh sources this file. Run directly, it serves tests and people:
#   budget.sh method                        print the method (and why not, when none)
#   budget.sh run NAME CPUS MEMORY -- CMD   run CMD (and its children) inside budget NAME
#   budget.sh show PID                      the budget the kernel applies to PID
#   budget.sh remove NAME                   delete budget NAME's (empty) cgroups
# CPUS is a fraction of cores (0.1 and up) or "none", MEMORY a size (512M, 4G, bytes) or "none".

BUDGET_MIN_CPUS=0.1 # the kernel's smallest quota is 1 ms per 10 ms period

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

# --- engine caches, as each engine's own guidance sizes them for a machine of MEMORY bytes -------

# PostgreSQL: shared_buffers about 25% of RAM (the PostgreSQL manual, "Resource Consumption").
budget_pg_shared_buffers_mb() {
	awk -v m="$1" 'BEGIN { mb = int(m / 4 / 1024^2); if (mb < 128) mb = 128; print mb }'
}

# WiredTiger: the larger of 256 MB and 50% of (RAM - 1 GB) (MongoDB's default cache size).
budget_wt_cache_gb() {
	awk -v m="$1" 'BEGIN { g = (m - 1024^3) / 2 / 1024^3; if (g < 0.25) g = 0.25; printf "%.2f\n", g }'
}

# --- the kernel's side: orders-budget ----------------------------------------------------------------

# The cgroup work itself (detecting the method, writing the cgroup files, moving processes,
# reading back what the kernel applies) is the Rust crate infra/local/budget, whose reader the
# bench's CPU and memory figures use too: one implementation of both. Its binary has no
# dependencies, so it builds in seconds (`cargo build --release -p orders-budget`) the first time
# a budget is asked about, and again only when its sources change. ORDERS_BUDGET names a binary
# to use instead.
# Found (and built when stale) once per command: budget_detect, which every command that touches
# budgets calls first, keeps it in BUDGET_BIN for the calls after it, in subshells too.
budget_bin() {
	if [[ -n "${BUDGET_BIN:-${ORDERS_BUDGET:-}}" ]]; then
		printf '%s\n' "${BUDGET_BIN:-$ORDERS_BUDGET}"
		return
	fi
	local here target bin
	here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
	target="${CARGO_TARGET_DIR:-$(cd "$here/../.." && pwd)/target}"
	bin="$target/release/orders-budget"
	if [[ ! -x "$bin" ]] || [[ -n "$(find "$here/budget/src" "$here/budget/Cargo.toml" -newer "$bin" -print -quit)" ]]; then
		command -v cargo >/dev/null || {
			budget_fail "budgets need the orders-budget binary, built with cargo (https://rustup.rs), or ORDERS_BUDGET=<path to it>"
			return 1
		}
		cargo build --quiet --release --manifest-path "$here/budget/Cargo.toml" --bin orders-budget >&2 || {
			budget_fail "could not build orders-budget (cargo build --release -p orders-budget)"
			return 1
		}
		touch "$bin" # cargo leaves an up-to-date binary as it was: the next call must not ask again
	fi
	printf '%s\n' "$bin"
}

budget() { # orders-budget's arguments
	local bin
	bin="$(budget_bin)" || return 1
	"$bin" "$@"
}

# Sets BUDGET_BIN, BUDGET_METHOD (cgroup-v1, cgroup-v2, systemd-user or none) and BUDGET_WHY (why
# none).
budget_detect() {
	local said
	BUDGET_BIN="$(budget_bin)" || BUDGET_BIN=""
	said="$(budget method)" || said="$(printf 'none\nno orders-budget binary')"
	BUDGET_METHOD="$(sed -n 1p <<<"$said")"
	BUDGET_WHY="$(sed -n 2p <<<"$said")"
}

budget_unit() { printf 'orders-bench-%s.scope\n' "$1"; }

# Creates budget NAME (root methods) or changes its scope (systemd-user) with CPUS and MEMORY
# ("none" lifts a limit).
budget_set() { budget set "$1" "$2" "$3"; }
# Moves process PID (all its threads) into budget NAME.
budget_move_one() { budget move "$1" "$2"; }
# Moves the whole process tree of ROOT into budget NAME (root methods).
budget_move_tree() { budget move-tree "$1" "$2"; }
# Deletes budget NAME's cgroups once no process is left in them.
budget_remove() { budget remove "$1"; }
# Lifts budget NAME from the process tree of ROOT and deletes its cgroups (root methods).
budget_release() { budget release "$1" "$2"; }
# "cpus=0.25 period_us=10000 memory=4294967296 cgroup=/orders-bench/postgres-55432" for PID (cpus,
# period and memory "none" when unlimited).
budget_show() { budget show "$1"; }
# The command prefix that runs CMD... inside budget NAME with CPUS and MEMORY: NAME CPUS MEMORY.
budget_prefix() {
	local bin
	bin="$(budget_bin)" || return 1
	printf '%s\n' "$bin" run "$1" "$2" "$3" --
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
		exec "$BUDGET_BIN" run "$name" "$cpus" "$memory" -- "$@"
		;;
	show) budget_show "$2" ;;
	remove) budget_remove "$2" ;;
	*) budget_fail "usage: budget.sh {method|run NAME CPUS MEMORY -- CMD...|show PID|remove NAME}" ;;
	esac
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	budget_main "$@"
fi
