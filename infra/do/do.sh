#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# DigitalOcean deployment of the comparison: each service beside its database on separate
# droplets (with HYBRID=1 a third pair, for orders-pg-hybrid), k6 and orders-bench on their own
# droplet(s), Prometheus + Grafana on a monitor droplet (reached through an SSH tunnel). Who can reach what, the roles and the secrets: docs/security.md.
# Run `infra/do/do.sh help`. DRY_RUN=1 prints every doctl/ssh/scp command instead of running it.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The engines' folders: each pair of droplets (lib.sh, pairs) is made from its engine's files and
# functions (infra/engines/README.md).
ENGINES_DIR=$(cd "$HERE/../engines" && pwd)
# shellcheck source=config.sh
. "$HERE/config.sh"
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=cmd-up.sh
. "$HERE/cmd-up.sh"
# shellcheck source=tls.sh
. "$HERE/tls.sh"
# shellcheck source=cmd-bench.sh
. "$HERE/cmd-bench.sh"
# shellcheck source=cmd-admin.sh
. "$HERE/cmd-admin.sh"
# shellcheck source=replicas.sh
. "$HERE/replicas.sh"
# shellcheck source=cmd-failover.sh
. "$HERE/cmd-failover.sh"
# Every engine a deployment can have (the hybrid's pair's too, whatever HYBRID says).
for engine in $(HYBRID=1 engines); do
  # shellcheck source=/dev/null # infra/engines/*/droplets.sh, checked on their own
  . "$ENGINES_DIR/$engine/droplets.sh"
done
unset engine

# The engines' own commands (PostgreSQL's toggle), one per line, and their lines of the usage.
engine_commands() {
  local engine
  for engine in $(HYBRID=1 engines); do
    if declare -F "${engine}_commands" >/dev/null; then "${engine}_commands"; fi
  done
}
engines_usage() {
  local engine
  for engine in $(HYBRID=1 engines); do
    if declare -F "${engine}_usage" >/dev/null; then "${engine}_usage"; fi
  done
}

usage() {
  cat <<USAGE
usage: infra/do/do.sh COMMAND [ARGS]

  up [--yes] [--replicas N]
                          check the binaries (Linux x86-64), the sizes in \$REGION and the
                          account's droplet limit, print the plan and its hourly cost, ask
                          (--yes: don't), then create the VPC, firewalls and droplets (tag $TAG),
                          install and start everything. Run again to reconcile: only changed
                          files are installed, only services whose files changed restart.
                          The databases speak TLS: up makes a CA once (openssl; its key stays in
                          .local/do/\$TAG/tls, 0600) and a certificate per database droplet for
                          its VPC address; the servers require TLS of the services (PostgreSQL
                          hostssl, mongod requireTLS), listen on their VPC address and loopback
                          alone, and the services connect with verify-full / tls=true
                          --replicas 3 (or 5): N database droplets per engine, each engine's own
                          replication: MongoDB the replica set rs0, PostgreSQL a primary and
                          standbys under Patroni with etcd on the members, synchronous_mode on
                          (one synchronous standby); the services get a replica-set URI and a
                          multi-host URL (target_session_attrs=read-write). The plan says what the
                          further members add per hour. Not with HYBRID=1; give the same N to a
                          later up (the other commands read it from the droplets)
  seed [ARGS]             load the same orders into every database at once from the first load
                          droplet (ARGS go to orders-bench seed, e.g. --orders 1000000 --reset)
  round [--mix M] [--start-rate R] [--step S] [--max-rate R] [--step-duration D] [--no-reseed] [..]
                          run orders-bench round on the first load droplet, detached (a unit of its
                          own), every repeat on freshly reloaded data, with every load droplet
                          offering its k6 execution segment; wait for it, copy the folder to
                          $RESULTS_DIR/<id>/ and write the report (other args go to
                          orders-bench round, e.g. --repeats 3)
  round --attach ID       wait for a round that is running (after a dropped connection) and fetch it
$(engines_usage)
$(failover_usage)
  status                  droplets, addresses, VPC, firewalls and the hourly cost of what exists
  tunnel                  an SSH tunnel to Grafana and Prometheus on the monitor droplet (on its
                          loopback and VPC address); prints their local URLs, runs until Ctrl-C
  ssh ROLE [COMMAND]      ssh to a droplet: postgres-db mongo-db postgres-app mongo-app load-N monitor
                          (hybrid-db hybrid-app with HYBRID=1; postgres-db-N mongo-db-N with --replicas)
  down                    delete every droplet tagged $TAG, the firewalls, the VPC (unless it is
                          the region's default) and the tags; says what it cost and what is left
  help                    this text

Root: do.sh needs none here (it works as root on the droplets, over SSH); the simulated cloud
that tests it (infra/ci/test-do-simcloud.sh, test-do-simcloud-replicas.sh) needs root.

Settings (environment; defaults in infra/do/config.sh, an engine's own in
infra/engines/<engine>/droplets.sh): OPERATOR_IP (required by up: your address;
a range wider than one address only with ALLOW_WIDE_OPERATOR=1), SSH_KEY,
SSH_IDENTITY, TAG=$TAG, REGION=$REGION, DB_SIZE=$DB_SIZE, APP_SIZE=$APP_SIZE,
LOAD_SIZE=$LOAD_SIZE, MONITOR_SIZE=$MONITOR_SIZE, LOAD_COUNT=$LOAD_COUNT, POOL_SIZE=$POOL_SIZE,
HYBRID=$HYBRID (1: a third pair, hybrid-db and hybrid-app, for orders-pg-hybrid; DB_SIZE and APP_SIZE),
REPLICAS=$REPLICAS (the default of up --replicas), PATRONI_TTL=$PATRONI_TTL, PATRONI_LOOP_WAIT=$PATRONI_LOOP_WAIT,
PATRONI_RETRY_TIMEOUT=$PATRONI_RETRY_TIMEOUT (Patroni's failover settings, at the first up --replicas),
K6_VERSION=$K6_VERSION, GRAFANA_VERSION=$GRAFANA_VERSION, MONGODB_EXPORTER_VERSION=$MONGODB_EXPORTER_VERSION,
MONGODB_EXPORTER_SHA256 (required by up: the SHA-256 of Percona's release tarball),
PG_PLAN_LOG_MS=$PG_PLAN_LOG_MS (PostgreSQL logs the plans of statements this slow), TUNNEL_GRAFANA_PORT=$TUNNEL_GRAFANA_PORT,
TUNNEL_PROMETHEUS_PORT=$TUNNEL_PROMETHEUS_PORT, BIN_DIR, STATE_DIR, RESULTS_DIR,
DRY_RUN=1 (print the doctl/ssh/scp commands instead of running them; asks DigitalOcean nothing).
USAGE
}

exec 3>&1
command=${1:-help}
if [ $# -gt 0 ]; then shift; fi
case $command in help | -h | --help) usage; exit 0 ;; esac
case $HYBRID in 0 | 1) ;; *) die "HYBRID=$HYBRID: 1 (the hybrid's pair of droplets too) or 0" ;; esac
ssh_opts
case $command in
  up) cmd_up "$@" ;;
  seed) cmd_seed "$@" ;;
  round) cmd_round "$@" ;;
  status) cmd_status "$@" ;;
  tunnel) cmd_tunnel "$@" ;;
  ssh) cmd_ssh "$@" ;;
  down) cmd_down "$@" ;;
  failover) cmd_failover "$@" ;;
  *)
    # An engine's own command (toggle): its function cmd_<command>.
    if grep -qx -- "$command" <<<"$(engine_commands)"; then "cmd_$command" "$@"; else usage >&2; exit 2; fi
    ;;
esac
