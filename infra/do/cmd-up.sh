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

# Who may reach what: the one table of the droplets' inbound ports (a database droplet's own come
# from its engine, <engine>_inbound in its droplets.sh). One line per port:
# FIREWALL PORT FROM..., where FIREWALL is one of `firewalls` below (or `*`: every one) and each
# FROM is a role, meaning the droplets carrying its tag, or `operator` (OPERATOR_CIDR). Nothing
# else is let in: each database only from its own app droplet and the load droplets (which reload
# every database before every repeat and count their rows), the databases' exporters and
# node_exporter from the monitor, the apps from the load and monitor droplets, the agents of the
# load droplets from load droplets, Prometheus from the load droplets (their k6 push by remote
# write), and SSH from the operator alone. Grafana listens on the monitor's loopback
# and Prometheus on its VPC address; the operator reaches both through `do.sh tunnel` (SSH), so no
# HTTP port is open to the internet. The hybrid's database (HYBRID=1) has the PostgreSQL pair's
# rules, with its own app droplet.
inbound_ports() {
  local pair
  for pair in $(pair_names); do
    { "$(pair_engine "$pair")_inbound" "$pair"; replica_member_ports "$pair"; } | sed "s/^/$pair-db /"
  done
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
  local apps='' pair
  for pair in $(pair_names); do
    printf '%s\n' "$pair-db $TAG-$pair-db"
    apps+=${apps:+,}$TAG-$pair-app
  done
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

# The binaries the droplets run: every pair's service, and orders-bench.
binaries() {
  pairs | awk '{ print $3 }'
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
      die "$f is $kind; the droplets run Linux x86-64 ($IMAGE): build with the Dockerfile's export target and --platform linux/amd64 (docs/deploy.md, \"Deploy to DigitalOcean\")"
  done
}

# The engines' settings that reach the database droplets' configuration (each engine's
# <engine>_check).
check_engine_settings() {
  local engine
  for engine in $(engines); do "${engine}_check"; done
}

preflight() {
  operator_cidr
  check_binaries
  check_engine_settings
  replicas_check
  if ! dry; then
    command -v doctl >/dev/null || die "doctl not found (see docs/deploy.md, \"Deploy to DigitalOcean\")"
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
  replicas_detect up
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
    replicas_cost_line
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
  render "$(template_of "$role")" "$ud"
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
# load droplets and Grafana's (infra/do/env), then each pair's (its engine's <engine>_render: its
# service's env file, the role passwords its database droplet sets, its exporter's settings); and
# the migrations; the databases' CA and their certificates (tls.sh). Every pair's database address
# is PREFIX_DB_IP (PG_DB_IP, MONGO_DB_IP ...).
render_env() {
  local pair ip f
  for pair in $(pair_names); do
    ip=$(need_ip "$pair-db" private)
    printf -v "$(pair_prefix "$pair")_DB_IP" '%s' "$ip"
  done
  # shellcheck disable=SC2034 # read by render through ${!name}
  MONITOR_IP=$(need_ip monitor private)
  mkdir -p "$STATE_DIR/env"
  for f in bench grafana; do
    render "$HERE/env/$f.env" "$STATE_DIR/env/$f.env"
  done
  for pair in $(pair_names); do
    "$(pair_engine "$pair")_render" "$pair"
  done
  replicas_render
  tls_render
  tar -C "$REPO" --owner=0 --group=0 --mtime=@0 --sort=name -cf "$STATE_DIR/migrations.tar" migrations
}

# The databases' roles and users, one per job (docs/security.md), and on PostgreSQL the migrations,
# applied as the role that owns the tables before the service starts (its own role could not) and
# the plan log; then each database's exporter, on the droplet's VPC address, as the role made for
# it: each pair's database droplet by its engine's <engine>_provision.
provision_databases() {
  local pair
  for pair in $(pair_names); do
    provision_pair_database "$pair"
  done
}

# An app droplet: its service, its settings (the database's URL: TLS, verify-full / tls=true), the
# databases' CA certificate the URL names, and the migrations.
provision_app() {
  local role=$1 service=$2 host
  host=$(need_ip "$role" public)
  # The migrations, unpacked into /opt/orders (the unit's working directory).
  install_on "$host" "$service" "http://127.0.0.1:$APP_PORT/readyz" \
    "$BIN_DIR/$service" "/usr/local/bin/$service" 0755 \
    "$STATE_DIR/env/$service.env" "/etc/orders/$service.env" 0600 \
    "$(tls_dir)/ca.crt" "$TLS_REMOTE_CA" 0644 \
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
    "$(tls_dir)/ca.crt" "$TLS_REMOTE_CA" 0644 \
    "$k6_env" /etc/orders/k6-remote-write.env 0644 \
    "$HERE/remote/round.sh" /usr/local/sbin/orders-round 0755
}

# Prometheus file_sd targets (private IPs): every service, each database's exporter (the labels of
# infra/monitoring/prometheus.yml; the hybrid's as its service's) and node_exporter on every droplet.
# A database's exporter is its engine's <engine>_exporter: "PORT JOB", JOB naming the file
# (JOB-do.json: postgres, mongodb) and the label `engine`.
write_targets() {
  local dir=$STATE_DIR/targets role pair port job exporters='' jobs=''
  mkdir -p "$dir"
  for pair in $(pair_names); do app_target "$pair-app" "$(pair_target "$pair")"; done | sd_list >"$dir/orders-do.json"
  for pair in $(pair_names); do
    read -r port job <<<"$("$(pair_engine "$pair")_exporter" "$pair")"
    exporters+="$job $(exporter_target "$pair-db" "$port" "$(pair_service "$pair")" "$job")"$'\n'
    case " $jobs " in *" $job "*) ;; *) jobs+=" $job" ;; esac
  done
  for job in $jobs; do
    printf '%s' "$exporters" | awk -v j="$job" '$1 == j { print substr($0, length($1) + 2) }' | sd_list >"$dir/$job-do.json"
  done
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
  # up's member count is its own (--replicas, default REPLICAS): refresh_droplets leaves it.
  # shellcheck disable=SC2034 # read by refresh_droplets (lib.sh)
  REPLICAS_FROM_FLAG=1
  while [ $# -gt 0 ]; do
    case $1 in
      --yes | -y) YES=1; shift ;;
      --replicas) [ $# -ge 2 ] || die "up: --replicas needs a number"; replicas_flag "$2"; shift 2 ;;
      --replicas=*) replicas_flag "${1#*=}"; shift ;;
      *) die "up: unknown argument $1 (--yes, --replicas N)" ;;
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
