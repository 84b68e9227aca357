#!/usr/bin/env bash
# The tests that need the replicated local stack (issues 42 and 43), run by
# `infra/local/test-replicas.sh scripts/replica-tests.sh` (scripts/test.sh) on the stack it has
# just checked, with REPLICA_DATABASE_URL, REPLICA_MONGODB_URI and REPLICA_PATRONI_URLS exported:
# the services' replica tests (each integration binary's `replicas::`: an acknowledged write is on
# the synchronous standby / on a majority, and /diagnostics says so), `experiment replication
# --quick` (bytes shipped per write, what each write waited for), the dashboard's Replication row
# against one exporter per member and a real Prometheus (infra/monitoring/tests/replication_live.rs,
# on its own: a test that pauses replay would stall its writes), then, last since it kills each
# engine's primary, `experiment failover --quick` (no acknowledged write lost, none twice; the test
# waits for the old primaries to be standbys again, but the primaries have moved).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
: "${REPLICA_DATABASE_URL:?start the replicated stack and export its variables (see the header)}"
if cargo nextest --version >/dev/null 2>&1; then
	cargo nextest run --workspace \
		-E '(binary(integration) & test(/^replicas::/)) | (binary(end_to_end) & test(/^experiment_replication::/))'
	cargo nextest run --workspace -E 'binary(replication_live)'
	cargo nextest run --workspace -E 'binary(end_to_end) & test(/^experiment_failover::/)'
else
	cargo test --workspace --test integration -- replicas::
	cargo test --workspace --test end_to_end -- experiment_replication::
	cargo test -p orders-monitoring --test replication_live
	cargo test --workspace --test end_to_end -- experiment_failover::
fi
