#!/usr/bin/env bash
# The project's one test command (the README's and CI's): starts the local stack (real
# PostgreSQL 18 and mongod 6.0.5 from pinned wheels), checks formatting, the Markdown files'
# relative links and lints, installs the monitoring tools the dashboard test runs (pinned Debian
# packages), runs every test of the workspace against those servers, checks the infrastructure
# files (the simulated cloud included) and fuzzes every service from its OpenAPI description
# (scripts/fuzz-api.sh). Stops the servers afterwards if it started them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Every stage's seconds, printed at the end (on failure too): where CI's time goes.
stage='' stage_began=$SECONDS timings=()
end_stage() {
	[[ -n $stage ]] && timings+=("$(printf '%5d s  %s' $((SECONDS - stage_began)) "$stage")")
	stage='' stage_began=$SECONDS
}
step() {
	end_stage
	stage=$*
	printf '\n==> %s\n' "$*"
}
print_timings() {
	end_stage
	printf '\n==> seconds per stage\n'
	printf '%s\n' "${timings[@]}"
	printf '%5d s  in all\n' "$SECONDS"
}

for component in rustfmt clippy; do
	if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
		step "installing the $component component"
		rustup component add "$component"
	fi
done

started_stack=0
if ! bash infra/local/stack.sh status >/dev/null 2>&1; then
	step "starting the local stack"
	bash infra/local/stack.sh start >/dev/null
	started_stack=1
fi
stop_stack() {
	if [ "$started_stack" = 1 ]; then
		bash infra/local/stack.sh stop >/dev/null || true
	fi
}
trap 'print_timings; stop_stack' EXIT
eval "$(bash infra/local/stack.sh env)"
export DATABASE_URL STACK_PG_ADMIN_URL HYBRID_DATABASE_URL STACK_PGH_ADMIN_URL MONGODB_URI MONGODB_DB PG_BIN K6

step "cargo fmt --check"
cargo fmt --all --check

step "every relative link of the Markdown files resolves"
python3 scripts/check-links.py

step "monitoring tools (pinned Debian packages: prometheus, postgres_exporter, node_exporter)"
bash infra/local/monitor.sh install

if cargo nextest --version >/dev/null 2>&1; then
	run_tests=(cargo nextest run --workspace)
else
	run_tests=(cargo test --workspace)
fi
step "the test build (${run_tests[*]} --no-run)"
"${run_tests[@]}" --no-run

# The infrastructure checks (the simulated cloud's three minutes most of all: droplets booting,
# rounds of 20-40 req/s) mostly wait, and need only the test build's binaries, while clippy only
# compiles (about five minutes on a clean 2-core machine): so they run at the same time. The
# simulated droplets run those debug binaries (SIMCLOUD_PROFILE=dev) as they are
# (SIMCLOUD_NO_BUILD=1: a cargo of theirs would wait for clippy's lock on target/debug). Their
# output follows clippy's. Nothing else runs meanwhile: the tests' measurements need the machine.
infra_log=$(mktemp)
step "infrastructure checks, started in the background (their output follows clippy's)"
SIMCLOUD_PROFILE=dev SIMCLOUD_NO_BUILD=1 bash infra/ci/check-infra.sh >"$infra_log" 2>&1 &
infra_pid=$!

step "cargo clippy --all-targets -- -D warnings"
clippy_status=0
nice -n 10 cargo clippy --workspace --all-targets --quiet -- -D warnings || clippy_status=$?

step "the demo builds once (cargo feature unification)"
build_once_status=0
bash scripts/check-build-once.sh || build_once_status=$?

step "infrastructure checks (waiting for them)"
infra_status=0
wait "$infra_pid" || infra_status=$?
cat "$infra_log"
rm -f "$infra_log"
if ((clippy_status || build_once_status || infra_status)); then
	echo "failed: clippy $clippy_status, the demo builds once $build_once_status, infrastructure checks $infra_status" >&2
	exit 1
fi

step "tests (PostgreSQL at $DATABASE_URL, MongoDB at $MONGODB_URI)"
"${run_tests[@]}"

step "API fuzzing: schemathesis against every service over real databases"
bash scripts/fuzz-api.sh
