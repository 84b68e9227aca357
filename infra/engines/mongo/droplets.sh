# shellcheck shell=bash
# MongoDB on the droplets: what infra/do/do.sh calls for the pair of droplets whose engine is mongo
# (mongo-db/mongo-app), and its settings. Sourced by do.sh after config.sh and lib.sh, whose
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

# mongo_provision PAIR: PAIR-db gets its users with their passwords, then its exporter's settings.
mongo_provision() {
  local host dir
  dir=$(db_env_dir "$1")
  host=$(need_ip "$1-db" public)
  send "$host" "$dir/mongo-db.env"
  rscript "$host" "$ENGINES_DIR/mongo/remote/setup.sh"
  install_on "$host" mongodb-exporter "http://$(need_ip "$1-db" private):$MONGO_EXPORTER_PORT/metrics" \
    "$dir/mongodb-exporter.env" /etc/orders/mongodb-exporter.env 0600
}
