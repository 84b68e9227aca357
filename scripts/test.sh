#!/usr/bin/env bash
# The project's one test command (the README's and CI's): starts the local stack (real
# PostgreSQL 18 and mongod 6.0.5 from pinned wheels), checks formatting, the Markdown files'
# relative links and lints, installs the monitoring tools the dashboard test runs (pinned Debian
# packages), runs every test of the workspace against those servers, checks the infrastructure
# files (the simulated cloud included) and fuzzes every service from its OpenAPI description
# (scripts/fuzz-api.sh). Stops the servers afterwards if it started them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*"; }

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
trap stop_stack EXIT
eval "$(bash infra/local/stack.sh env)"
export DATABASE_URL STACK_PG_ADMIN_URL HYBRID_DATABASE_URL STACK_PGH_ADMIN_URL MONGODB_URI MONGODB_DB PG_BIN K6

step "cargo fmt --check"
cargo fmt --all --check

step "every relative link of the Markdown files resolves"
python3 scripts/check-links.py

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "monitoring tools (pinned Debian packages: prometheus, postgres_exporter, node_exporter)"
bash infra/local/monitor.sh install

step "the demo builds once (cargo feature unification)"
bash scripts/check-build-once.sh

step "tests (PostgreSQL at $DATABASE_URL, MongoDB at $MONGODB_URI)"
if cargo nextest --version >/dev/null 2>&1; then
	cargo nextest run --workspace
else
	cargo test --workspace
fi

# After the tests: the simulated cloud's droplets run the debug binaries the test build has just
# compiled (SIMCLOUD_PROFILE=dev). Before them, it compiled every crate a third time in release
# (after clippy's check build and the test build) on a clean machine.
step "infrastructure checks"
SIMCLOUD_PROFILE=dev bash infra/ci/check-infra.sh

step "API fuzzing: schemathesis against every service over real databases"
bash scripts/fuzz-api.sh
