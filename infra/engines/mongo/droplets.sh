# shellcheck shell=bash
# MongoDB on the droplets: what infra/do/do.sh calls for the pair of droplets whose engine is mongo
# (mongo-db/mongo-app), its settings, and the pair as a replicated deployment (up --replicas N:
# the replica set rs0). Sourced by do.sh after config.sh and lib.sh, whose
# helpers (render, send, rscript, install_on, need_ip, pair_* ...) these functions use; the
# contract is infra/engines/README.md. The droplets' first boot is cloud-init/db.yaml and app.yaml,
# their files after boot env/ (rendered) and remote/ (run over ssh).
# shellcheck disable=SC2154 # ENGINES_DIR, STATE_DIR ... come from do.sh

# Percona's mongodb_exporter on the database droplet (open to the monitor droplet only).
MONGO_EXPORTER_PORT=9216
# Percona's mongodb_exporter on mongo-db (a GitHub release: no apt repository), installed only when
# its tarball, mongodb_exporter-<version>.linux-amd64.tar.gz, has this SHA-256: take it from the
# release's mongodb_exporter_<version>_checksums.txt. `up` refuses to start without it.
MONGODB_EXPORTER_VERSION=${MONGODB_EXPORTER_VERSION:-0.47.1}
MONGODB_EXPORTER_SHA256=${MONGODB_EXPORTER_SHA256:-}

# --- what do.sh calls (infra/engines/README.md) --------------------------------------------------

# Percona's exporter is installed only with its pinned checksum.
mongo_check() {
  if [ -z "$MONGODB_EXPORTER_SHA256" ] && dry; then
    say "note: MONGODB_EXPORTER_SHA256 is not set (fine for a dry run; up needs it)"
    MONGODB_EXPORTER_SHA256='not-set'
    return
  fi
  [[ $MONGODB_EXPORTER_SHA256 =~ ^[0-9a-f]{64}$ ]] ||
    die "MONGODB_EXPORTER_SHA256=${MONGODB_EXPORTER_SHA256:-(empty)}: mongo-db installs Percona's mongodb_exporter $MONGODB_EXPORTER_VERSION only with the SHA-256 of mongodb_exporter-$MONGODB_EXPORTER_VERSION.linux-amd64.tar.gz, 64 lowercase hex digits: take it from https://github.com/percona/mongodb_exporter/releases/download/v$MONGODB_EXPORTER_VERSION/mongodb_exporter_${MONGODB_EXPORTER_VERSION}_checksums.txt and set it in infra/engines/mongo/droplets.sh or infra/do/config.sh (or export it)"
}

# mongo_inbound PAIR: the database droplet's ports, "PORT FROM...": mongod from its own app
# droplet and the load droplets, the exporter from the monitor.
mongo_inbound() {
  printf '%s\n' "27017 $1-app load" "$MONGO_EXPORTER_PORT monitor"
}

# mongo_exporter PAIR: "PORT JOB" of the exporter Prometheus scrapes on PAIR-db.
mongo_exporter() { printf '%s\n' "$MONGO_EXPORTER_PORT mongodb"; }

# mongo_render PAIR: SERVICE.env for PAIR-app, and for PAIR-db its users' passwords and its
# exporter's settings, from the templates in env/ (which read MONGO_DB_IP, MONGO_*_PASSWORD).
mongo_render() {
  local dir env=$ENGINES_DIR/mongo/env
  dir=$(db_env_dir "$1")
  mkdir -p "$dir"
  render "$env/orders-mongo.env" "$STATE_DIR/env/$(pair_service "$1").env"
  render "$env/mongo-db.env" "$dir/mongo-db.env"
  render "$env/mongodb-exporter.env" "$dir/mongodb-exporter.env"
}

# mongo_provision PAIR: PAIR-db gets its certificate (TLS required, the VPC address:
# remote/tls.sh), its users with their passwords, then its exporter's settings.
mongo_provision() {
  local host dir
  dir=$(db_env_dir "$1")
  host=$(need_ip "$1-db" public)
  # shellcheck disable=SC2046 # one path per line, none with a space
  send "$host" "$dir/mongo-db.env" $(tls_files "$1-db")
  # TLS required and the VPC address first (remote/tls.sh): a restart, if any, before the users.
  rscript "$host" "$ENGINES_DIR/mongo/remote/tls.sh" "$(need_ip "$1-db" private)"
  rscript "$host" "$ENGINES_DIR/mongo/remote/setup.sh"
  install_on "$host" mongodb-exporter "http://$(need_ip "$1-db" private):$MONGO_EXPORTER_PORT/metrics" \
    "$dir/mongodb-exporter.env" /etc/orders/mongodb-exporter.env 0600
}

# --- replicated: do.sh up --replicas N (infra/do/replicas.sh) ------------------------------------
# The replica set rs0 with a shared keyfile (remote/replset-setup.sh); the service and orders-bench
# get a replica-set URI, as the local replicated stack gives them. electionTimeoutMillis stays at
# its default (10 s).

# Its secrets: the keyfile (the members' authentication to each other) and the administrator's
# password, one for the set since any member may become the primary (a single mongo-db makes its
# own on the droplet and keeps it there).
mongo_replica_secrets() { printf '%s\n' MONGO_KEYFILE MONGO_ADMIN_PASSWORD; }

# mongo_member_ports PAIR: "PORT FROM" lines, what the members reach on each other.
mongo_member_ports() { printf '%s\n' "27017 $1-db"; }

# mongo_replica_urls PAIR: the service's and orders-bench's URIs (the single server's, as
# mongo_render wrote them) name every member of rs0.
mongo_replica_urls() {
  local ip hosts f
  ip=$(need_ip "$1-db" private)
  hosts=$(replica_hosts "$1" 27017)
  for f in "$STATE_DIR/env/$(pair_service "$1").env" "$STATE_DIR/env/bench.env"; do
    sed -i "s|^\([A-Z_]*\)='\(.*\)@$ip:27017/?authSource=admin\(.*\)'\$|\1='\2@$hosts/?authSource=admin\&replicaSet=rs0\3'|" "$f"
  done
}

# MongoDB: every member gets its certificate (TLS required, the VPC address: remote/tls.sh; the
# members' own traffic is TLS too, each presenting its certificate), restarts as a member of rs0
# with the keyfile (members 2..N empty, as a new member must be), member 1 initiates the set; then the users on the primary, the exporter on
# member 1.
mongo_replicas_provision() {
  local pair=$1 role host members='' sep='' primary dir f=$STATE_DIR/env/mongo-replica.env remote=$ENGINES_DIR/mongo/remote
  for role in $(replica_members "$pair"); do
    members+=$sep$(need_ip "$role" private):27017
    sep=,
  done
  (umask 077 && printf 'MONGO_KEYFILE=%s\nMONGO_ADMIN_PASSWORD=%s\n' "$MONGO_KEYFILE" "$MONGO_ADMIN_PASSWORD" >"$f")
  for role in $(replica_members "$pair"); do
    host=$(need_ip "$role" public)
    # shellcheck disable=SC2046 # one path per line, none with a space
    send "$host" "$f" $(tls_files "$role")
    rscript "$host" "$remote/tls.sh" "$(need_ip "$role" private)"
    rscript "$host" "$remote/replset-setup.sh" member "$(replica_index "$role")"
  done
  rscript "$(need_ip "$pair-db" public)" "$remote/replset-setup.sh" initiate "$members"
  primary=$pair-db
  if ! dry; then primary=$(wait_replica_primary "$pair" 120) || die "no MongoDB primary among the members"; fi
  say "MongoDB: rs0's primary is $TAG-$primary; users there"
  dir=$(db_env_dir "$pair")
  host=$(need_ip "$primary" public)
  send "$host" "$dir/mongo-db.env"
  rscript "$host" "$ENGINES_DIR/mongo/remote/setup.sh"
  install_on "$(need_ip "$pair-db" public)" mongodb-exporter "http://$(need_ip "$pair-db" private):$MONGO_EXPORTER_PORT/metrics" \
    "$dir/mongodb-exporter.env" /etc/orders/mongodb-exporter.env 0600
}
