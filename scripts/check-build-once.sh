#!/usr/bin/env bash
# The demo builds once. `cargo run --release -p orders-bench -- demo` compiles orders-bench, then
# the demo runs `cargo build --release -p orders-bench -p orders-pg -p orders-mongo
# -p orders-pg-hybrid` for the service binaries. Cargo unifies features over the packages it is asked for, so that second build
# recompiles every dependency whose features differ between the two selections (about twenty
# crates when the demo asked for the services alone). This compares the features both selections
# resolve (`cargo tree`, no compiling, about a second) and fails when they differ. The package list
# is BUILD_PACKAGES in loadtest/bench/src/scaffold/services.rs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# One line per package: "name vX.Y.Z feature,feature", without markers and paths.
resolved() {
	cargo tree --quiet -e normal,build,features --prefix none --format '{p} {f}' "$@" |
		grep -E '^[^ ]+ v[0-9]' | sed -E 's/ \(\*\)$//; s/ \([^)]*\)//' | sort -u
}

first="$(resolved -p orders-bench)"
demo="$(resolved -p orders-bench -p orders-pg -p orders-mongo -p orders-pg-hybrid)"
if [[ "$first" != "$demo" ]]; then
	echo "check-build-once: the demo's build resolves other features than 'cargo run -p orders-bench':" >&2
	diff <(printf '%s\n' "$first") <(printf '%s\n' "$demo") >&2 || true
	echo "so it would compile the crates above again; see BUILD_PACKAGES in loadtest/bench/src/scaffold/services.rs" >&2
	exit 1
fi
echo "check-build-once: the demo's build needs nothing that 'cargo run -p orders-bench' has not compiled ($(wc -l <<<"$first") packages, same features)"
