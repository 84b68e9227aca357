#!/usr/bin/env bash
# Quick test of infra/do/do.sh (seconds, no root): the simulated cloud's doctl over a state-only
# account (droplets are records, nothing boots; infra/ci/simcloud), ssh and scp that only record
# what they are asked, so `up`, `seed`, `round`, `toggle` and `down` run their real code paths.
# Then the recorded calls and the rendered files are checked: the plan and its cost before
# anything is created, the refusals (binaries not built for Linux x86-64, a size the region does
# not offer, more droplets than the account's limit), firewall rules, tags, secrets only in
# root-only files, the flags passed to orders-bench (against the real binary's --help), teardown
# that keeps a default VPC and can run twice; finally DRY_RUN=1 must run nothing, with HYBRID=1
# and with up --replicas 3 (the members, their firewall rules, URLs, secrets and setup calls, the
# refusals, failover's calls). The droplets
# themselves, the firewalls enforced and every remote command run for real are the subject of
# test-do-simcloud.sh.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DO=$REPO/infra/do/do.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/fakebin" "$work/bin" "$work/arm"

/usr/bin/python3 "$REPO/infra/ci/simcloud/world.py" create "$work/cloud" --operator-ip 198.51.100.7 --no-network >/dev/null
export SIMCLOUD_WORLD=$work/cloud
cat >"$work/fakebin/doctl" <<FAKE
#!/usr/bin/env bash
{ printf 'doctl'; printf '\t%s' "\$@"; printf '\n'; } >>"\$FAKE_LOG"
exec "$work/cloud/bin/doctl" "\$@"
FAKE
cat >"$work/fakebin/ssh" <<'FAKE'
#!/usr/bin/env bash
# Records the call; keeps what a `bash -s` call would have run on the droplet.
{ printf 'ssh'; printf '\t%s' "$@"; printf '\n'; } >>"$FAKE_LOG"
case "$*" in *"bash -s"*) cat >>"$FAKE_STATE/ssh-stdin" ;; esac
exit 0
FAKE
cat >"$work/fakebin/scp" <<'FAKE'
#!/usr/bin/env bash
# Records the call; a local destination is created as scp would.
{ printf 'scp'; printf '\t%s' "$@"; printf '\n'; } >>"$FAKE_LOG"
dest=${*: -1}
case $dest in *:*) ;; *) mkdir -p "$dest" ;; esac
FAKE
chmod +x "$work/fakebin/"*
# ELF headers: x86-64 (e_machine 0x3e) for the real run, aarch64 (0xb7) for the refusal.
elf() { printf '\177ELF\002\001\001\000\000\000\000\000\000\000\000\000\002\000%b\000' "$1"; }
for bin in orders-pg orders-mongo orders-bench; do elf '\076' >"$work/bin/$bin"; elf '\267' >"$work/arm/$bin"; done

export PATH="$work/fakebin:$PATH" FAKE_LOG=$work/calls.tsv FAKE_STATE=$work
export TAG=obtest OPERATOR_IP=198.51.100.7 LOAD_COUNT=2 REGION=fra1
export BIN_DIR=$work/bin STATE_DIR=$work/do-state RESULTS_DIR=$work/results
# A well-formed pin of Percona's tarball (nothing is downloaded here).
pin=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
export MONGODB_EXPORTER_SHA256=$pin
unset DRY_RUN SSH_IDENTITY VPC_RANGE SSH_KEY ALLOW_WIDE_OPERATOR PG_PLAN_LOG_MS HYBRID
: >"$FAKE_LOG"

# --- helpers ----------------------------------------------------------------------------------
passed=0
failed=0
check() { # DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then
    passed=$((passed + 1))
    printf '  ok    %s\n' "$what"
  else
    failed=$((failed + 1))
    printf '  FAIL  %s\n' "$what"
  fi
}
same() { [ "$1" = "$2" ]; }
mark() { wc -l <"$FAKE_LOG"; }
calls_since() { tail -n +"$(($1 + 1))" "$FAKE_LOG"; }
# run_do NAME ARGS...: run do.sh, keep its output in $work/NAME.out, return its status.
run_do() { local name=$1; shift; bash "$DO" "$@" >"$work/$name.out" 2>&1 </dev/null; }
state() { /usr/bin/python3 -c "import json; s=json.load(open('$work/cloud/state.json')); print($1)"; }
creates() { calls_since "$1" | grep -cE '	(create|update)	' || true; }

# The value of FLAG in the recorded `doctl compute firewall create` call named NAME.
fw_flag() {
  awk -F'\t' -v n="$1" -v f="$2" '$2 == "compute" && $3 == "firewall" && $4 == "create" {
      name = ""; value = ""
      for (i = 5; i < NF; i++) { if ($i == "--name") name = $(i + 1); if ($i == f) value = $(i + 1) }
      if (name == n) print value
    }' "$FAKE_LOG"
}
# The inbound rules of firewall NAME for PORT, one per line.
rules() { fw_flag "$1" --inbound-rules | tr ' ' '\n' | grep "ports:$2," | sort; }
all_rules() { awk -F'\t' '$4 == "create" && $3 == "firewall" { for (i = 5; i < NF; i++) if ($i == "--inbound-rules") print $(i + 1) }' "$FAKE_LOG" | tr ' ' '\n'; }
ip_of() { state "next(d['$2_ip'] for d in s['droplets'] if d['name'] == '$TAG-$1')"; }
droplet_creates() { awk -F'\t' '$2 == "compute" && $3 == "droplet" && $4 == "create"' "$FAKE_LOG"; }
lines() { grep -c . || true; }
# (grep -q on a here-string, not a pipe: under pipefail a writer cut short by grep's early exit
# would turn a match into a failure.)
has_call() { grep -q -- "$2" <<<"$(calls_since "$1")"; }
op=$OPERATOR_IP/32
# Every --flag of a recorded command line must be one the real orders-bench SUBCOMMAND accepts.
bench=''
target_dir=${CARGO_TARGET_DIR:-target}
case $target_dir in /*) ;; *) target_dir=$REPO/$target_dir ;; esac
for candidate in "$target_dir/release/orders-bench" "$target_dir/debug/orders-bench"; do
  if [ -x "$candidate" ]; then bench=$candidate; break; fi
done
flags_known() { # SUBCOMMAND COMMAND-LINE
  local help flag
  help=$("$bench" "$1" --help)
  for flag in $(printf '%s\n' "$2" | grep -oE '(^| )--[a-z][a-z0-9-]*' | tr -d ' ' | sort -u); do
    grep -qE -- "(^|[ ,])$flag([ =,]|$)" <<<"$help" || { echo "orders-bench $1 has no $flag" >&2; return 1; }
  done
}

echo "refusals before anything is created"
BIN_DIR=$work/arm run_do up-arm up --yes || true
check "binaries built for aarch64 are refused by name" grep -q "aarch64" "$work/up-arm.out"
APP_SIZE=c-16 REGION=ams3 run_do up-size up --yes || true
check "a size the region does not offer is refused" grep -q "c-16 .* not offered in ams3" "$work/up-size.out"
LOAD_COUNT=8 run_do up-limit up --yes || true
check "more droplets than the account's limit (10) are refused" grep -q "may have 10 droplets" "$work/up-limit.out"
run_do up-ask up || true
check "without --yes and without a terminal up asks and stops" grep -q "nothing created" "$work/up-ask.out"
for range in 0.0.0.0/0 198.51.100.0/24 198.51.100.0/31 ::/0 2001:db8::/64; do
  OPERATOR_IP=$range run_do up-wide up --yes || true
  check "OPERATOR_IP=$range (more than one address) is refused, naming ALLOW_WIDE_OPERATOR=1" \
    grep -q "is a range of 2^[0-9]* addresses.*ALLOW_WIDE_OPERATOR=1" "$work/up-wide.out"
done
for bad in 198.51.100.7/33 198.51.100.7/x; do
  OPERATOR_IP=$bad run_do up-bad up --yes || true
  check "OPERATOR_IP=$bad is refused" grep -q "OPERATOR_IP=$bad: " "$work/up-bad.out"
done
MONGODB_EXPORTER_SHA256='' run_do up-pin up --yes || true
check "without MONGODB_EXPORTER_SHA256 up refuses, saying where the checksum is" \
  grep -q "MONGODB_EXPORTER_SHA256=(empty): .*mongodb_exporter_0.47.1_checksums.txt" "$work/up-pin.out"
MONGODB_EXPORTER_SHA256=${pin^^} run_do up-pin up --yes || true
check "a malformed MONGODB_EXPORTER_SHA256 is refused" grep -q "MONGODB_EXPORTER_SHA256=${pin^^}: " "$work/up-pin.out"
PG_PLAN_LOG_MS=20ms run_do up-plan up --yes || true
check "PG_PLAN_LOG_MS must be whole milliseconds" grep -q "PG_PLAN_LOG_MS=20ms: give whole milliseconds" "$work/up-plan.out"
HYBRID=1 run_do up-hybrid-bin up --yes || true
check "HYBRID=1 without orders-pg-hybrid in BIN_DIR is refused, saying how to build it" \
  grep -q "bin/orders-pg-hybrid missing: cargo build --release -p orders-pg -p orders-mongo -p orders-pg-hybrid -p orders-bench" "$work/up-hybrid-bin.out"
HYBRID=yes run_do up-hybrid-bad up --yes || true
check "HYBRID is 0 or 1" grep -q "HYBRID=yes: 1 (the hybrid's pair of droplets too) or 0" "$work/up-hybrid-bad.out"
check "none of them created anything" same "$(creates 0)" 0

echo "up (LOAD_COUNT=2)"
check "up exits 0" run_do up up --yes
check "the plan and its hourly cost come before the first droplet is created" \
  awk '/USD a day\) once up/ { plan = NR } /==> droplets/ { made = NR } END { exit !(plan && made && plan < made) }' "$work/up.out"
check "tag $TAG created" grep -qx "doctl	compute	tag	create	$TAG" "$FAKE_LOG"
check "VPC named $TAG-vpc" grep -q "doctl	vpcs	create	--name	$TAG-vpc	" "$FAKE_LOG"
check "five firewalls, all named $TAG-*" same "$(awk -F'\t' '$3 == "firewall" && $4 == "create"' "$FAKE_LOG" | grep -c "	--name	$TAG-")" 5
check "postgres-db: 5432 only from the postgres-app and load tags" \
  same "$(rules "$TAG-postgres-db" 5432 | tr '\n' ' ')" "protocol:tcp,ports:5432,tag:$TAG-load protocol:tcp,ports:5432,tag:$TAG-postgres-app "
check "mongo-db: 27017 only from the mongo-app and load tags" \
  same "$(rules "$TAG-mongo-db" 27017 | tr '\n' ' ')" "protocol:tcp,ports:27017,tag:$TAG-load protocol:tcp,ports:27017,tag:$TAG-mongo-app "
check "apps: 8080 only from the load and monitor tags" \
  same "$(rules "$TAG-apps" 8080 | tr '\n' ' ')" "protocol:tcp,ports:8080,tag:$TAG-load protocol:tcp,ports:8080,tag:$TAG-monitor "
check "load: the agents' 9400 only from the load tag" same "$(rules "$TAG-load" 9400)" "protocol:tcp,ports:9400,tag:$TAG-load"
check "database ports open on the database firewalls only" same "$(all_rules | grep -c -e ports:5432 -e ports:27017)" 4
check "apps firewall applies to both app tags" same "$(fw_flag "$TAG-apps" --tag-names)" "$TAG-postgres-app,$TAG-mongo-app"
check "every firewall lets SSH in from the operator only" same "$(all_rules | grep ports:22, | sort -u)" "protocol:tcp,ports:22,address:$op"
check "SSH rule on each of the five firewalls" same "$(all_rules | grep -c ports:22,)" 5
check "no inbound rule from any other address" same "$(all_rules | grep address: | grep -vc "address:$op$")" 0
check "the operator's address opens SSH only (Grafana and Prometheus: do.sh tunnel)" \
  same "$(all_rules | grep "address:$op$" | grep -vc '^protocol:tcp,ports:22,')" 0
check "no firewall opens Grafana (3000)" same "$(all_rules | grep -c -e 'ports:3000,')" 0
check "Prometheus (9090) only from the load tag, on the monitor (remote write)" \
  same "$(rules "$TAG-monitor" 9090)/$(all_rules | grep -c 'ports:9090,')" "protocol:tcp,ports:9090,tag:$TAG-load/1"
check "postgres_exporter (9187) only from the monitor tag, on postgres-db" \
  same "$(rules "$TAG-postgres-db" 9187)/$(all_rules | grep -c 'ports:9187,')" "protocol:tcp,ports:9187,tag:$TAG-monitor/1"
check "the MongoDB exporter (9216) only from the monitor tag, on mongo-db" \
  same "$(rules "$TAG-mongo-db" 9216)/$(all_rules | grep -c 'ports:9216,')" "protocol:tcp,ports:9216,tag:$TAG-monitor/1"
check "node_exporter only from the monitor tag" same "$(all_rules | grep ports:9100 | sort -u)" "protocol:tcp,ports:9100,tag:$TAG-monitor"
check "seven droplets created (2 db, 2 app, 2 load, monitor)" same "$(droplet_creates | lines)" 7
check "every droplet carries $TAG and its role tag" \
  same "$(droplet_creates | grep -cE "	--tag-names	$TAG,$TAG-(postgres-db|mongo-db|postgres-app|mongo-app|load|monitor)(	|$)")" 7
check "every droplet in the VPC with user-data" same "$(droplet_creates | grep "	--vpc-uuid	vpc-" | grep -c "	--user-data-file	")" 7
check "database droplets c-2, apps and load c-8" \
  same "$(droplet_creates | grep -c "	--size	c-2	")/$(droplet_creates | grep -c "	--size	c-8	")" "2/4"
check "rendered user-data has no placeholder left" bash -c "! grep -l '__[A-Z_]*__' '$STATE_DIR'/user-data/*.yaml"
check "secrets.env holds the seven passwords (0600)" \
  bash -c "[ \$(grep -c '^[A-Z_]*_PASSWORD=[0-9a-f]\{32\}$' '$STATE_DIR/secrets.env') = 7 ] && [ \$(stat -c %a '$STATE_DIR/secrets.env') = 600 ]"
check "no user-data holds a password (the metadata service hands it to any local user)" \
  bash -c "! cat '$STATE_DIR'/user-data/*.yaml | grep -qF -f <(sed -n 's/^[A-Z_]*PASSWORD=//p' '$STATE_DIR/secrets.env')"
check "no cloud-init template names a password" bash -c "! grep -l 'PASSWORD__' '$REPO'/infra/do/cloud-init/*.yaml '$REPO'/infra/engines/*/cloud-init/*.yaml"
check "user-data holding a password is refused before any droplet is made" bash -c "
  set -a; . '$REPO/infra/do/config.sh'; . '$REPO/infra/do/lib.sh'; . '$STATE_DIR/secrets.env'; set +a
  printf 'x: %s\n' \"\$PG_LOADER_PASSWORD\" >'$work/leaky.yaml'; holds_secret '$work/leaky.yaml' && ! holds_secret '$STATE_DIR/user-data/postgres-db.yaml'"
check "the database droplets' role passwords are copied after boot, 0600" \
  bash -c "grep -qx 'PG_SERVICE_PASSWORD=[0-9a-f]*' '$STATE_DIR/env/postgres-db.env' && grep -qx 'MONGO_LOADER_PASSWORD=[0-9a-f]*' '$STATE_DIR/env/mongo-db.env' && [ \$(stat -c %a '$STATE_DIR/env/postgres-db.env') = 600 ]"
check "postgres-db and mongo-db get their roles' passwords over scp, then set them up" \
  bash -c "grep -q '^scp	.*/env/postgres-db.env	.*/migrations.tar	.*/server.key	.*/server.crt	.*/ca.crt	root@$(ip_of postgres-db public):/opt/orders/incoming/' '$FAKE_LOG' &&
    grep -q '^scp	.*/env/mongo-db.env	.*/server.key	.*/server.crt	.*/ca.crt	root@$(ip_of mongo-db public):/opt/orders/incoming/' '$FAKE_LOG' &&
    grep -q 'ALTER ROLE orders_service IN DATABASE orders SET search_path = orders, public' '$FAKE_STATE/ssh-stdin' && grep -qF 'Role|ordersLoader|' '$FAKE_STATE/ssh-stdin'"
check "Grafana's password goes to the monitor after boot" grep -q "^scp	.*/env/grafana.env	root@$(ip_of monitor public):/opt/orders/incoming/" "$FAKE_LOG"
check "the exporters' settings (their roles' passwords) go to the database droplets after boot, 0600" \
  bash -c "grep -q '^scp	.*/env/postgres-exporter.env	.*postgres-queries.yaml	root@$(ip_of postgres-db public):/opt/orders/incoming/' '$FAKE_LOG' &&
    grep -q '^scp	.*/env/mongodb-exporter.env	root@$(ip_of mongo-db public):/opt/orders/incoming/' '$FAKE_LOG' &&
    grep -qx 'DATA_SOURCE_NAME=postgresql://orders_monitor:[0-9a-f]*@127.0.0.1:5432/orders?sslmode=disable' '$STATE_DIR/env/postgres-exporter.env' &&
    grep -qx 'LISTEN_ADDRESS=$(ip_of mongo-db private):9216' '$STATE_DIR/env/mongodb-exporter.env' &&
    [ \$(stat -c %a '$STATE_DIR/env/postgres-exporter.env')/\$(stat -c %a '$STATE_DIR/env/mongodb-exporter.env') = 600/600 ]"
check "the plan log's threshold (PG_PLAN_LOG_MS, 20 by default) reaches postgres-db" \
  grep -q "root@$(ip_of postgres-db public)	bash -s -- 20$" "$FAKE_LOG"
check "mongo-db installs Percona's exporter only with the pinned checksum" \
  grep -q "echo \"$pin  \$download/\$exporter.tar.gz\" | sha256sum --check --strict" "$STATE_DIR/user-data/mongo-db.yaml"
check "each load droplet's agent pushes to the monitor's Prometheus, tagged with its name" \
  bash -c "grep -qx 'K6_PROMETHEUS_RW_SERVER_URL=http://$(ip_of monitor private):9090/api/v1/write' '$STATE_DIR/env/k6-remote-write-load-2.env' &&
    grep -qx 'K6_TAGS=instance:$TAG-load-2' '$STATE_DIR/env/k6-remote-write-load-2.env'"
check "Grafana reads Prometheus on the monitor's VPC address" \
  grep -qx "PROMETHEUS_URL=http://$(ip_of monitor private):9090" "$STATE_DIR/env/grafana.env"
check "postgres-app env points at the postgres-db private address as orders_service (0600)" \
  bash -c "grep -qx \"DATABASE_URL='postgres://orders_service:[0-9a-f]*@$(ip_of postgres-db private):5432/orders?sslmode=verify-full&sslrootcert=/etc/orders/tls/ca.crt'\" '$STATE_DIR/env/orders-pg.env' && [ \$(stat -c %a '$STATE_DIR/env/orders-pg.env') = 600 ]"
check "mongo-app env points at mongo-db as orders_service and writes with w:majority, j:true" \
  bash -c "grep -qx \"MONGODB_URI='mongodb://orders_service:[0-9a-f]*@$(ip_of mongo-db private):27017/?authSource=admin&tls=true&tlsCAFile=/etc/orders/tls/ca.crt'\" '$STATE_DIR/env/orders-mongo.env' && grep -Pzq 'MONGO_WRITE_CONCERN=majority\nMONGO_JOURNAL=true\n' '$STATE_DIR/env/orders-mongo.env'"
check "the load droplets' env names both databases, as the seeding roles (no superuser, no root), over verified TLS" \
  bash -c "grep -q '=.postgres://orders_loader:[0-9a-f]*@$(ip_of postgres-db private):5432/orders?sslmode=verify-full&sslrootcert=/etc/orders/tls/ca.crt' '$STATE_DIR/env/bench.env' && grep -q '=.mongodb://orders_loader:[0-9a-f]*@$(ip_of mongo-db private):27017/?authSource=admin&tls=true&tlsCAFile=/etc/orders/tls/ca.crt' '$STATE_DIR/env/bench.env'"
check "postgres-db pg_hba admits the service's role and the seeding role from the VPC range, over TLS only" bash -c "
  grep -q 'hostssl orders orders_service $(state 's["vpcs"][0]["ip_range"]') scram-sha-256' '$STATE_DIR/user-data/postgres-db.yaml' &&
  grep -q 'hostssl orders orders_loader $(state 's["vpcs"][0]["ip_range"]') scram-sha-256' '$STATE_DIR/user-data/postgres-db.yaml' &&
  ! grep -Eq ' host orders orders_(service|loader) ' '$STATE_DIR/user-data/postgres-db.yaml' &&
  ! grep -q 'listen_addresses = ' '$STATE_DIR/user-data/postgres-db.yaml' && grep -q '^        bindIp: 127.0.0.1$' '$STATE_DIR/user-data/mongo-db.yaml'"
check "up made the databases' CA and a certificate per database droplet for its VPC address; the keys 0600 in a 0700 folder" bash -c "
  d='$STATE_DIR/tls' && [ \$(stat -c %a \"\$d\") = 700 ] && [ \$(stat -c %a \"\$d/ca.key\") = 600 ] &&
  for r in postgres-db=$(ip_of postgres-db private) mongo-db=$(ip_of mongo-db private); do
    [ \$(stat -c %a \"\$d/\${r%=*}.key\") = 600 ] && openssl verify -CAfile \"\$d/ca.crt\" \"\$d/\${r%=*}.crt\" >/dev/null &&
      openssl x509 -in \"\$d/\${r%=*}.crt\" -noout -ext subjectAltName | grep -q \"IP Address:\${r#*=},\" || exit 1
  done"
check "the CA's key is sent nowhere; every app and load droplet gets the CA's certificate" bash -c "
  ! grep -q 'ca.key' '$FAKE_LOG' && [ \$(grep -c '^scp	.*/tls/ca.crt	' '$FAKE_LOG') -ge 4 ]"
# migrations_match SERVICE FOLDER LOCK-VARIABLE: the migrations PostgreSQL's remote/setup.sh applies from
# migrations/FOLDER are the ones SERVICE carries (same versions), under its lock.
migrations_match() {
  local rs=$REPO/services/$1/src/migrate.rs lock
  [ "$(grep -o '("[0-9]\{4\}_[a-z_]*"' "$rs" | tr -d '("')" = "$(for f in "$REPO/migrations/$2"/*.sql; do basename "$f" .sql; done)" ] &&
    lock=$(sed -n 's/^const MIGRATION_LOCK: i64 = 0x\([0-9a-f_]*\);/\1/p' "$rs" | tr -d _) &&
    grep -qx "$3=$((16#$lock))" "$REPO/infra/engines/postgres/remote/setup.sh" &&
    grep -q "migrations=$2 .*lock=\$$3 " "$REPO/infra/engines/postgres/remote/setup.sh"
}
check "the PostgreSQL migrations up applies are the ones orders-pg runs (same versions, same lock)" \
  migrations_match orders-pg postgres MIGRATION_LOCK
check "on hybrid-db, the ones orders-pg-hybrid runs (same versions, same lock)" \
  migrations_match orders-pg-hybrid postgres-hybrid HYBRID_MIGRATION_LOCK
check "first-boot apt waits for the dpkg lock" same "$(grep -l 'DPkg::Lock::Timeout' "$STATE_DIR"/user-data/*.yaml | lines)" 7
check "k6 and Grafana are pinned" bash -c "grep -q 'k6=1\\.1\\.0' '$STATE_DIR/user-data/load-1.yaml' && grep -q 'grafana=[0-9]' '$STATE_DIR/user-data/monitor.yaml'"
check "Prometheus targets are valid JSON" python3 -c "import json,sys; [json.load(open(f)) for f in sys.argv[1:]]" "$STATE_DIR"/targets/*.json
check "Prometheus scrapes node_exporter on all seven droplets" same "$(grep -c ':9100"' "$STATE_DIR/targets/node-do.json")" 7
check "Prometheus scrapes both exporters on the database droplets' private addresses" \
  bash -c "grep -q '\"$(ip_of postgres-db private):9187\"' '$STATE_DIR/targets/postgres-do.json' && grep -q '\"$(ip_of mongo-db private):9216\"' '$STATE_DIR/targets/mongodb-do.json'"
check "up ends with the cost of what exists" grep -q "1.16071 USD/hour .* for 7 droplet(s) that exist now" "$work/up.out"
check "binaries copied to both app droplets and both load droplets" same "$(grep -cE "^scp	.*/bin/orders-(pg|mongo|bench)	" "$FAKE_LOG")" 4
if command -v cloud-init >/dev/null; then
  for f in "$STATE_DIR"/user-data/*.yaml; do
    check "cloud-init schema: rendered $(basename "$f")" cloud-init schema --config-file "$f"
  done
fi

echo "up again (idempotent)"
m=$(mark)
check "second up exits 0" run_do up2 up
check "no droplet, firewall, VPC or tag created twice" same "$(calls_since "$m" | grep -cE '	create	' || true)" 0
check "firewalls updated to the current rules" same "$(calls_since "$m" | grep -c "	firewall	update	")" 5

echo "seed and round"
m=$(mark)
check "seed exits 0" run_do seed seed --orders 1000
check "every database is seeded from the first load droplet" has_call "$m" "root@$(ip_of load-1 public)	.*orders-bench seed --target all .*--orders 1000"
m=$(mark)
check "round exits 0" run_do round round --mix shop --repeats 2
check "the round starts detached on the first load droplet" has_call "$m" "root@$(ip_of load-1 public)	orders-round start "
check "load-2's agent runs the second segment (--followers)" has_call "$m" "orders-round start .*--followers http://$(ip_of load-2 private):9400"
check "the services by their private addresses" has_call "$m" "--pg-url http://$(ip_of postgres-app private):8080 --mongo-url http://$(ip_of mongo-app private):8080"
check "the round's own unit gives its k6 the remote-write settings (the leader's k6 pushes too)" \
  bash -c "grep -q 'EnvironmentFile=-/etc/orders/k6-remote-write.env' '$REPO/infra/do/remote/round.sh' &&
    grep -qx 'K6_TAGS=instance:$TAG-load-1' '$STATE_DIR/env/k6-remote-write-load-1.env'"
check "fresh data before every repeat (--reseed)" has_call "$m" "orders-round start .* --reseed "
check "the round reads the droplet's plan log (--plan-log-ms, PG_PLAN_LOG_MS)" has_call "$m" "orders-round start .* --plan-log-ms 20"
check "do.sh waits for the round and copies its folder back" \
  bash -c "grep -q 'orders-round wait' '$FAKE_LOG' && grep -q '^scp	.*/opt/orders/results/' '$FAKE_LOG'"
if [ -n "$bench" ]; then
  check "every flag of the round is one orders-bench round accepts" \
    flags_known round "$(grep -o 'orders-round start [^	]*' "$FAKE_LOG" | tail -n 1 | cut -d' ' -f4-)"
  check "every flag of the seed is one orders-bench seed accepts" \
    flags_known seed "$(grep -o 'orders-bench seed [^	]*' "$FAKE_LOG" | tail -n 1 | cut -d' ' -f3-)"
  check "a wrong flag is caught (--pg)" bash -c "$(declare -f flags_known); bench='$bench'; ! flags_known round '--pg http://x'"
else
  echo "  note  no orders-bench binary built: the flags are not checked against its --help"
fi

echo "toggle"
m=$(mark)
check "toggle PG_PLAN_CACHE_MODE=force_custom_plan exits 0" run_do toggle toggle PG_PLAN_CACHE_MODE=force_custom_plan
check "toggle edits the toggles file on postgres-app and restarts orders-pg" \
  has_call "$m" "root@$(ip_of postgres-app public)	bash -s -- /etc/orders/orders-pg.toggles.env orders-pg 8080 PG_PLAN_CACHE_MODE=force_custom_plan"
m=$(mark)
check "toggle PG_GIN_FASTUPDATE=off exits 0" run_do toggle-gin toggle PG_GIN_FASTUPDATE=off
check "fastupdate is set on postgres-db (as the index's owner), not in orders-pg's environment" \
  bash -c "calls_since() { tail -n +\$((\$1 + 1)) '$FAKE_LOG'; }; calls_since $m | grep -q 'root@$(ip_of postgres-db public)	bash -s -- off' &&
    calls_since $m | grep -q 'root@$(ip_of postgres-app public)	bash -s -- /etc/orders/orders-pg.toggles.env orders-pg 8080$' &&
    ! calls_since $m | grep -q 'toggles.env .*PG_GIN_FASTUPDATE'"
m=$(mark)
check "toggle rejects an unknown variable" bash -c "! bash '$DO' toggle PG_FOO=1"
check "toggle rejects a bad value" bash -c "! bash '$DO' toggle PG_GIN_FASTUPDATE=maybe"
check "toggle PG_GIN_FASTUPDATE= (the index has no unset) is refused" bash -c "! bash '$DO' toggle PG_GIN_FASTUPDATE="
check "a rejected toggle calls nothing" same "$(mark)" "$m"

echo "status, tunnel and down"
check "status prices what exists" bash -c "bash '$DO' status 2>&1 | grep -q '1.16071 USD/hour'"
check "status points at the tunnel for Grafana" bash -c "bash '$DO' status 2>&1 | grep -q 'Grafana and Prometheus: infra/do/do.sh tunnel'"
m=$(mark)
check "tunnel exits 0 (the fake ssh returns at once)" run_do tunnel tunnel
check "tunnel forwards Grafana (the monitor's loopback) and Prometheus (its VPC address) to this machine's loopback" \
  has_call "$m" "^ssh	.*	-N	-o	ExitOnForwardFailure=yes	-L	127.0.0.1:3000:127.0.0.1:3000	-L	127.0.0.1:9090:$(ip_of monitor private):9090	root@$(ip_of monitor public)$"
check "tunnel prints the local URLs" bash -c "grep -q 'Grafana: *http://127.0.0.1:3000' '$work/tunnel.out' && grep -q 'Prometheus: http://127.0.0.1:9090' '$work/tunnel.out'"
m=$(mark)
check "down exits 0" run_do down down
check "droplets deleted by tag" has_call "$m" "^doctl	compute	droplet	delete	--tag-name	$TAG	--force$"
check "the five firewalls deleted" same "$(calls_since "$m" | grep -c "	firewall	delete	fw-")" 5
check "the region's default VPC is kept, and down says so" \
  bash -c "[ \"\$(calls_since $m | grep -c '	vpcs	delete	')\" = 0 ] && grep -q 'except the VPC $TAG-vpc' '$work/down.out'" 
check "nothing else left in the fake account" same "$(state 'len(s["droplets"]) + len(s["firewalls"]) + len(s["tags"])')" 0
m=$(mark)
check "a second down exits 0 and deletes nothing" bash -c "bash '$DO' down >/dev/null 2>&1 && ! tail -n +$((m + 1)) '$FAKE_LOG' | grep -q '	delete	'"

echo "DRY_RUN=1"
m=$(mark)
export DRY_RUN=1
check "dry up exits 0" run_do dry-up up
check "dry round, toggle, tunnel, down exit 0" bash -c "bash '$DO' round >'$work/dry-round.out' 2>&1 && bash '$DO' toggle PG_GIN_FASTUPDATE=off >'$work/dry-toggle.out' 2>&1 && bash '$DO' tunnel >'$work/dry-tunnel.out' 2>&1 && bash '$DO' down >'$work/dry-down.out' 2>&1"
check "dry run executed no doctl, ssh or scp" same "$(mark)" "$m"
check "dry up prints the plan and its cost" grep -q "cost .* USD/hour (.* USD a day) once up" "$work/dry-up.out"
check "dry up prints the firewall and droplet commands" \
  same "$(grep -c '^+ doctl compute firewall create' "$work/dry-up.out")/$(grep -c '^+ doctl compute droplet create' "$work/dry-up.out")" "5/7"
check "dry round prints the detached start on load-1" grep -q '^+ ssh .*orders-round start ' "$work/dry-round.out"
check "dry toggle prints the ssh" grep -q '^+ ssh .* off < .*gin-fastupdate.sh' "$work/dry-toggle.out"
check "dry tunnel prints the ssh" grep -q '^+ ssh .* -N .* -L 127.0.0.1:3000:127.0.0.1:3000 ' "$work/dry-tunnel.out"
OPERATOR_IP=198.51.100.0/24 ALLOW_WIDE_OPERATOR=1 run_do dry-wide up
check "ALLOW_WIDE_OPERATOR=1 lets a range through, with a warning" \
  bash -c "grep -q 'warning: ALLOW_WIDE_OPERATOR=1' '$work/dry-wide.out' && grep -q 'ports:22,address:198.51.100.0/24' '$work/dry-wide.out'"
check "dry down prints the delete by tag" grep -q "^+ doctl compute droplet delete --tag-name $TAG --force" "$work/dry-down.out"
check "without HYBRID=1 the plan has no hybrid droplet, firewall or tag" bash -c "! grep -q hybrid '$work/dry-up.out'"

echo "DRY_RUN=1 HYBRID=1 (the hybrid's pair)"
export HYBRID=1 STATE_DIR=$work/do-state-hybrid
check "dry up with HYBRID=1 exits 0" run_do dry-up-hybrid up
check "the plan lists nine droplets, the hybrid's pair with the PostgreSQL pair's sizes" bash -c "
  [ \$(grep -c '^  droplet .* create\$' '$work/dry-up-hybrid.out') = 9 ] &&
  grep -q '^  droplet  $TAG-hybrid-db  *c-2  *0.06250 USD/hour  create\$' '$work/dry-up-hybrid.out' &&
  grep -q '^  droplet  $TAG-hybrid-app  *c-8  *0.25000 USD/hour  create\$' '$work/dry-up-hybrid.out'"
check "its cost includes them (1.1607 USD/hour without, 1.4732 with)" \
  bash -c "grep -q '^  cost     1.1607 USD/hour' '$work/dry-up.out' && grep -q '^  cost     1.4732 USD/hour' '$work/dry-up-hybrid.out'"
check "the plan names the hybrid's firewall and tags" \
  bash -c "grep -q '^  firewalls $TAG-postgres-db, -mongo-db, -hybrid-db, -apps, -load, -monitor:' '$work/dry-up-hybrid.out' &&
    grep -q '^  tags .*$TAG-hybrid-db .*$TAG-hybrid-app ' '$work/dry-up-hybrid.out'"
# The dry run's firewall commands, as printed: NAME TAGS RULES.
dry_firewall() { sed -n "s/^+ doctl compute firewall create --name \\($TAG-$1\\) --tag-names \\([^ ]*\\) --inbound-rules '\\([^']*\\)'.*/\\2 \\3/p" "$work/dry-up-hybrid.out"; }
check "hybrid-db: 5432 from hybrid-app and the load droplets, its exporter from the monitor, as postgres-db" \
  same "$(dry_firewall hybrid-db | tr ' ' '\n' | grep -v ports:22, | grep -v ports:9100, | sort | tr '\n' ' ')" \
  "$TAG-hybrid-db protocol:tcp,ports:5432,tag:$TAG-hybrid-app protocol:tcp,ports:5432,tag:$TAG-load protocol:tcp,ports:9187,tag:$TAG-monitor "
check "postgres-db still admits orders-pg's app droplet alone (not hybrid-app)" \
  bash -c "[ \"\$(grep -o 'ports:5432,tag:[a-z-]*' '$work/dry-up-hybrid.out' | sort | tr '\n' ' ')\" = 'ports:5432,tag:$TAG-hybrid-app ports:5432,tag:$TAG-load ports:5432,tag:$TAG-load ports:5432,tag:$TAG-postgres-app ' ]"
check "the apps firewall covers hybrid-app" same "$(dry_firewall apps | cut -d' ' -f1)" "$TAG-postgres-app,$TAG-mongo-app,$TAG-hybrid-app"
check "hybrid-app's user-data runs orders-pg-hybrid (PostgreSQL's app template)" \
  bash -c "grep -q 'ExecStart=/usr/local/bin/orders-pg-hybrid\$' '$STATE_DIR/user-data/hybrid-app.yaml' && grep -qx '    content: \"postgres-db\\\\n\"' '$STATE_DIR/user-data/hybrid-db.yaml'"
check "the hybrid's roles have passwords of their own, in no user-data" bash -c "
  [ \$(grep -c '^PGH_[A-Z]*_PASSWORD=[0-9a-f]\{32\}$' '$STATE_DIR/secrets.env') = 3 ] &&
  ! cat '$STATE_DIR'/user-data/*.yaml | grep -qF -f <(sed -n 's/^[A-Z_]*PASSWORD=//p' '$STATE_DIR/secrets.env')"
hybrid_db=$(grep -o '"10\.110\.0\.[0-9]*:9187"' "$STATE_DIR/targets/postgres-do.json" | tail -n 1 | tr -d '"' | cut -d: -f1)
check "orders-pg-hybrid reaches hybrid-db as its orders_service (0600), with orders-pg's settings" bash -c "
  . '$STATE_DIR/secrets.env' && [ -n '$hybrid_db' ] &&
  grep -qx \"DATABASE_URL='postgres://orders_service:\$PGH_SERVICE_PASSWORD@$hybrid_db:5432/orders?sslmode=verify-full&sslrootcert=/etc/orders/tls/ca.crt'\" '$STATE_DIR/env/orders-pg-hybrid.env' &&
  [ \"\$(grep -v DATABASE_URL '$STATE_DIR/env/orders-pg-hybrid.env')\" = \"\$(grep -v DATABASE_URL '$STATE_DIR/env/orders-pg.env')\" ] &&
  [ \$(stat -c %a '$STATE_DIR/env/orders-pg-hybrid.env') = 600 ]"
check "hybrid-db gets its own roles' passwords and exporter settings" bash -c "
  . '$STATE_DIR/secrets.env' && grep -qx \"PG_LOADER_PASSWORD=\$PGH_LOADER_PASSWORD\" '$STATE_DIR/env/hybrid/postgres-db.env' &&
  grep -qx 'LISTEN_ADDRESS=$hybrid_db:9187' '$STATE_DIR/env/hybrid/postgres-exporter.env'"
check "the load droplets name the hybrid's database in bench.env (ORDERS_BENCH_DATABASE), not on a command line" bash -c "
  . '$STATE_DIR/secrets.env' && grep -qxF \"ORDERS_BENCH_DATABASE='pgh=postgres://orders_loader:\$PGH_LOADER_PASSWORD@$hybrid_db:5432/orders?sslmode=verify-full&sslrootcert=/etc/orders/tls/ca.crt'\" '$STATE_DIR/env/bench.env'"
check "hybrid-db is set up with the hybrid layout's migrations, then the same plan log" \
  bash -c "grep -q '^+ ssh .*root@[0-9.]* bash -s -- hybrid < .*/engines/postgres/remote/setup.sh' '$work/dry-up-hybrid.out' &&
    [ \$(grep -c '^+ ssh .* bash -s -- 20 < .*setup-plan-log.sh' '$work/dry-up-hybrid.out') = 2 ]"
check "Prometheus scrapes the hybrid's service and exporter under its own labels" bash -c "
  grep -q '\"service\": \"orders-pg-hybrid\", \"backend\": \"pgh\"' '$STATE_DIR/targets/orders-do.json' &&
  grep -q '\"$hybrid_db:9187\"\], \"labels\": {\"service\": \"orders-pg-hybrid\", \"engine\": \"postgres\"}' '$STATE_DIR/targets/postgres-do.json'"
check "binaries copied to the three app droplets" same "$(grep -c '^+ scp .*/orders-pg-hybrid ' "$work/dry-up-hybrid.out")/$(grep -cE '^\+ scp .*/orders-(pg|mongo|pg-hybrid) ' "$work/dry-up-hybrid.out")" 1/3
check "dry seed, round and toggle with HYBRID=1 exit 0" bash -c "bash '$DO' seed >'$work/dry-seed-hybrid.out' 2>&1 &&
  bash '$DO' round >'$work/dry-round-hybrid.out' 2>&1 && bash '$DO' toggle PG_PLAN_CACHE_MODE=force_custom_plan >'$work/dry-toggle-hybrid.out' 2>&1"
check "the round drives the hybrid's app as the third target" grep -q "orders-round start .* --target pgh=http://10\.110\.0\.[0-9]*:8080" "$work/dry-round-hybrid.out"
check "toggle sets the plan cache mode for orders-pg and orders-pg-hybrid alike" bash -c "
  grep -q 'bash -s -- /etc/orders/orders-pg.toggles.env orders-pg 8080 PG_PLAN_CACHE_MODE=force_custom_plan <' '$work/dry-toggle-hybrid.out' &&
  grep -q 'bash -s -- /etc/orders/orders-pg-hybrid.toggles.env orders-pg-hybrid 8080 PG_PLAN_CACHE_MODE=force_custom_plan <' '$work/dry-toggle-hybrid.out'"
if [ -n "$bench" ]; then
  check "every flag of the hybrid's round is one orders-bench round accepts" \
    flags_known round "$(grep -o 'orders-round start .*' "$work/dry-round-hybrid.out" | cut -d' ' -f4-)"
fi
echo "DRY_RUN=1 up --replicas 3 (three database droplets per engine; infra/do/replicas.sh)"
export HYBRID=0 STATE_DIR=$work/do-state-replicas
check "dry up --replicas 3 exits 0" run_do dry-up-replicas up --replicas 3
check "the plan lists eleven droplets (two load droplets), three database droplets per engine" bash -c "
  [ \$(grep -c '^  droplet .* create\$' '$work/dry-up-replicas.out') = 11 ] &&
  [ \$(grep -c '^  droplet  $TAG-\(postgres\|mongo\)-db\(-[23]\)\?  *c-2 ' '$work/dry-up-replicas.out') = 6 ]"
check "the plan says what the replicas add per hour (four more c-2)" \
  grep -q '^  replicas 3 members per engine: the 4 further database droplets add 0.2500 USD/hour (6.00 USD a day)$' "$work/dry-up-replicas.out"
replica_rules() { sed -n "s/^+ doctl compute firewall create --name $TAG-$1 --tag-names \([^ ]*\) --inbound-rules '\([^']*\)'.*/\1 \2/p" "$work/dry-up-replicas.out" | tr ' ' '\n' | grep "tag:$TAG-$1\$" | sort | tr '\n' ' '; }
check "postgres-db's firewall (every member's) admits the members: PostgreSQL, Patroni's REST API, etcd" same "$(replica_rules postgres-db)" \
  "protocol:tcp,ports:2379,tag:$TAG-postgres-db protocol:tcp,ports:2380,tag:$TAG-postgres-db protocol:tcp,ports:5432,tag:$TAG-postgres-db protocol:tcp,ports:8008,tag:$TAG-postgres-db "
check "mongo-db's firewall admits the members on 27017" same "$(replica_rules mongo-db)" "protocol:tcp,ports:27017,tag:$TAG-mongo-db "
check "the members carry their engine's database tag (so its firewall)" \
  bash -c "grep -q \"^+ doctl compute droplet create $TAG-postgres-db-3 .*--tag-names $TAG,$TAG-postgres-db \" '$work/dry-up-replicas.out'"
check "orders-pg, orders-mongo and orders-bench get every member (read-write sessions; rs0)" bash -c "
  grep -qx \"DATABASE_URL='postgres://orders_service:[0-9a-f]*@\(10\.110\.0\.[0-9]*:5432,\)\{2\}10\.110\.0\.[0-9]*:5432/orders?target_session_attrs=read-write&sslmode=verify-full&sslrootcert=/etc/orders/tls/ca.crt'\" '$STATE_DIR/env/orders-pg.env' &&
  grep -qx \"MONGODB_URI='mongodb://orders_service:[0-9a-f]*@\(10\.110\.0\.[0-9]*:27017,\)\{2\}10\.110\.0\.[0-9]*:27017/?authSource=admin&replicaSet=rs0&tls=true&tlsCAFile=/etc/orders/tls/ca.crt'\" '$STATE_DIR/env/orders-mongo.env' &&
  [ \$(grep -c '^[A-Z_]*=.*,.*,' '$STATE_DIR/env/bench.env') = 2 ]"
check "the replicas' four secrets are made, in no user-data" bash -c "
  [ \$(grep -c '^\(PG_SUPERUSER_PASSWORD\|PG_REPLICATION_PASSWORD\|MONGO_KEYFILE\|MONGO_ADMIN_PASSWORD\)=[0-9a-f]\{32\}$' '$STATE_DIR/secrets.env') = 4 ] &&
  ! cat '$STATE_DIR'/user-data/*.yaml | grep -qF -f <(sed -n 's/^[A-Z_]*=//p' '$STATE_DIR/secrets.env')"
check "every PostgreSQL member is made a Patroni member, every MongoDB member one of rs0, member 1 initiates" bash -c "
  [ \$(grep -c '^+ ssh .* bash -s -- configure pg[123] .*patroni-setup.sh' '$work/dry-up-replicas.out') = 3 ] &&
  [ \$(grep -c '^+ ssh .* bash -s -- member [123] < .*replset-setup.sh' '$work/dry-up-replicas.out') = 3 ] &&
  [ \$(grep -c '^+ ssh .* bash -s -- initiate .*replset-setup.sh' '$work/dry-up-replicas.out') = 1 ]"
check "up --replicas 2 is refused (no majority survives the loss of one)" bash -c "! bash '$DO' up --replicas 2 >/dev/null 2>&1"
check "up --replicas 3 with HYBRID=1 is refused" bash -c "! HYBRID=1 bash '$DO' up --replicas 3 >/dev/null 2>&1"
check "failover on a deployment of single servers is refused, saying how to make one" \
  bash -c "! out=\$(bash '$DO' failover --engine postgres 2>&1) && grep -q 'make it with infra/do/do.sh up --replicas 3' <<<\"\$out\""
REPLICAS=3 run_do dry-failover failover --engine mongo || true
check "dry failover asks the members and kills one (remote/member.sh)" \
  bash -c "grep -q '^+ ssh .* bash -s -- role < .*engines/mongo/remote/member.sh' '$work/dry-failover.out' && grep -q 'bash -s -- kill < .*member.sh' '$work/dry-failover.out'"
REPLICAS=3 run_do dry-toggle-replicas toggle PG_GIN_FASTUPDATE=off || true
check "dry toggle PG_GIN_FASTUPDATE with --replicas asks the members which is primary, then sets it there" \
  bash -c "grep -q '^+ ssh .* bash -s -- role < .*engines/postgres/remote/member.sh' '$work/dry-toggle-replicas.out' && grep -q 'bash -s -- off < .*gin-fastupdate.sh' '$work/dry-toggle-replicas.out'"
check "without --replicas no member, no member rule, no replicas' secret" \
  bash -c "! grep -q -- '-db-[0-9]\|replicas\|ports:8008\|ports:2379' '$work/dry-up.out' && ! grep -q 'PG_SUPERUSER\|MONGO_KEYFILE' '$work/do-state/secrets.env'"
unset DRY_RUN HYBRID

if [ "$failed" -gt 0 ]; then
  echo "--- output of the do.sh runs ---"
  tail -n 20 "$work"/*.out
fi
echo "test-do-dry-run: $passed passed, $failed failed"
if [ "$failed" -eq 0 ]; then echo PASS; else echo FAIL; exit 1; fi
