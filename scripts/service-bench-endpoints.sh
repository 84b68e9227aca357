#!/usr/bin/env bash
# service-bench.sh's third part: the services' own CPU per request for every endpoint
# (cpu_per_endpoint), with BEFORE_BIN_DIR side by side with an earlier build (before_and_after),
# and with INSTRUCTIONS their user-space instructions per request under callgrind
# (instructions_per_endpoint). Sourced by service-bench.sh, whose header says what each setting
# does; these functions use its variables and helpers (start_build, run_wrk, restore_data ...).
# shellcheck disable=SC2034,SC2154 # work, endpoints, before_dir, wrapper ... are service-bench.sh's

# The services' CPU per request for every endpoint, one run each (this build).
cpu_per_endpoint() {
	printf '\nService CPU per request (wrk -t%s -c%s, %ss per endpoint; orders-pg in prepared mode)\n' \
		"$threads" "$connections" "$cpu_duration"
	printf '  %-13s %-14s %8s %9s %9s %9s | %11s\n' service endpoint "req/s" "user us" "sys us" "total us" "database us"
	local service endpoint script measured rate user sys db_user db_sys
	for service in orders-pg orders-mongo; do
		start_build after "$service"
		for endpoint in "${endpoints[@]}"; do
			script=${endpoint%%:*}
			warm_up "$script"
			measured=$(run_wrk "$script" "$cpu_duration")
			read -r rate _ user sys db_user db_sys _ _ <<<"$measured"
			printf '  %-13s %-14s %8.0f %9.1f %9.1f %9.1f | %11.1f\n' "$service" "${endpoint#*:}" "$rate" "$user" "$sys" \
				"$(total "$user" "$sys")" "$(total "$db_user" "$db_sys")"
		done
		stop_service
		restore_data "$service"
	done
}

# median_of LIST: the median of space-separated numbers.
median_of() { tr ' ' '\n' <<<"$1" | grep . | median; }

# The same, PAIRS runs of each build per endpoint (BEFORE_BIN_DIR's, this one), alternately, then
# the medians side by side and whether a GET by id costs at most half of what it did.
before_and_after() {
	# Per "service build endpoint": the runs' req/s, user, sys and user+sys microseconds, as lists.
	local -A rates users systems totals
	local service pair build endpoint script measured rate user sys key order
	printf '\nService CPU per request, before (%s) and after (this build, WORKER_THREADS=%s), %s runs of each per endpoint, alternately\n' \
		"$before_dir" "$worker_threads" "$pairs"
	printf '(wrk -t%s -c%s, %ss per endpoint after a 2 s warm-up; orders-pg in prepared mode; medians of the runs)\n' \
		"$threads" "$connections" "$cpu_duration"
	for service in orders-pg orders-mongo; do
		for pair in $(seq "$pairs"); do
			# Before first in odd pairs, after first in even ones: a drift of the machine hits both.
			order=(before after)
			if ((pair % 2 == 0)); then order=(after before); fi
			for build in "${order[@]}"; do
				start_build "$build" "$service"
				# One line per run as it goes: each endpoint's user + system us per request.
				printf '  %s %s, run %d (runtime: %s), us per request:' "$service" "$build" "$pair" "$(runtime_of)"
				for endpoint in "${endpoints[@]}"; do
					script=${endpoint%%:*}
					warm_up "$script"
					measured=$(run_wrk "$script" "$cpu_duration")
					read -r rate _ user sys _ _ _ _ <<<"$measured"
					key="$service $build $script"
					rates[$key]+="$rate "
					users[$key]+="$user "
					systems[$key]+="$sys "
					totals[$key]+="$(total "$user" "$sys") "
					printf ' %s %.1f' "${endpoint#*:}" "$(total "$user" "$sys")"
				done
				printf '\n'
				stop_service
				restore_data "$service"
			done
		done
	done

	printf '\n  %-13s %-14s | %-35s | %-35s |\n' '' '' "before" "after"
	printf '  %-13s %-14s | %8s %8s %8s %8s | %8s %8s %8s %8s | %12s\n' service endpoint \
		"req/s" "user us" "sys us" "total us" "req/s" "user us" "sys us" "total us" "after/before"
	local verdicts=() line ratio half before_runs after_runs
	for service in orders-pg orders-mongo; do
		for endpoint in "${endpoints[@]}"; do
			script=${endpoint%%:*}
			line=()
			for build in before after; do
				key="$service $build $script"
				line+=("$(median_of "${rates[$key]}")" "$(median_of "${users[$key]}")" \
					"$(median_of "${systems[$key]}")" "$(median_of "${totals[$key]}")")
			done
			# after/before of the medians of user + system
			ratio=$(awk -v b="${line[3]}" -v a="${line[7]}" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
			printf '  %-13s %-14s | %8.0f %8.1f %8.1f %8.1f | %8.0f %8.1f %8.1f %8.1f | %12s\n' "$service" \
				"${endpoint#*:}" "${line[@]}" "$ratio"
			if [[ $script == get ]]; then
				half=$(awk -v b="${line[3]}" -v a="${line[7]}" 'BEGIN { print ((b > 0 && a <= b / 2) ? "yes" : "no") }')
				key="$service before get"
				before_runs=${totals[$key]% }
				key="$service after get"
				after_runs=${totals[$key]% }
				verdicts+=("$(printf '  %s GET by id: %.1f -> %.1f us of service CPU per request (runs before: %s; after: %s), after/before %s: at most half: %s' \
					"$service" "${line[3]}" "${line[7]}" "$before_runs" "$after_runs" "$ratio" "$half")")
			fi
		done
	done
	printf '\n'
	printf '%s\n' "${verdicts[@]}"
}

# The services' user-space instructions per request for every endpoint, counted by callgrind
# (INSTRUCTIONS): each build of each service runs under valgrind once, and per endpoint after a
# warm-up the count is zeroed, wrk sends requests for INSTRUCTIONS_DURATION seconds and the count is
# dumped (callgrind_control). Every thread of the service is counted, the driver's and the runtime's
# background tasks included; the kernel's work is not. Then the table, after/before per endpoint
# with BEFORE_BIN_DIR.
instructions_per_endpoint() {
	local -A counts
	local builds=(after) service build endpoint script out requests dumps part
	[[ -n $before_dir ]] && builds=(before after)
	printf '\nUser-space instructions per request (callgrind; wrk -t1 -c16, %ss per endpoint after a 2 s warm-up; orders-pg in prepared mode)\n' \
		"$instructions_duration"
	for service in orders-pg orders-mongo; do
		for build in "${builds[@]}"; do
			rm -f "$work"/callgrind.out*
			wrapper=("$(command -v valgrind)" -q --tool=callgrind --callgrind-out-file="$work/callgrind.out")
			start_build "$build" "$service"
			wrapper=()
			dumps=0
			for endpoint in "${endpoints[@]}"; do
				script=${endpoint%%:*}
				wrk -t1 -c16 -d2s -s "$work/$script.lua" "$base_url" >/dev/null
				callgrind_control -z "$service_pid" >/dev/null 2>&1
				out=$(wrk -t1 -c16 -d"${instructions_duration}s" -s "$work/$script.lua" "$base_url")
				callgrind_control -d "$service_pid" >/dev/null 2>&1
				dumps=$((dumps + 1))
				part="$work/callgrind.out.$dumps"
				if grep -qE 'Non-2xx|Socket errors' <<<"$out"; then
					printf '%s\n' "$out" >&2
					die "wrk saw errors from $service ($build) under callgrind"
				fi
				requests=$(awk '/ requests in / { print $1 }' <<<"$out")
				[[ -r $part && ${requests:-0} -gt 0 ]] || die "no callgrind count for $service ($build) $script"
				counts["$service $build $script"]=$(awk -v n="$requests" '/^summary: / { printf "%d", $2 / n }' "$part")
			done
			stop_service
			restore_data "$service"
		done
	done
	printf '  %-13s %-14s %12s %12s %12s\n' service endpoint before after after/before
	for service in orders-pg orders-mongo; do
		for endpoint in "${endpoints[@]}"; do
			script=${endpoint%%:*}
			local before=${counts["$service before $script"]:-} after=${counts["$service after $script"]}
			printf '  %-13s %-14s %12s %12s %12s\n' "$service" "${endpoint#*:}" "${before:--}" "$after" \
				"$(awk -v b="${before:-0}" -v a="$after" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
		done
	done
}
