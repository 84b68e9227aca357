#!/usr/bin/env bash
# OpenAPI-driven fuzzing of every service (orders-pg, orders-pg-hybrid, orders-mongo) over the
# local stack's real databases, with schemathesis (pinned, in a venv of its own under
# .local/fuzz). Each service runs on a fresh database of its own; schemathesis generates a fixed number of cases per operation from a fixed seed
# (examples, coverage and fuzzing phases, including the Prefer and Idempotency-Key headers) and
# fails on any 5xx and on any response that breaks the OpenAPI description (status code, content
# type, headers, body schema), or that accepts data the description rejects.
#
# Not checked: `positive_data_acceptance`, because one rule cannot be written in JSON Schema: the
# computed total (quantity x unit price, summed) must stay below 2^53, so some schema-valid bodies
# are rightly 422. Every other check of schemathesis runs.
#
# Usage: scripts/fuzz-api.sh [--install]   (the stack must be running: bash infra/local/stack.sh start)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PINNED=(schemathesis==4.32.5 pymongo==4.20.0) # pymongo only drops the fuzz database
EXAMPLES=20                                    # generated cases per operation and phase
SEED=20261201
DB=orders_fuzz
DB_HYBRID=orders_fuzz_hybrid # the hybrid layout refuses orders-pg's database
VENV=.local/fuzz/venv
STAMP="$VENV/.installed"

if [ ! -x "$VENV/bin/st" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "${PINNED[*]}" ]; then
	echo "fuzz: installing ${PINNED[*]} into $VENV"
	python3 -m venv "$VENV"
	"$VENV/bin/pip" install -q --disable-pip-version-check "${PINNED[@]}"
	printf '%s\n' "${PINNED[*]}" >"$STAMP"
fi
# --install: only the above (scripts/test.sh runs it beside the build: pip waits on the network).
[[ ${1:-} == --install ]] && exit 0

eval "$(bash infra/local/stack.sh env)"
# The workspace's features (--workspace), so the test build's dependencies are reused: with
# `-p orders-pg -p orders-pg-hybrid -p orders-mongo` cargo resolved other features for hyper,
# tower, libc and indexmap and compiled 56 crates again after the tests (tokio, mongodb, ring,
# rustls, tokio-postgres among them), minutes on a clean machine.
cargo build -q --workspace --bin orders-pg --bin orders-pg-hybrid --bin orders-mongo
for db in "$DB" "$DB_HYBRID"; do
	bash infra/local/stack.sh psql -q -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" >/dev/null
done
drop_mongo() { "$VENV/bin/python" -c 'import pymongo, sys; pymongo.MongoClient(sys.argv[1]).drop_database(sys.argv[2])' "$MONGODB_URI" "$DB"; }
drop_mongo

logs=$(mktemp -d)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	drop_mongo || true
	for db in "$DB" "$DB_HYBRID"; do
		bash infra/local/stack.sh psql -q -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	done
	rm -rf "$logs"
}
trap cleanup EXIT

# Starts a service on a free port; sets `url` to its base URL once it is ready. (Not called in a
# command substitution: that subshell would keep the pid from `cleanup`.)
start() {
	local name=$1 log="$logs/$1.log"
	shift
	env "$@" BIND_ADDR=127.0.0.1:0 LOG_FORMAT=json RUST_LOG=warn,orders_http=info "target/debug/$name" >"$log" 2>&1 &
	pids+=($!)
	local address=""
	for _ in $(seq 600); do
		address=$(sed -n 's/.*"message":"listening on \([0-9.:]*\)".*/\1/p' "$log" | head -n 1)
		[ -n "$address" ] && break
		sleep 0.1
	done
	[ -n "$address" ] || { cat "$log" >&2; echo "fuzz: $name did not start" >&2; return 1; }
	url="http://$address"
}

start orders-pg DATABASE_URL="${DATABASE_URL%/*}/$DB"
pg_url=$url
start orders-pg-hybrid DATABASE_URL="${DATABASE_URL%/*}/$DB_HYBRID"
hybrid_url=$url
start orders-mongo MONGODB_URI="$MONGODB_URI" MONGODB_DB="$DB"
mongo_url=$url

failed=0
for target in "orders-pg=$pg_url" "orders-pg-hybrid=$hybrid_url" "orders-mongo=$mongo_url"; do
	set -- "${target%%=*}" "${target#*=}"
	echo "fuzz: $1 at $2 ($EXAMPLES cases per operation and phase, seed $SEED)"
	if "$VENV/bin/st" run "$2/openapi.json" \
		--checks all --exclude-checks positive_data_acceptance \
		--phases examples,coverage,fuzzing --max-examples "$EXAMPLES" --seed "$SEED" \
		--generation-deterministic --workers 1 --no-color >"$logs/$1.st" 2>&1; then
		grep -E "generated|passed|failed" "$logs/$1.st" | tail -n 3
	else
		failed=1
		cat "$logs/$1.st"
		echo "fuzz: $1 FAILED"
	fi
done
if [ "$failed" = 0 ]; then echo "fuzz: PASS"; else exit 1; fi
