# shellcheck shell=bash
# `do.sh up`: tags, VPC, cloud firewalls, droplets with per-role cloud-init, then the binaries,
# the k6 script and the monitoring configuration, and finally the hourly cost.

all_tags() {
  printf '%s\n' "$TAG" "$TAG-postgres-db" "$TAG-mongo-db" "$TAG-postgres-app" "$TAG-mongo-app" \
    "$TAG-load" "$TAG-monitor"
}

# One line per firewall: NAME|TAGS IT APPLIES TO|INBOUND RULES. Nothing else is let in: each
# database only from its own app droplet, the apps only from the load and monitor droplets,
# SSH (and Grafana/Prometheus) only from the operator, node_exporter only from the monitor.
firewall_specs() {
  local ssh="protocol:tcp,ports:22,address:$OPERATOR_CIDR"
  local node="protocol:tcp,ports:9100,tag:$TAG-monitor"
  local app="protocol:tcp,ports:$APP_PORT"
  printf '%s|%s|%s\n' \
    "$TAG-postgres-db" "$TAG-postgres-db" "protocol:tcp,ports:5432,tag:$TAG-postgres-app $ssh $node" \
    "$TAG-mongo-db" "$TAG-mongo-db" "protocol:tcp,ports:27017,tag:$TAG-mongo-app $ssh $node" \
    "$TAG-apps" "$TAG-postgres-app,$TAG-mongo-app" "$app,tag:$TAG-load $app,tag:$TAG-monitor $ssh $node" \
    "$TAG-load" "$TAG-load" "$ssh $node" \
    "$TAG-monitor" "$TAG-monitor" "$ssh protocol:tcp,ports:3000,address:$OPERATOR_CIDR protocol:tcp,ports:9090,address:$OPERATOR_CIDR $node"
}
OUTBOUND='protocol:tcp,ports:all,address:0.0.0.0/0 protocol:tcp,ports:all,address:::/0 protocol:udp,ports:all,address:0.0.0.0/0 protocol:udp,ports:all,address:::/0 protocol:icmp,address:0.0.0.0/0 protocol:icmp,address:::/0'

operator_cidr() {
  [ -n "$OPERATOR_IP" ] || die "set OPERATOR_IP to your public address, e.g. OPERATOR_IP=\$(curl -fsS https://ifconfig.me): SSH and Grafana accept only it"
  case $OPERATOR_IP in
    */*) OPERATOR_CIDR=$OPERATOR_IP ;;
    *:*) OPERATOR_CIDR=$OPERATOR_IP/128 ;;
    *) OPERATOR_CIDR=$OPERATOR_IP/32 ;;
  esac
}

check_binaries() {
  local bin f
  for bin in orders-pg orders-mongo orders-bench; do
    f=$BIN_DIR/$bin
    if [ ! -f "$f" ]; then
      if dry; then say "note: $f is missing (fine for a dry run)"; continue; fi
      die "$f missing: cargo build --release -p orders-pg -p orders-mongo -p orders-bench, or
  docker build --target export --output type=local,dest=.local/dist . && export BIN_DIR=\$PWD/.local/dist"
    fi
    [ "$(head -c 4 "$f" | od -An -c | tr -d ' \n')" = '177ELF' ] ||
      die "$f is not a Linux (ELF) binary: build it with the Dockerfile's export target (see README.md, "Deploy to DigitalOcean")"
  done
}

preflight() {
  operator_cidr
  check_binaries
  if ! dry; then command -v doctl >/dev/null || die "doctl not found (see README.md, "Deploy to DigitalOcean")"; fi
  say "DigitalOcean account: $(query dry-run@example.com doctl account get --format Email --no-header)"
  if [ -z "$SSH_KEY" ]; then
    SSH_KEY=$(query dry-run-key doctl compute ssh-key list --format ID --no-header | paste -sd, -)
    [ -n "$SSH_KEY" ] || die "no SSH key in the account: doctl compute ssh-key import NAME --public-key-file ~/.ssh/id_ed25519.pub"
  fi
}

ensure_tags() {
  local have t
  have=$(query '' doctl compute tag list --format Name --no-header)
  for t in $(all_tags); do
    if ! printf '%s\n' "$have" | grep -qx -- "$t"; then run doctl compute tag create "$t"; fi
  done
}

ensure_vpc() {
  local line args=(--name "$TAG-vpc" --region "$REGION" --description "orders-bench deployment $TAG")
  line=$(query '' doctl vpcs list --format ID,Name,IPRange --no-header | awk -v n="$TAG-vpc" '$2 == n { print $1, $3 }')
  if [ -z "$line" ]; then
    if [ -n "$VPC_RANGE" ]; then args+=(--ip-range "$VPC_RANGE"); fi
    line=$(query "dry-run-vpc ${VPC_RANGE:-10.110.0.0/20}" doctl vpcs create "${args[@]}" --format ID,IPRange --no-header)
  fi
  read -r VPC_ID VPC_CIDR <<<"$line"
  [ -n "$VPC_CIDR" ] || die "could not read the VPC's id and range from: $line"
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
        --inbound-rules "$rules" --outbound-rules "$OUTBOUND" --format ID,Name --no-header
    else
      run doctl compute firewall create --name "$name" --tag-names "$tags" \
        --inbound-rules "$rules" --outbound-rules "$OUTBOUND" --format ID,Name --no-header
    fi
  done < <(firewall_specs)
}

create_droplet() {
  local role=$1 name=$TAG-$1 ud
  if printf '%s\n' "$EXISTING" | grep -qx -- "$name"; then say "$name exists"; return 0; fi
  ud=$STATE_DIR/user-data/$role.yaml
  mkdir -p "$STATE_DIR/user-data"
  render "$HERE/cloud-init/${role%-[0-9]*}.yaml" "$ud"
  run doctl compute droplet create "$name" --region "$REGION" --image "$IMAGE" \
    --size "$(size_of "$role")" --vpc-uuid "$VPC_ID" --ssh-keys "$SSH_KEY" \
    --tag-names "$TAG,$(role_tag "$role")" --user-data-file "$ud" --format ID,Name --no-header
}

provision_app() {
  local role=$1 service=$2 host
  host=$(need_ip "$role" public)
  rscp -r "$BIN_DIR/$service" "$BIN_DIR/orders-bench" "$REPO/migrations" "root@$host:/opt/orders/"
  rssh "$host" "install -m 0755 /opt/orders/$service /opt/orders/orders-bench /usr/local/bin/ && systemctl enable $service && systemctl restart $service && curl -fsS --retry 60 --retry-delay 1 --retry-connrefused -o /dev/null http://127.0.0.1:$APP_PORT/readyz && echo $service is ready"
}

provision_load() {
  local host
  host=$(need_ip "$1" public)
  rssh "$host" 'install -d -m 0755 /opt/orders/loadtest /opt/orders/results'
  rscp -r "$REPO/loadtest/k6" "root@$host:/opt/orders/loadtest/"
  rscp "$BIN_DIR/orders-bench" "root@$host:/opt/orders/"
  rssh "$host" 'install -m 0755 /opt/orders/orders-bench /usr/local/bin/ && k6 version'
}

# Prometheus file_sd targets: both services and node_exporter on every droplet (private IPs).
write_targets() {
  local dir=$STATE_DIR/targets role sep=''
  mkdir -p "$dir"
  cat >"$dir/orders-do.json" <<JSON
[
  {"targets": ["$(ip_of postgres-app private):$APP_PORT"], "labels": {"service": "orders-pg", "backend": "pg", "host": "$TAG-postgres-app"}},
  {"targets": ["$(ip_of mongo-app private):$APP_PORT"], "labels": {"service": "orders-mongo", "backend": "mongo", "host": "$TAG-mongo-app"}}
]
JSON
  {
    printf '['
    for role in $(roles); do
      printf '%s\n  {"targets": ["%s:9100"], "labels": {"host": "%s", "role": "%s"}}' \
        "$sep" "$(ip_of "$role" private)" "$TAG-$role" "${role%-[0-9]*}"
      sep=','
    done
    printf '\n]\n'
  } >"$dir/node-do.json"
}

provision_monitor() {
  local host
  host=$(need_ip monitor public)
  write_targets
  rscp -r "$REPO/infra/monitoring" "$STATE_DIR/targets" "root@$host:/opt/orders/"
  rscript "$host" "$HERE/remote/setup-monitor.sh"
}

cmd_up() {
  local role
  preflight
  load_secrets
  ensure_tags
  ensure_vpc
  ensure_firewalls
  EXISTING=$(query '' doctl compute droplet list --tag-name "$TAG" --format Name --no-header)

  say "database droplets"
  create_droplet postgres-db
  create_droplet mongo-db
  wait_for_ips postgres-db mongo-db
  # shellcheck disable=SC2034 # read by render through ${!name}
  PG_DB_IP=$(ip_of postgres-db private)
  # shellcheck disable=SC2034
  MONGO_DB_IP=$(ip_of mongo-db private)

  say "app, load and monitor droplets"
  for role in $(roles); do
    case $role in *-db) ;; *) create_droplet "$role" ;; esac
  done
  # shellcheck disable=SC2046 # one word per role
  wait_for_ips $(roles)

  say "waiting for cloud-init (installs PostgreSQL 17, MongoDB 8, k6, Prometheus, Grafana)"
  for role in $(roles); do wait_cloud_init "$(ip_of "$role" public)"; done

  say "binaries, k6 script and monitoring configuration"
  provision_app postgres-app orders-pg
  provision_app mongo-app orders-mongo
  for role in $(roles); do
    case $role in load-*) provision_load "$role" ;; esac
  done
  provision_monitor

  cmd_status
  say "next: infra/do/do.sh seed, then infra/do/do.sh round"
}
