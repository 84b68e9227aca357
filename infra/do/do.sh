#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# DigitalOcean deployment of the comparison: each service beside its database on separate
# droplets, k6 on its own droplet(s), Prometheus + Grafana on a monitor droplet.
# Run `infra/do/do.sh help`. DRY_RUN=1 prints every doctl/ssh/scp command instead of running it.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=config.sh
. "$HERE/config.sh"
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=cmd-up.sh
. "$HERE/cmd-up.sh"
# shellcheck source=cmd-bench.sh
. "$HERE/cmd-bench.sh"
# shellcheck source=cmd-admin.sh
. "$HERE/cmd-admin.sh"

usage() {
  cat <<USAGE
usage: infra/do/do.sh COMMAND [ARGS]

  up                      create VPC, firewalls and droplets (tag $TAG), install and start
                          everything, print the hourly cost
  seed [--orders N] [..]  load the same N orders (default 1000000) into both databases at once,
                          from the app droplets (other args go to orders-bench seed)
  round [--mix M] [--start-rate R] [--step S] [--max-rate R] [--step-duration D] [..]
                          run orders-bench round on the load droplet(s) against both apps,
                          copy the results to $RESULTS_DIR/<id>/ (other args go to orders-bench round)
  toggle NAME=VALUE...    set PG_GIN_FASTUPDATE (on|off), PG_PLAN_CACHE_MODE
                          (auto|force_custom_plan|force_generic_plan) or PG_STATEMENT_MODE
                          (prepared|unprepared) on the postgres-app droplet and restart orders-pg;
                          NAME= removes the setting
  status                  droplets, addresses and hourly cost
  ssh ROLE [COMMAND]      ssh to a droplet: postgres-db mongo-db postgres-app mongo-app load-N monitor
  down                    delete every droplet tagged $TAG, the firewalls, the VPC and the tags
  help                    this text

Settings (environment; defaults in infra/do/config.sh): OPERATOR_IP (required by up), SSH_KEY,
SSH_IDENTITY, TAG=$TAG, REGION=$REGION, DB_SIZE=$DB_SIZE, APP_SIZE=$APP_SIZE,
LOAD_SIZE=$LOAD_SIZE, MONITOR_SIZE=$MONITOR_SIZE, LOAD_COUNT=$LOAD_COUNT, BIN_DIR, PRICES,
DRY_RUN=1 (print the doctl/ssh/scp commands instead of running them).
USAGE
}

exec 3>&1
command=${1:-help}
if [ $# -gt 0 ]; then shift; fi
case $command in help | -h | --help) usage; exit 0 ;; esac
ssh_opts
case $command in
  up) cmd_up "$@" ;;
  seed) cmd_seed "$@" ;;
  round) cmd_round "$@" ;;
  toggle) cmd_toggle "$@" ;;
  status) cmd_status "$@" ;;
  ssh) cmd_ssh "$@" ;;
  down) cmd_down "$@" ;;
  *) usage >&2; exit 2 ;;
esac
