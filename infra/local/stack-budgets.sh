#!/usr/bin/env bash
# The local stack's budgets, as stack.sh applies them to its servers: the flags it takes
# (--db-cpus, --db-memory), starting a server inside its budget, applying one to a server that
# runs, the line that reports it, `stack.sh budget`, and the budget the env command reports. The
# budgets themselves (sizes, checks, cgroups) are budget.sh's. stack.sh sources this file after
# budget.sh; its functions use stack.sh's (say, warn, die, the server hooks) when called.

# A limit was asked for (not just "none").
budget_requested() {
	[[ -n "$ASK_CPUS" && "$ASK_CPUS" != none ]] || [[ -n "$ASK_MEMORY" && "$ASK_MEMORY" != none ]]
}

# "; budget 0.25 CPU, 4.0 GiB" for the start messages, or nothing.
budget_words() {
	budget_requested || return 0
	local cpus="${ASK_CPUS:-none}" memory="none"
	[[ -z "$ASK_MEMORY" || "$ASK_MEMORY" == none ]] || memory="$(budget_human "$ASK_MEMORY")"
	printf '; budget %s CPU, memory %s (%s)' "$cpus" "$memory" "$BUDGET_METHOD"
}

# Reads --db-cpus and --db-memory into ASK_CPUS and ASK_MEMORY; anything else is an error.
parse_budget_flags() {
	while [[ $# -gt 0 ]]; do
		case "$1" in
		--db-cpus | --db-memory)
			[[ $# -ge 2 ]] || die "$1 needs a value"
			if [[ "$1" == --db-cpus ]]; then
				ASK_CPUS="$2"
				budget_check_cpus "$ASK_CPUS" || exit 2
			else
				ASK_MEMORY="$(budget_parse_size "$2")" || exit 2
				budget_check_memory "$ASK_MEMORY" || exit 2
			fi
			shift 2
			;;
		--db-cpus=* | --db-memory=*) parse_budget_flags "${1%%=*}" "${1#*=}" && shift ;;
		*) die "unknown option '$1' (budget options: --db-cpus N|none, --db-memory SIZE|none)" ;;
		esac
	done
}

# Runs CMD... so that the server it starts lands in budget NAME (when one was asked for).
in_budget() {
	local name="$1"
	shift
	if ! budget_requested; then
		"$@"
		return
	fi
	local cpus="${ASK_CPUS:-none}" memory="${ASK_MEMORY:-none}"
	case "$BUDGET_METHOD" in
	cgroup-v1 | cgroup-v2)
		budget_set "$name" "$cpus" "$memory" || die "could not create budget $name"
		(
			budget_move_one "$name" "$BASHPID" || die "could not enter budget $name"
			"$@"
		)
		;;
	systemd-user)
		# orders-budget run starts the command in a systemd user scope; a function (an engine's, as
		# PostgreSQL's run_pg in infra/engines/postgres/local.sh) puts BUDGET_PREFIX in front of the
		# command it runs.
		local -a BUDGET_PREFIX
		mapfile -t BUDGET_PREFIX < <(budget_prefix "$name" "$cpus" "$memory")
		((${#BUDGET_PREFIX[@]} > 0)) || die "could not make the budget $name"
		if declare -F "$1" >/dev/null; then "$@"; else "${BUDGET_PREFIX[@]}" "$@"; fi
		;;
	*) die "budgets are not available here: $BUDGET_WHY" ;;
	esac
}

# One line on the budget the kernel applies to PID: "0.25 CPU (10 ms period), memory 4.0 GiB".
budget_line() {
	local shown cpus memory period cgroup
	shown="$(budget_show "$1")"
	cpus="$(sed -E 's/.*cpus=([^ ]+).*/\1/' <<<"$shown")"
	period="$(sed -E 's/.*period_us=([^ ]+).*/\1/' <<<"$shown")"
	memory="$(sed -E 's/.*memory=([^ ]+).*/\1/' <<<"$shown")"
	cgroup="$(sed -E 's/.*cgroup=(.*)$/\1/' <<<"$shown")"
	if [[ "$cpus" == none && "$memory" == none ]]; then
		printf 'no budget (shares the machine with everything else)'
		return
	fi
	local cpu_text="unlimited CPU" memory_text="unlimited memory"
	[[ "$cpus" == none ]] || cpu_text="$cpus CPU ($(awk -v p="$period" 'BEGIN { printf "%g", p / 1000 }') ms period)"
	[[ "$memory" == none ]] || memory_text="$(budget_human "$memory") memory"
	printf 'budget: %s, %s (cgroup %s)' "$cpu_text" "$memory_text" "$cgroup"
}

# Applies the asked budget to a running server: NAME PID CACHE_BYTES LABEL.
apply_budget() {
	local name="$1" pid="$2" cache="$3" label="$4" shown cpus memory
	shown="$(budget_show "$pid")"
	cpus="${ASK_CPUS:-$(sed -E 's/.*cpus=([^ ]+).*/\1/' <<<"$shown")}"
	memory="${ASK_MEMORY:-$(sed -E 's/.*memory=([^ ]+).*/\1/' <<<"$shown")}"
	if [[ "$memory" != none && -n "$cache" ]] && ((memory < 2 * cache)); then
		die "$label runs with a $(budget_human "$cache") cache (set when it started): a $(budget_human "$memory") budget leaves too little room; restart it with the budget: $0 stop && $0 start --db-memory $(budget_human "$memory" | tr -d ' ')"
	fi
	case "$BUDGET_METHOD" in
	cgroup-v1 | cgroup-v2)
		if [[ "$cpus" == none && "$memory" == none ]]; then
			budget_release "$name" "$pid" || die "could not lift the budget of $label (pid $pid)"
		else
			budget_set "$name" "$cpus" "$memory" || die "could not set budget $name"
			budget_move_tree "$name" "$pid" || die "could not move $label (pid $pid) into budget $name"
		fi
		;;
	systemd-user)
		grep -q "$(budget_unit "$name")" "/proc/$pid/cgroup" ||
			die "$label was started without a budget scope, and an ordinary user cannot move it into one: $0 stop && $0 start --db-cpus ... --db-memory ..."
		budget_set "$name" "$cpus" "$memory" || die "could not set budget $name"
		;;
	*) die "budgets are not available here: $BUDGET_WHY" ;;
	esac
	say "$label: $(budget_line "$pid")"
}

# Warns when a running server's cache is not what its engine's guidance gives for the memory
# budget asked for: LABEL CACHE_BYTES WANTED_BYTES.
warn_cache_sizing() {
	[[ -n "$2" && "$2" != "$3" ]] || return 0
	warn "$1's cache was sized when it started ($(budget_human "$2")); for a $(budget_human "$ASK_MEMORY") budget the engine's guidance gives $(budget_human "$3"): restart with --db-memory to size it"
}

# Applies the asked budget to each server NAME... that runs, and warns where its cache was sized
# for another memory budget.
apply_budgets() { # NAME...
	local server pid cache label
	for server in "$@"; do
		pid="$(server_pid "$server")"
		[[ -n "$pid" ]] || continue
		label="$(server_label "$server")"
		cache="$(server_cache_bytes "$server" "$pid")"
		apply_budget "$(server_budget_name "$server")" "$pid" "$cache" "$label"
		[[ -z "$ASK_MEMORY" || "$ASK_MEMORY" == none ]] ||
			warn_cache_sizing "$label" "$cache" "$(server_wanted_cache_bytes "$server")"
	done
}

cmd_budget() {
	resolve_paths
	budget_detect
	local -a running
	mapfile -t running < <(running_servers)
	if [[ -z "$ASK_CPUS$ASK_MEMORY" ]]; then
		say "budget method: $BUDGET_METHOD${BUDGET_WHY:+ ($BUDGET_WHY)}"
		local server
		for server in ${running[@]+"${running[@]}"}; do
			say "$(server_label "$server"): $(budget_line "$(server_pid "$server")")"
		done
		return
	fi
	[[ "$BUDGET_METHOD" != none ]] || die "budgets are not available here: $BUDGET_WHY"
	((${#running[@]} > 0)) || die "no server is running; start them with a budget: $0 start --db-cpus N --db-memory SIZE"
	apply_budgets "${running[@]}"
}

# Deletes a stopped server's cgroups (root methods; systemd removes its scopes itself).
drop_budget() {
	budget_detect
	case "$BUDGET_METHOD" in
	cgroup-v1 | cgroup-v2) budget_remove "$1" || warn "left the cgroups of budget $1 behind" ;;
	esac
}

# STACK_DB_CPUS / STACK_DB_MEMORY: the budget every running server has ("none" when none runs,
# "unequal" when they differ).
budget_env_value() { # FIELD
	local server pid value="" each
	for server in "${SERVERS[@]}"; do
		pid="$(server_pid "$server")"
		[[ -n "$pid" ]] || continue
		each="$(budget_show "$pid" | sed -E "s/.*$1=([^ ]+).*/\1/")"
		if [[ -z "$value" ]]; then value="$each"; elif [[ "$each" != "$value" ]]; then value=unequal; fi
	done
	echo "${value:-none}"
}
