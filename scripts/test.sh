#!/usr/bin/env bash
# The project's one test command (the README's and CI's): starts the local stack (real
# PostgreSQL 18 and mongod 6.0.5 from pinned wheels), checks formatting, the layout (no import
# cycle between a crate's modules, no file over 500 lines outside tests: scripts/check-layout.py),
# the Markdown files' relative links and lints, installs the monitoring tools the dashboard test
# runs and the headless Chromium the report's first-screen test opens (pinned Debian packages), runs every test of the
# workspace against those servers, checks the infrastructure files (the simulated cloud included)
# and fuzzes every service from its OpenAPI description (scripts/fuzz-api.sh), and, as root,
# checks the replicated stack (infra/local/test-replicas.sh) and runs the replica tests on it
# (scripts/replica-tests.sh). Stops the servers afterwards if it started them.
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

step "layout: no import cycle between a crate's modules, no file over 500 lines outside tests"
python3 scripts/check-layout-test.py
python3 scripts/check-layout.py

step "every relative link of the Markdown files resolves"
python3 scripts/check-links.py

step "monitoring tools (pinned Debian packages: prometheus, postgres_exporter, node_exporter)"
bash infra/local/monitor.sh install

step "headless Chromium for the report's first-screen test (pinned Debian package)"
bash scripts/chromium.sh install

step "a PostgreSQL built with TLS for the TLS tests (the stack's wheel has none; pinned Debian package)"
bash infra/local/tls.sh install

if cargo nextest --version >/dev/null 2>&1; then
	run_tests=(cargo nextest run --workspace)
else
	run_tests=(cargo test --workspace)
fi

# Clippy's lints inside the test build: the workspace's crates are compiled by clippy-driver
# (what `cargo clippy` runs, as rustc with clippy's lints; the dependencies by rustc), with
# `-D warnings`. Every target `cargo clippy --all-targets` checks is one the test build compiles
# (libraries with and without their tests, binaries, tests, examples; there are no benches),
# while a separate `cargo clippy` checked every dependency once more (246 s of a clean CI run
# here). Exported for every cargo below, so none of them compiles anything again.
clippy_driver=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver || true)
[[ -x $clippy_driver ]] || {
	echo "clippy-driver not found (rustup component add clippy)" >&2
	exit 1
}
export RUSTC_WORKSPACE_WRAPPER=$clippy_driver CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__

# The infrastructure checks (the simulated cloud's three to four minutes most of all: droplets
# booting, rounds of 20-40 req/s) mostly wait, and need only the binaries the simulated droplets
# run: those are built first (`cargo build --bins`: the dependencies and the workspace's libraries
# the test build then reuses) and the checks run while the rest of the test build compiles (the
# tests' harnesses and dev-dependencies; from cold the first step took 668 s when it built the
# harnesses that use the binaries too, 463 s now, and the whole build with the checks 946 -> 714 s).
# That rest compiles orders-bench once more with the features its tests enable (half a minute,
# beside the checks), so the simulated cloud copies the binaries it was given first. The droplets
# get those debug binaries (SIMCLOUD_PROFILE=dev) as they are (SIMCLOUD_NO_BUILD=1: a cargo of
# theirs would wait for the test build's lock on target/debug). Their output follows the build's.
# Nothing else runs beside them: the tests' measurements need the machine.

# The fuzzing's pinned wheels install during the build (pip waits on the network).
fuzz_install_log=$(mktemp)
bash scripts/fuzz-api.sh --install >"$fuzz_install_log" 2>&1 &
fuzz_install_pid=$!
step "the binaries, with clippy's lints (-D warnings)"
cargo build --workspace --bins

infra_log=$(mktemp)
step "infrastructure checks, started in the background (their output follows the test build's)"
SIMCLOUD_PROFILE=dev SIMCLOUD_NO_BUILD=1 bash infra/ci/check-infra.sh >"$infra_log" 2>&1 &
infra_pid=$!

step "the rest of the test build, with clippy's lints (${run_tests[*]} --no-run)"
build_status=0
nice -n 10 "${run_tests[@]}" --no-run || build_status=$?

step "the demo builds once (cargo feature unification)"
build_once_status=0
bash scripts/check-build-once.sh || build_once_status=$?

step "infrastructure checks (waiting for them)"
infra_status=0
wait "$infra_pid" || infra_status=$?
cat "$infra_log"
rm -f "$infra_log"
if ((build_status || build_once_status || infra_status)); then
	echo "failed: the test build $build_status, the demo builds once $build_once_status, infrastructure checks $infra_status" >&2
	exit 1
fi

step "tests (PostgreSQL at $DATABASE_URL, MongoDB at $MONGODB_URI)"
"${run_tests[@]}"

step "API fuzzing: schemathesis against every service over real databases"
if ! wait "$fuzz_install_pid"; then
	cat "$fuzz_install_log"
	exit 1
fi
rm -f "$fuzz_install_log"
bash scripts/fuzz-api.sh

# The replicated stack (issues 42 and 43; root only: network namespaces, a bridge, cgroups):
# infra/local/test-replicas.sh starts one, checks it (roles, synchronous replication, round trips,
# budgets), runs scripts/replica-tests.sh on it (the services' replica tests, `experiment
# replication --quick`, then `experiment failover --quick`), stops it and checks nothing is left.
# The single servers keep running (`--only-replicas`).
if [[ $(id -u) != 0 ]]; then
	step "replicated stack: skipped (needs root: network namespaces, a bridge and cgroups)"
else
	step "replicated stack: infra/local/test-replicas.sh, with the replica tests while it is up"
	bash infra/local/test-replicas.sh bash scripts/replica-tests.sh
fi
