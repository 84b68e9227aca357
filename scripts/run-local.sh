#!/usr/bin/env bash
# Runs both services on the local stack until Ctrl-C: starts PostgreSQL and mongod (installing
# them on first use), builds the release binaries, serves orders-pg on 127.0.0.1:8080 and
# orders-mongo on 127.0.0.1:8081, and on exit stops everything it started.
# Extra environment (PG_GIN_FASTUPDATE, PG_PLAN_CACHE_MODE, ...) passes through to the services.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash infra/local/stack.sh start >/dev/null
eval "$(bash infra/local/stack.sh env)"
export DATABASE_URL MONGODB_URI MONGODB_DB

cargo build --release -p orders-pg -p orders-mongo
# Where cargo put them: CARGO_TARGET_DIR when it is set (relative to the repository), else target/.
bin="${CARGO_TARGET_DIR:-target}/release"

pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	bash infra/local/stack.sh stop >/dev/null || true
	echo "stopped the services and the local stack"
}
trap cleanup EXIT INT TERM

BIND_ADDR=127.0.0.1:8080 "$bin/orders-pg" &
pids+=($!)
BIND_ADDR=127.0.0.1:8081 "$bin/orders-mongo" &
pids+=($!)

cat <<MSG

orders-pg     http://127.0.0.1:8080   (PostgreSQL $DATABASE_URL)
orders-mongo  http://127.0.0.1:8081   (MongoDB $MONGODB_URI/$MONGODB_DB)
Try: curl -s http://127.0.0.1:8080/diagnostics | python3 -m json.tool
Press Ctrl-C to stop.
MSG
wait
