#!/usr/bin/env bash
# Test of infra/do/do.sh without DigitalOcean: fake doctl, ssh and scp on PATH record every call
# (one line per call, arguments separated by tabs) and answer from a small state, so `up`,
# `seed`, `round`, `toggle PG_GIN_FASTUPDATE=off` and `down` run their real code paths. Then
# the recorded calls are checked: firewall rules, tags on every resource, teardown by tag.
# Finally the same commands under DRY_RUN=1 must print their commands and run none.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DO=$REPO/infra/do/do.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/fakebin" "$work/bin" "$work/state"

# --- the fakes --------------------------------------------------------------------------------
cat >"$work/fakebin/doctl" <<'FAKE'
#!/usr/bin/env bash
# Fake doctl: record the call, answer like doctl would for the few commands do.sh uses.
set -euo pipefail
{ printf 'doctl'; printf '\t%s' "$@"; printf '\n'; } >>"$FAKE_LOG"
s=$FAKE_STATE
touch "$s/droplets" "$s/firewalls" "$s/vpcs" "$s/tags"
flag() { local want=$1; shift; while [ $# -gt 1 ]; do [ "$1" = "$want" ] && { printf '%s' "$2"; return; }; shift; done; }
case "$1 $2 ${3:-}" in
  "account get "*) echo operator@example.com ;;
  "compute ssh-key list") echo 12345 ;;
  "compute tag list") cat "$s/tags" ;;
  "compute tag create") echo "$4" >>"$s/tags" ;;
  "compute tag delete") : >"$s/tags" ;;
  "vpcs list "* | "vpcs list") cat "$s/vpcs" ;;
  "vpcs create "* | "vpcs create")
    echo "vpc-1 $(flag --name "$@") 10.110.0.0/20" >>"$s/vpcs"
    echo "vpc-1 10.110.0.0/20" ;;
  "vpcs delete "*) : >"$s/vpcs" ;;
  "compute firewall list") cat "$s/firewalls" ;;
  "compute firewall create")
    n=$(($(wc -l <"$s/firewalls") + 1))
    echo "fw-$n $(flag --name "$@")" | tee -a "$s/firewalls" ;;
  "compute firewall update") echo "$4 $(flag --name "$@")" ;;
  "compute firewall delete") grep -v "^$4 " "$s/firewalls" >"$s/fw.tmp" || true; mv "$s/fw.tmp" "$s/firewalls" ;;
  "compute droplet create")
    n=$(($(wc -l <"$s/droplets") + 11))
    echo "$4 203.0.113.$n 10.110.0.$n" >>"$s/droplets"
    echo "$n $4" ;;
  "compute droplet list")
    if [ "$(flag --format "$@")" = Name ]; then awk '{ print $1 }' "$s/droplets"; else cat "$s/droplets"; fi ;;
  "compute droplet delete") : >"$s/droplets" ;;
  *) echo "fake doctl: unexpected call: $*" >&2; exit 1 ;;
esac
FAKE
cat >"$work/fakebin/ssh" <<'FAKE'
#!/usr/bin/env bash
# Fake ssh: record the call; keep what a `bash -s` call would have run on the droplet.
{ printf 'ssh'; printf '\t%s' "$@"; printf '\n'; } >>"$FAKE_LOG"
case "$*" in *"bash -s"*) cat >>"$FAKE_STATE/ssh-stdin" ;; esac
exit 0
FAKE
cat >"$work/fakebin/scp" <<'FAKE'
#!/usr/bin/env bash
# Fake scp: record the call; a local destination is created as scp would.
{ printf 'scp'; printf '\t%s' "$@"; printf '\n'; } >>"$FAKE_LOG"
dest=${*: -1}
case $dest in *:*) ;; *) mkdir -p "$dest" ;; esac
FAKE
chmod +x "$work/fakebin/"*
for bin in orders-pg orders-mongo orders-bench; do printf '\177ELF fake' >"$work/bin/$bin"; done

export PATH="$work/fakebin:$PATH" FAKE_LOG=$work/calls.tsv FAKE_STATE=$work/state
export TAG=obtest OPERATOR_IP=198.51.100.7 SSH_KEY=12345 LOAD_COUNT=2 REGION=fra1
export BIN_DIR=$work/bin STATE_DIR=$work/do-state RESULTS_DIR=$work/results
unset DRY_RUN SSH_IDENTITY VPC_RANGE PRICES
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
run_do() { local name=$1; shift; bash "$DO" "$@" >"$work/$name.out" 2>&1; }

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
ip_of() { awk -v n="$TAG-$1" -v c="$2" '$1 == n { print (c == "public" ? $2 : $3) }' "$FAKE_STATE/droplets"; }
droplet_creates() { awk -F'\t' '$2 == "compute" && $3 == "droplet" && $4 == "create"' "$FAKE_LOG"; }
lines() { grep -c . || true; }
has_call() { calls_since "$1" | grep -q -- "$2"; }
op=$OPERATOR_IP/32

echo "up (LOAD_COUNT=2)"
check "up exits 0" run_do up up
check "tag $TAG created" grep -qx "doctl	compute	tag	create	$TAG" "$FAKE_LOG"
check "VPC named $TAG-vpc" grep -q "doctl	vpcs	create	--name	$TAG-vpc	" "$FAKE_LOG"
check "five firewalls, all named $TAG-*" same "$(awk -F'\t' '$3 == "firewall" && $4 == "create"' "$FAKE_LOG" | grep -c "	--name	$TAG-")" 5
check "postgres-db: 5432 only from the postgres-app tag" \
  same "$(rules "$TAG-postgres-db" 5432)" "protocol:tcp,ports:5432,tag:$TAG-postgres-app"
check "mongo-db: 27017 only from the mongo-app tag" \
  same "$(rules "$TAG-mongo-db" 27017)" "protocol:tcp,ports:27017,tag:$TAG-mongo-app"
check "apps: 8080 only from the load and monitor tags" \
  same "$(rules "$TAG-apps" 8080 | tr '\n' ' ')" "protocol:tcp,ports:8080,tag:$TAG-load protocol:tcp,ports:8080,tag:$TAG-monitor "
check "database ports open on the database firewalls only" \
  same "$(all_rules | grep -c -e ports:5432 -e ports:27017)" 2
check "apps firewall applies to both app tags" same "$(fw_flag "$TAG-apps" --tag-names)" "$TAG-postgres-app,$TAG-mongo-app"
check "each database firewall applies to its own tag" \
  same "$(fw_flag "$TAG-postgres-db" --tag-names) $(fw_flag "$TAG-mongo-db" --tag-names)" "$TAG-postgres-db $TAG-mongo-db"
check "every firewall lets SSH in from the operator only" \
  same "$(all_rules | grep ports:22, | sort -u)" "protocol:tcp,ports:22,address:$op"
check "SSH rule on each of the five firewalls" same "$(all_rules | grep -c ports:22,)" 5
check "no inbound rule from any other address" same "$(all_rules | grep address: | grep -vc "address:$op$")" 0
check "node_exporter only from the monitor tag" same "$(all_rules | grep ports:9100 | sort -u)" "protocol:tcp,ports:9100,tag:$TAG-monitor"
check "seven droplets created (2 db, 2 app, 2 load, monitor)" same "$(droplet_creates | lines)" 7
check "every droplet carries $TAG and its role tag" \
  same "$(droplet_creates | grep -cE "	--tag-names	$TAG,$TAG-(postgres-db|mongo-db|postgres-app|mongo-app|load|monitor)(	|$)")" 7
check "every droplet in the VPC with user-data" \
  same "$(droplet_creates | grep "	--vpc-uuid	vpc-1	" | grep -c "	--user-data-file	")" 7
check "database droplets 2 vCPU / 4 GB (c-2), apps c-8" \
  same "$(droplet_creates | grep -c "	--size	c-2	")/$(droplet_creates | grep -c "	--size	c-8	")" "2/4"
check "rendered user-data has no placeholder left" bash -c "! grep -l '__[A-Z_]*__' '$STATE_DIR'/user-data/*.yaml"
check "postgres-app env points at the postgres-db private address" \
  grep -q "DATABASE_URL=postgres://orders:[0-9a-f]*@$(ip_of postgres-db private):5432/orders" "$STATE_DIR/user-data/postgres-app.yaml"
check "mongo-app env points at mongo-db" \
  grep -q "MONGODB_URI=mongodb://orders:[0-9a-f]*@$(ip_of mongo-db private):27017/" "$STATE_DIR/user-data/mongo-app.yaml"
check "mongo-app writes with w:majority, j:true" \
  grep -Pzq 'MONGO_WRITE_CONCERN=majority\n *MONGO_JOURNAL=true\n' "$STATE_DIR/user-data/mongo-app.yaml"
check "postgres-db pg_hba admits the VPC range only" grep -q "host orders orders 10.110.0.0/20 scram-sha-256" "$STATE_DIR/user-data/postgres-db.yaml"
check "Prometheus targets are valid JSON" python3 -c "import json,sys; [json.load(open(f)) for f in sys.argv[1:]]" "$STATE_DIR"/targets/*.json
check "Prometheus scrapes node_exporter on all seven droplets" same "$(grep -c ':9100"' "$STATE_DIR/targets/node-do.json")" 7
check "up prints the hourly cost" grep -q "total .* USD/hour" "$work/up.out"
check "binaries copied to both app droplets" same "$(grep -cE "^scp	.*/bin/orders-(pg|mongo)	" "$FAKE_LOG")" 2
if command -v cloud-init >/dev/null; then
  for f in "$STATE_DIR"/user-data/*.yaml; do
    check "cloud-init schema: rendered $(basename "$f")" cloud-init schema --config-file "$f"
  done
fi

echo "up again (idempotent)"
m=$(mark)
check "second up exits 0" run_do up2 up
check "no droplet, firewall, VPC or tag created twice" bash -c "! tail -n +$((m + 1)) '$FAKE_LOG' | grep -qE '	create	'"
check "firewalls updated to the current rules" same "$(calls_since "$m" | grep -c "	firewall	update	")" 5

echo "seed"
m=$(mark)
check "seed exits 0" run_do seed seed --orders 1000
check "seeds Postgres from postgres-app" has_call "$m" "root@$(ip_of postgres-app public)	.*orders-bench seed --target pg --orders 1000"
check "seeds MongoDB from mongo-app" has_call "$m" "root@$(ip_of mongo-app public)	.*orders-bench seed --target mongo --orders 1000"

echo "round"
m=$(mark)
check "round exits 0" run_do round round --mix shop
pg=$(ip_of postgres-app private)
mongo=$(ip_of mongo-app private)
check "load-1 runs the first half (k6 execution segment)" \
  has_call "$m" "root@$(ip_of load-1 public)	.*K6_EXECUTION_SEGMENT=0:1/2 K6_EXECUTION_SEGMENT_SEQUENCE=0,1/2,1 orders-bench round --pg http://$pg:8080 --mongo http://$mongo:8080 --mix shop"
check "load-2 runs the second half" has_call "$m" "root@$(ip_of load-2 public)	.*K6_EXECUTION_SEGMENT=1/2:1 "
check "results copied back from both load droplets" same "$(calls_since "$m" | grep -c "^scp	.*/opt/orders/results/")" 2

echo "toggle"
m=$(mark)
check "toggle PG_GIN_FASTUPDATE=off exits 0" run_do toggle toggle PG_GIN_FASTUPDATE=off
check "toggle edits the env file on postgres-app and restarts orders-pg" \
  has_call "$m" "root@$(ip_of postgres-app public)	bash -s -- /etc/orders/orders-pg.env orders-pg 8080 PG_GIN_FASTUPDATE=off"
check "toggle sends remote/set-env.sh" grep -q 'set or remove variables in a service' "$FAKE_STATE/ssh-stdin"
m=$(mark)
check "toggle rejects an unknown variable" bash -c "! bash '$DO' toggle PG_FOO=1"
check "toggle rejects a bad value" bash -c "! bash '$DO' toggle PG_GIN_FASTUPDATE=maybe"
check "a rejected toggle calls nothing" same "$(mark)" "$m"

echo "down"
m=$(mark)
check "down exits 0" run_do down down
check "droplets deleted by tag" has_call "$m" "^doctl	compute	droplet	delete	--tag-name	$TAG	--force$"
check "no droplet deleted by name or id" same "$(calls_since "$m" | grep "	droplet	delete	" | grep -vc "	--tag-name	$TAG	")" 0
check "the five firewalls deleted" same "$(calls_since "$m" | grep -c "	firewall	delete	fw-")" 5
check "the VPC deleted" has_call "$m" "^doctl	vpcs	delete	vpc-1	--force$"
check "nothing left in the fake account" same "$(cat "$FAKE_STATE/droplets" "$FAKE_STATE/firewalls" "$FAKE_STATE/vpcs" "$FAKE_STATE/tags")" ""

echo "DRY_RUN=1"
m=$(mark)
export DRY_RUN=1
check "dry up exits 0" run_do dry-up up
check "dry round, toggle, down exit 0" bash -c "bash '$DO' round >'$work/dry-round.out' 2>&1 && bash '$DO' toggle PG_GIN_FASTUPDATE=off >'$work/dry-toggle.out' 2>&1 && bash '$DO' down >'$work/dry-down.out' 2>&1"
check "dry run executed no doctl, ssh or scp" same "$(mark)" "$m"
check "dry up prints the firewall and droplet commands" \
  same "$(grep -c '^+ doctl compute firewall create' "$work/dry-up.out")/$(grep -c '^+ doctl compute droplet create' "$work/dry-up.out")" "5/7"
check "dry round prints the ssh to each load droplet" same "$(grep -c '^+ ssh .*orders-bench round' "$work/dry-round.out")" 2
check "dry toggle prints the ssh" grep -q '^+ ssh .*PG_GIN_FASTUPDATE=off < .*set-env.sh' "$work/dry-toggle.out"
check "dry down prints the delete by tag" grep -q "^+ doctl compute droplet delete --tag-name $TAG --force" "$work/dry-down.out"
unset DRY_RUN

if [ "$failed" -gt 0 ]; then
  echo "--- output of the do.sh runs ---"
  tail -n 20 "$work"/*.out
fi
echo "test-do-dry-run: $passed passed, $failed failed"
if [ "$failed" -eq 0 ]; then echo PASS; else echo FAIL; exit 1; fi
