# shellcheck shell=bash
# `do.sh up`: checks first (binaries built for Linux x86-64, sizes offered in the region, the
# account's droplet limit), then the plan with its hourly cost and a confirmation (--yes skips it),
# then tags, VPC, cloud firewalls and droplets with per-role cloud-init (settings only, no
# password), and finally, on every run, the databases' roles with their passwords, the migrations,
# the plan log and the exporters, then the binaries, env files and k6 script: each copied file is
# installed only when it differs, and a service is restarted only when one of its files changed (or
# it was not running).

# The tags: TAG on every droplet, and one per role (the load droplets share theirs).
all_tags() {
  local role
  printf '%s\n' "$TAG"
  for role in $(roles); do printf '%s\n' "$(role_tag "$role")"; done | awk '!seen[$0]++'
}

# Who may reach what: the one place where the droplets' inbound ports are declared. One line per
# port: FIREWALL PORT FROM..., where FIREWALL is one of `firewalls` below (or `*`: every one) and
# each FROM is a role, meaning the droplets carrying its tag, or `operator` (OPERATOR_CIDR). Nothing
# else is let in: each database only from its own app droplet and the load droplets (which reload
# every database before every repeat and count their rows), the databases' exporters and
# node_exporter from the monitor, the apps from the load and monitor droplets, the agents of the
# load droplets from load droplets, Prometheus from the load droplets (their k6 push by remote
# write), and SSH from the operator alone. Grafana listens on the monitor's loopback
# and Prometheus on its VPC address; the operator reaches both through `do.sh tunnel` (SSH), so no
# HTTP port is open to the internet. The hybrid's database (HYBRID=1) has the PostgreSQL pair's
# rules, with its own app droplet.
inbound_ports() {
  cat <<PORTS
postgres-db 5432 postgres-app load
postgres-db $PG_EXPORTER_PORT monitor
mongo-db 27017 mongo-app load
mongo-db $MONGO_EXPORTER_PORT monitor
PORTS
  if hybrid; then
    cat <<PORTS
hybrid-db 5432 hybrid-app load
hybrid-db $PG_EXPORTER_PORT monitor
PORTS
  fi
  cat <<PORTS
apps $APP_PORT load monitor
load $AGENT_PORT load
monitor $PROMETHEUS_PORT load
* 22 operator
* 9100 monitor
PORTS
}
# The firewalls: NAME and the tags it applies to (named $TAG-NAME).
firewalls() {
  local apps=$TAG-postgres-app,$TAG-mongo-app
  printf '%s\n' "postgres-db $TAG-postgres-db" "mongo-db $TAG-mongo-db"
  if hybrid; then
    printf '%s\n' "hybrid-db $TAG-hybrid-db"
    apps+=,$TAG-hybrid-app
  fi
  printf '%s\n' "apps $apps" "load $TAG-load" "monitor $TAG-monitor"
}
# One line per firewall: NAME|TAGS IT APPLIES TO|INBOUND RULES (doctl's syntax).
firewall_specs() {
  local name tags
  while read -r name tags; do
    printf '%s|%s|%s\n' "$TAG-$name" "$tags" "$(inbound_ports | awk -v fw="$name" -v tag="$TAG" -v op="$OPERATOR_CIDR" '
      $1 == fw || $1 == "*" {
        for (i = 3; i <= NF; i++) {
          from = ($i == "operator") ? "address:" op : "tag:" tag "-" $i
          out = out sep "protocol:tcp,ports:" $2 "," from
          sep = " "
        }
      }
      END { print out }')"
  done < <(firewalls)
}
OUTBOUND='protocol:tcp,ports:all,address:0.0.0.0/0 protocol:tcp,ports:all,address:::/0 protocol:udp,ports:all,address:0.0.0.0/0 protocol:udp,ports:all,address:::/0 protocol:icmp,address:0.0.0.0/0 protocol:icmp,address:::/0'

# OPERATOR_CIDR from OPERATOR_IP: one address (/32, /128) unless ALLOW_WIDE_OPERATOR=1, since
# whoever is in the range can try to log in as root on every droplet.
operator_cidr() {
  [ -n "$OPERATOR_IP" ] || die "set OPERATOR_IP to your public address, e.g. OPERATOR_IP=\$(curl -fsS https://ifconfig.me): SSH accepts only it"
  local address=${OPERATOR_IP%/*} full=32 prefix
  case $address in *:*) full=128 ;; esac
  prefix=$full
  case $OPERATOR_IP in */*) prefix=${OPERATOR_IP##*/} ;; esac
  case $prefix in '' | *[!0-9]*) die "OPERATOR_IP=$OPERATOR_IP: '$prefix' is not a prefix length" ;; esac
  [ "$prefix" -le "$full" ] || die "OPERATOR_IP=$OPERATOR_IP: a prefix longer than /$full"
  if [ "$prefix" -lt "$full" ]; then
    [ "$ALLOW_WIDE_OPERATOR" = 1 ] ||
      die "OPERATOR_IP=$OPERATOR_IP is a range of 2^$((full - prefix)) addresses, and every one of them could try to log in to every droplet as root over SSH; give your own address alone (OPERATOR_IP=\$(curl -fsS https://ifconfig.me)), or set ALLOW_WIDE_OPERATOR=1 if you really mean that range"
    say "warning: ALLOW_WIDE_OPERATOR=1: SSH accepts the range $OPERATOR_IP (2^$((full - prefix)) addresses)"
  fi
  OPERATOR_CIDR=$address/$prefix
}

# What a file is, from its first bytes: "ok" for a Linux x86-64 ELF executable, else why not.
binary_kind() {
  local hex
  hex=$(od -An -tx1 -N20 "$1" | tr -d ' \n')
  case $hex in
    7f454c46*) ;;
    cffaedfe* | cefaedfe* | cafebabe*) echo "a macOS (Mach-O) binary"; return ;;
    4d5a*) echo "a Windows binary"; return ;;
    *) echo "not an executable (no ELF header)"; return ;;
  esac
  [ "${hex:8:2}" = 02 ] || { echo "a 32-bit ELF binary"; return; }
  [ "${hex:10:2}" = 01 ] || { echo "a big-endian ELF binary"; return; }
  case ${hex:36:4} in
    3e00) echo ok ;;
    b700) echo "an aarch64 (ARM) Linux binary" ;;
    f300) echo "a RISC-V Linux binary" ;;
    *) echo "an ELF binary for machine 0x${hex:38:2}${hex:36:2}, not x86-64" ;;
  esac
}

# The binaries the droplets run.
binaries() {
  printf '%s\n' orders-pg orders-mongo
  if hybrid; then printf '%s\n' orders-pg-hybrid; fi
  printf '%s\n' orders-bench
}

check_binaries() {
  local bin f kind
  for bin in $(binaries); do
    f=$BIN_DIR/$bin
    if [ ! -f "$f" ]; then
      if dry; then say "note: $f is missing (fine for a dry run)"; continue; fi
      die "$f missing: cargo build --release$(binaries | sed 's/^/ -p /' | tr -d '\n'), or
  docker build --platform linux/amd64 --target export --output type=local,dest=.local/dist . && export BIN_DIR=\$PWD/.local/dist"
    fi
    kind=$(binary_kind "$f")
    [ "$kind" = ok ] ||
      die "$f is $kind; the droplets run Linux x86-64 ($IMAGE): build with the Dockerfile's export target and --platform linux/amd64 (README.md, \"Deploy to DigitalOcean\")"
  done
}

# The settings that reach the database droplets' configuration: Percona's exporter is installed
# only with its pinned checksum; the plan log threshold is whole milliseconds (-1: no plan log).
check_monitoring_settings() {
  [[ $PG_PLAN_LOG_MS =~ ^(-1|[0-9]+)$ ]] || die "PG_PLAN_LOG_MS=$PG_PLAN_LOG_MS: give whole milliseconds (or -1: no plan log)"
  if [ -z "$MONGODB_EXPORTER_SHA256" ] && dry; then
    say "note: MONGODB_EXPORTER_SHA256 is not set (fine for a dry run; up needs it)"
    MONGODB_EXPORTER_SHA256='not-set'
    return
  fi
  [[ $MONGODB_EXPORTER_SHA256 =~ ^[0-9a-f]{64}$ ]] ||
    die "MONGODB_EXPORTER_SHA256=${MONGODB_EXPORTER_SHA256:-(empty)}: mongo-db installs Percona's mongodb_exporter $MONGODB_EXPORTER_VERSION only with the SHA-256 of mongodb_exporter-$MONGODB_EXPORTER_VERSION.linux-amd64.tar.gz, 64 lowercase hex digits: take it from https://github.com/percona/mongodb_exporter/releases/download/v$MONGODB_EXPORTER_VERSION/mongodb_exporter_${MONGODB_EXPORTER_VERSION}_checksums.txt and set it in infra/do/config.sh (or export it)"
}

preflight() {
  operator_cidr
  check_binaries
  check_monitoring_settings
  if ! dry; then
    command -v doctl >/dev/null || die "doctl not found (see README.md, \"Deploy to DigitalOcean\")"
    command -v jq >/dev/null || die "jq not found: install it (apt install jq, brew install jq)"
  fi
  ACCOUNT=$(query '{"email":"dry-run@example.com","droplet_limit":25}' doctl account get --output json)
  say "DigitalOcean account: $(printf '%s' "$ACCOUNT" | jq -r '.email')"
  if [ -z "$SSH_KEY" ]; then
    SSH_KEY=$(query dry-run-key doctl compute ssh-key list --format ID --no-header | paste -sd, -)
    [ -n "$SSH_KEY" ] || die "no SSH key in the account: doctl compute ssh-key import NAME --public-key-file ~/.ssh/id_ed25519.pub"
  fi
}

# The plan: what exists, what will be made, what it costs; refuses sizes the region does not offer
# and more droplets than the account may have.
plan() {
  local role name slug price line regions status total_after=0 total_now=0 missing=0 in_account limit have_tags vpcs
  load_sizes
  refresh_droplets
  if dry; then DROPLETS=''; fi  # a dry run shows the plan of a deployment that does not exist yet
  check_hybrid_setting
  in_account=$(query '[]' doctl compute droplet list --output json | jq 'length')
  limit=$(printf '%s' "$ACCOUNT" | jq -r '.droplet_limit // 0')
  have_tags=$(query '' doctl compute tag list --format Name --no-header)
  vpcs=$(query '[]' doctl vpcs list --output json)
  VPC_LINE=$(printf '%s' "$vpcs" | jq -r --arg n "$TAG-vpc" '.[] | select(.name == $n) | "\(.id) \(.ip_range) \(.default)"')
  REGION_HAS_VPC=$(printf '%s' "$vpcs" | jq -r --arg r "$REGION" '[.[] | select(.region == $r)] | length')
  {
    printf 'plan for %s in %s (account limit %s droplets, %s in the account now):\n' "$TAG" "$REGION" "$limit" "$in_account"
    for role in $(roles); do
      name=$TAG-$role
      slug=$(size_of "$role")
      line=$(printf '%s\n' "$SIZE_LINES" | awk -v s="$slug" '$1 == s')
      [ -n "$line" ] || die "size $slug (of $role) is not offered: doctl compute size list"
      regions=$(printf '%s' "$line" | awk '{ print $3 }')
      case ",$regions," in *",$REGION,"*) ;; *) die "size $slug (of $role) is not offered in $REGION (offered in: $regions)" ;; esac
      price=$(printf '%s' "$line" | awk '{ print $2 }')
      if printf '%s\n' "$DROPLETS" | awk -v n="$name" '$1 == n { found = 1 } END { exit !found }'; then
        status=exists
        total_now=$(awk -v a="$total_now" -v b="$price" 'BEGIN { print a + b }')
      else
        status=create
        missing=$((missing + 1))
      fi
      total_after=$(awk -v a="$total_after" -v b="$price" 'BEGIN { print a + b }')
      printf '  droplet  %-30s %-14s %8.5f USD/hour  %s\n' "$name" "$slug" "$price" "$status"
    done
    if [ -z "$VPC_LINE" ]; then
      printf '  VPC      %-30s %s\n' "$TAG-vpc" "create (range ${VPC_RANGE:-chosen by DigitalOcean})"
      if [ "$REGION_HAS_VPC" = 0 ]; then
        printf '           %s\n' "$REGION has no VPC yet: DigitalOcean makes this one the region's default, which cannot be" \
          "deleted (it costs nothing; \`down\` leaves it and says so)"
      fi
    else
      printf '  VPC      %-30s %s\n' "$TAG-vpc" "exists"
    fi
    printf '  firewalls %s: create or bring up to date\n' "$(firewalls | awk -v t="$TAG" '{ printf "%s%s", (NR > 1 ? ", -" : t "-"), $1 }')"
    printf '  tags     %s\n' "$(all_tags | while read -r t; do grep -qx -- "$t" <<<"$have_tags" || printf '%s ' "$t"; done)(to create)"
    awk -v after="$total_after" -v now="$total_now" 'BEGIN {
      printf "  cost     %.4f USD/hour (%.2f USD a day) once up; %.4f USD/hour of it exists now\n", after, after * 24, now }'
  } >&3
  MISSING=$missing
  if [ "$limit" -gt 0 ] && [ $((in_account + missing)) -gt "$limit" ]; then
    die "the account may have $limit droplets; it has $in_account and this needs $missing more: delete some, or ask DigitalOcean for a higher limit"
  fi
}

confirm() {
  local answer
  if [ "$YES" = 1 ] || dry || [ "$MISSING" = 0 ]; then return 0; fi
  [ -t 0 ] || die "nothing created: pass --yes to create the droplets above without a question"
  read -r -p "Create the droplets above and start billing? [y/N] " answer
  case $answer in y | Y | yes | YES) ;; *) die "nothing created" ;; esac
}

ensure_tags() {
  local have t
  have=$(query '' doctl compute tag list --format Name --no-header)
  for t in $(all_tags); do
    if ! grep -qx -- "$t" <<<"$have"; then run doctl compute tag create "$t" >/dev/null; fi
  done
}

ensure_vpc() {
  local args=(--name "$TAG-vpc" --region "$REGION" --description "orders-bench deployment $TAG") line
  if [ -z "$VPC_LINE" ]; then
    if [ -n "$VPC_RANGE" ]; then args+=(--ip-range "$VPC_RANGE"); fi
    line=$(query "dry-run-vpc ${VPC_RANGE:-10.110.0.0/20}" doctl vpcs create "${args[@]}" --format ID,IPRange --no-header)
  else
    line=$VPC_LINE
  fi
  read -r VPC_ID VPC_CIDR _ <<<"$line"
  [ -n "${VPC_CIDR:-}" ] || die "could not read the VPC's id and range from: $line"
  say "VPC $TAG-vpc: $VPC_ID $VPC_CIDR"
}

# Create the missing firewalls; update existing ones so the rules always match this script.
ensure_firewalls() {
  local have name tags rules id
  have=$(query '' doctl compute firewall list --format ID,Name --no-header)
  while IFS='|' read -r name tags rules; do
    id=$(printf '%s\n' "$have" | awk -v n="$name" '$2 == n { print $1 }')
    if [ -n "$id" ]; then
      run doctl compute firewall update "$id" --name "$name" --tag-names "$tags" \
        --inbound-rules "$rules" --outbound-rules "$OUTBOUND" --format ID,Name --no-header >/dev/null
    else
      run doctl compute firewall create --name "$name" --tag-names "$tags" \
        --inbound-rules "$rules" --outbound-rules "$OUTBOUND" --format ID,Name --no-header >/dev/null
    fi
  done < <(firewall_specs)
}

create_droplet() {
  local role=$1 name=$TAG-$1 ud SERVICE=''
  if printf '%s\n' "$DROPLETS" | awk -v n="$name" '$1 == n { found = 1 } END { exit !found }'; then return 0; fi
  ud=$STATE_DIR/user-data/$role.yaml
  mkdir -p "$STATE_DIR/user-data"
  # shellcheck disable=SC2034 # read by render through ${!name}: the unit an app droplet runs
  case $role in *-app) SERVICE=$(service_of "$role") ;; esac
  render "$HERE/cloud-init/$(template_of "$role").yaml" "$ud"
  # The metadata service hands user-data to any process on the droplet: secrets come after boot.
  if holds_secret "$ud"; then die "$ud holds a password; user-data must not (copy it after boot, as render_env's files are)"; fi
  run doctl compute droplet create "$name" --region "$REGION" --image "$IMAGE" \
    --size "$(size_of "$role")" --vpc-uuid "$VPC_ID" --ssh-keys "$SSH_KEY" \
    --tag-names "$TAG,$(role_tag "$role")" --user-data-file "$ud" --format ID,Name --no-header
}

# install_on HOST UNIT READY_URL [LOCAL REMOTE MODE]...: copy the files to the droplet and install
# those that differ; restart UNIT when one did (or it is not running) and wait for READY_URL.
# Files whose SHA-256 the droplet already has are not even sent (the binaries are large).
install_on() {
  local host=$1 unit=$2 ready=$3 sources=() args=() installed=() have sum at
  shift 3
  local triples=("$@")
  while [ $# -ge 3 ]; do
    if [ "$3" = tar ]; then installed+=("$2/.installed-$(basename "$1")"); else installed+=("$2"); fi
    shift 3
  done
  have=$(query '' ssh "${SSH_OPTS[@]}" "root@$host" "sha256sum $(quote "${installed[@]}") 2>/dev/null || true")
  set -- "${triples[@]}"
  for at in "${installed[@]}"; do
    sum=$(sha256sum "$1" 2>/dev/null | cut -d' ' -f1) || sum=missing
    if ! grep -qxF "$sum  $at" <<<"$have"; then
      sources+=("$1")
      args+=("/opt/orders/incoming/$(basename "$1")" "$2" "$3")
    fi
    shift 3
  done
  send "$host" ${sources[@]+"${sources[@]}"}
  rscript "$host" "$HERE/remote/install.sh" "$unit" "$ready" ${args[@]+"${args[@]}"}
}

# What the droplets get after boot, from templates, into STATE_DIR (0600): the env files of the
# services and of the load droplets, the role passwords each database droplet sets, Grafana's; and
# the migrations.
render_env() {
  # shellcheck disable=SC2034 # read by render through ${!name}
  PG_DB_IP=$(need_ip postgres-db private) MONGO_DB_IP=$(need_ip mongo-db private) MONITOR_IP=$(need_ip monitor private)
  mkdir -p "$STATE_DIR/env"
  local f
  for f in orders-pg orders-mongo bench postgres-db mongo-db postgres-exporter mongodb-exporter grafana; do
    render "$HERE/env/$f.env" "$STATE_DIR/env/$f.env"
  done
  if hybrid; then render_hybrid_env; fi
  tar -C "$REPO" --owner=0 --group=0 --mtime=@0 --sort=name -cf "$STATE_DIR/migrations.tar" migrations
}

# The hybrid's files are the PostgreSQL pair's templates filled in with its own database (the
# address of hybrid-db, the passwords of its roles): orders-pg-hybrid.env for hybrid-app, and
# for hybrid-db its roles' passwords and its exporter's settings under the names its scripts read
# (env/hybrid/postgres-db.env, postgres-exporter.env). bench.env gains its database
# (env/bench-hybrid.env): orders-bench takes it from its environment, not its command line.
render_hybrid_env() {
  local dir=$STATE_DIR/env/hybrid
  mkdir -p "$dir"
  # shellcheck disable=SC2034,SC2153 # read by render through ${!name}; PGH_* come from secrets.env
  (
    PG_DB_IP=$(need_ip hybrid-db private) PG_SERVICE_PASSWORD=$PGH_SERVICE_PASSWORD \
      PG_LOADER_PASSWORD=$PGH_LOADER_PASSWORD PG_MONITOR_PASSWORD=$PGH_MONITOR_PASSWORD
    render "$HERE/env/orders-pg.env" "$STATE_DIR/env/orders-pg-hybrid.env"
    render "$HERE/env/postgres-db.env" "$dir/postgres-db.env"
    render "$HERE/env/postgres-exporter.env" "$dir/postgres-exporter.env"
    render "$HERE/env/bench-hybrid.env" "$dir/bench.env"
  )
  cat "$dir/bench.env" >>"$STATE_DIR/env/bench.env"
}

# The databases' roles and users, one per job (docs/security.md), and on PostgreSQL the migrations,
# applied as the role that owns the tables before the service starts (its own role could not) and
# the plan log; then each database's exporter, on the droplet's VPC address, as the role made for it.
provision_databases() {
  provision_postgres postgres-db jsonb "$STATE_DIR/env"
  provision_mongo
  if hybrid; then provision_postgres hybrid-db hybrid "$STATE_DIR/env/hybrid"; fi
}

# provision_postgres ROLE LAYOUT ENV_DIR: a PostgreSQL droplet with the migrations of LAYOUT (jsonb:
# orders-pg's, hybrid: orders-pg-hybrid's), its passwords and exporter settings from ENV_DIR.
provision_postgres() {
  local role=$1 layout=$2 env_dir=$3 host
  host=$(need_ip "$role" public)
  send "$host" "$env_dir/postgres-db.env" "$STATE_DIR/migrations.tar"
  rscript "$host" "$HERE/remote/setup-postgres.sh" "$layout"
  # The same plan log on both servers: what it costs, it costs both.
  rscript "$host" "$HERE/remote/setup-plan-log.sh" "$PG_PLAN_LOG_MS"
  install_on "$host" prometheus-postgres-exporter "http://$(need_ip "$role" private):$PG_EXPORTER_PORT/metrics" \
    "$env_dir/postgres-exporter.env" /etc/orders/postgres-exporter.env 0600 \
    "$REPO/infra/monitoring/exporters/postgres-queries.yaml" /etc/prometheus/postgres-queries.yaml 0644
}

provision_mongo() {
  local host
  host=$(need_ip mongo-db public)
  send "$host" "$STATE_DIR/env/mongo-db.env"
  rscript "$host" "$HERE/remote/setup-mongo.sh"
  install_on "$host" mongodb-exporter "http://$(need_ip mongo-db private):$MONGO_EXPORTER_PORT/metrics" \
    "$STATE_DIR/env/mongodb-exporter.env" /etc/orders/mongodb-exporter.env 0600
}

provision_app() {
  local role=$1 service=$2 host
  host=$(need_ip "$role" public)
  # The migrations, unpacked into /opt/orders (the unit's working directory).
  install_on "$host" "$service" "http://127.0.0.1:$APP_PORT/readyz" \
    "$BIN_DIR/$service" "/usr/local/bin/$service" 0755 \
    "$STATE_DIR/env/$service.env" "/etc/orders/$service.env" 0600 \
    "$STATE_DIR/migrations.tar" /opt/orders tar
}

# A load droplet: orders-bench, the k6 script, the databases' addresses (bench.env) and, for every
# k6 a round runs there (the agent's unit and the round's read it), where to push
# (k6-remote-write.env: the monitor's Prometheus, and this droplet's name as the `instance` tag, so
# two droplets' segments stay two series).
provision_load() {
  local host k6_env=$STATE_DIR/env/k6-remote-write-$1.env
  host=$(need_ip "$1" public)
  # shellcheck disable=SC2034 # read by render through ${!name}
  K6_INSTANCE=$TAG-$1
  render "$HERE/env/k6-remote-write.env" "$k6_env"
  install_on "$host" orders-bench-agent "http://127.0.0.1:$AGENT_PORT/healthz" \
    "$BIN_DIR/orders-bench" /usr/local/bin/orders-bench 0755 \
    "$REPO/loadtest/k6/orders.js" /opt/orders/loadtest/k6/orders.js 0644 \
    "$REPO/loadtest/mixes.json" /opt/orders/loadtest/mixes.json 0644 \
    "$STATE_DIR/env/bench.env" /etc/orders/bench.env 0600 \
    "$k6_env" /etc/orders/k6-remote-write.env 0644 \
    "$HERE/remote/round.sh" /usr/local/sbin/orders-round 0755
}

# Prometheus file_sd targets (private IPs): every service, each database's exporter (the labels of
# infra/monitoring/prometheus.yml; the hybrid's as its service's) and node_exporter on every droplet.
write_targets() {
  local dir=$STATE_DIR/targets role
  mkdir -p "$dir"
  for role in $(roles); do
    case $role in
      postgres-app) app_target "$role" pg ;;
      mongo-app) app_target "$role" mongo ;;
      hybrid-app) app_target "$role" pgh ;;
    esac
  done | sd_list >"$dir/orders-do.json"
  {
    exporter_target postgres-db "$PG_EXPORTER_PORT" orders-pg postgres
    if hybrid; then exporter_target hybrid-db "$PG_EXPORTER_PORT" orders-pg-hybrid postgres; fi
  } | sd_list >"$dir/postgres-do.json"
  exporter_target mongo-db "$MONGO_EXPORTER_PORT" orders-mongo mongodb | sd_list >"$dir/mongodb-do.json"
  for role in $(roles); do
    printf '%s:9100 {"host": "%s", "role": "%s"}\n' "$(ip_of "$role" private)" "$TAG-$role" "${role%-[0-9]*}"
  done | sd_list >"$dir/node-do.json"
}
# One target per line, "ADDRESS:PORT LABELS" (LABELS a JSON object): an app droplet's service by
# its target name in the runner's results (BACKEND), a database droplet's exporter.
app_target() {
  printf '%s:%s {"service": "%s", "backend": "%s", "host": "%s"}\n' \
    "$(ip_of "$1" private)" "$APP_PORT" "$(service_of "$1")" "$2" "$TAG-$1"
}
exporter_target() { printf '%s:%s {"service": "%s", "engine": "%s"}\n' "$(ip_of "$1" private)" "$2" "$3" "$4"; }
# Those lines as a file_sd JSON list.
sd_list() {
  awk 'BEGIN { printf "[" }
    { printf "%s\n  {\"targets\": [\"%s\"], \"labels\": %s}", (NR > 1 ? "," : ""), $1, substr($0, length($1) + 2) }
    END { print "\n]" }'
}

provision_monitor() {
  local host
  host=$(need_ip monitor public)
  write_targets
  rscp -q -r "$REPO/infra/monitoring" "$STATE_DIR/targets" "root@$host:/opt/orders/"
  send "$host" "$STATE_DIR/env/grafana.env"
  rscript "$host" "$HERE/remote/setup-monitor.sh" "$(need_ip monitor private):$PROMETHEUS_PORT"
}

cmd_up() {
  local role
  YES=0
  while [ $# -gt 0 ]; do
    case $1 in
      --yes | -y) YES=1; shift ;;
      *) die "up: unknown argument $1 (only --yes)" ;;
    esac
  done
  preflight
  plan
  confirm
  load_secrets
  ensure_tags
  ensure_vpc
  ensure_firewalls

  say "droplets"
  for role in $(roles); do create_droplet "$role"; done
  # shellcheck disable=SC2046 # one word per role
  wait_for_ips $(roles)

  say "waiting for the first boot of every droplet (cloud-init: PostgreSQL 17, MongoDB 8, k6, Prometheus, Grafana)"
  for role in $(roles); do wait_cloud_init "$(ip_of "$role" public)" "$TAG-$role"; done

  say "database roles, secrets, migrations and exporters (docs/security.md), then the binaries, settings and the k6 script (installed where they changed; services restarted only then)"
  render_env
  provision_databases
  for role in $(roles); do
    case $role in
      *-app) provision_app "$role" "$(service_of "$role")" ;;
      load-*) provision_load "$role" ;;
    esac
  done
  provision_monitor

  cmd_status
  say "next: infra/do/do.sh seed, then infra/do/do.sh round"
}
