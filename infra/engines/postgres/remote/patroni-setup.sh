#!/usr/bin/env bash
# Runs on each member of a replicated PostgreSQL deployment (do.sh up --replicas N: postgres-db,
# postgres-db-2 ...) as root, after the first boot; safe to run again. It owns the member's move
# from the Debian cluster the first boot made to a Patroni member:
#   configure NAME IP ETCD_MEMBERS MEMBER_IPS VPC_CIDR TAG PLAN_LOG_MS
#       installs Patroni 4.1.5 (PyPI, in /opt/orders/patroni; the local replicated stack's pin) and
#       etcd 3.4 (the distribution's etcd-server) when missing, stops and disables the Debian
#       cluster (its data stays, unused), writes etcd's and Patroni's configuration and units and
#       starts etcd (member NAME of ETCD_MEMBERS, "pg1=IP,pg2=IP,..."; on IP and the loopback).
#       PostgreSQL listens on IP and the loopback, Patroni's REST API on IP. Patroni's PostgreSQL
#       reads the first boot's settings (conf.d/orders.conf, the plan log's threshold) through its
#       custom_conf, so a member runs with the settings a single server has.
#   start   starts Patroni (its unit does not restart it: a killed member stays down, as Patroni's
#           own unit file has it, so a failover is Patroni's and not systemd's)
#   wait N  waits until Patroni reports a leader, a synchronous standby and N-1 members streaming
#   grants  (on the primary, after setup.sh) pg_read_all_stats for orders_service: its
#           /diagnostics says what a commit waits for from pg_stat_replication (which standby is
#           synchronous), which the server hides from a role without it; the fairness gate of a
#           round reads it there
# The passwords (superuser, replication) arrive in /opt/orders/incoming/patroni.env and stay in
# root-only /etc/orders/patroni.env and the postgres-only /etc/orders/patroni.yml.
set -euo pipefail
PATRONI_PIN=("patroni[etcd3]==4.1.5" "psycopg[binary]==3.3.9")
PATRONI=/opt/orders/patroni/bin/patroni
DATA=/var/lib/postgresql/patroni
cd /

# Patroni's REST API listens on this member's VPC address alone (configure writes it down).
patroni_cluster() { curl -fsS --max-time 3 "http://$(cat /etc/orders/member-ip 2>/dev/null || echo 127.0.0.1):8008/cluster" 2>/dev/null; }

install_missing() {
  export DEBIAN_FRONTEND=noninteractive
  if ! command -v etcd >/dev/null; then
    apt-get -o DPkg::Lock::Timeout=600 install -y etcd-server
    # The package's own etcd (a single local member) is not ours.
    systemctl disable --now etcd 2>/dev/null || true
  fi
  if [ ! -x "$PATRONI" ]; then
    command -v python3 >/dev/null || apt-get -o DPkg::Lock::Timeout=600 install -y python3
    python3 -m venv /opt/orders/patroni 2>/dev/null || {
      apt-get -o DPkg::Lock::Timeout=600 install -y python3-venv
      python3 -m venv /opt/orders/patroni
    }
    /opt/orders/patroni/bin/pip install -q --disable-pip-version-check "${PATRONI_PIN[@]}"
  fi
}

configure() {
  local name=$1 ip=$2 etcd_members=$3 member_ips=$4 vpc=$5 tag=$6 plan_ms=$7 etcd_hosts='' initial='' m hba=''
  install -m 0600 /opt/orders/incoming/patroni.env /etc/orders/patroni.env
  rm -rf /opt/orders/incoming
  printf '%s\n' "$ip" >/etc/orders/member-ip
  # shellcheck source=/dev/null
  . /etc/orders/patroni.env
  # shellcheck source=/dev/null
  . /etc/orders/pg-cluster.env
  install_missing
  id etcd >/dev/null 2>&1 || useradd --system --user-group --home-dir /var/lib/orders-etcd --no-create-home --shell /usr/sbin/nologin etcd
  install -d -o etcd -g etcd -m 0700 /var/lib/orders-etcd

  # The first boot's single server stops for good (a reboot must not start it beside Patroni).
  systemctl disable "$PG_SERVICE" >/dev/null 2>&1 || true
  systemctl stop "$PG_SERVICE" || true
  [ ! -f "$PG_CONF_DIR/start.conf" ] || echo disabled >"$PG_CONF_DIR/start.conf"

  for m in ${etcd_members//,/ }; do
    etcd_hosts+=${etcd_hosts:+,}${m#*=}:2379
    initial+=${initial:+,}${m%%=*}=http://${m#*=}:2380
  done
  cat >/etc/systemd/system/orders-etcd.service <<UNIT
[Unit]
Description=etcd member $name: Patroni's store (do.sh up --replicas)
Wants=network-online.target
After=network-online.target

[Service]
User=etcd
Group=etcd
ExecStart=/usr/bin/etcd --name $name --data-dir /var/lib/orders-etcd --listen-client-urls http://$ip:2379,http://127.0.0.1:2379 --advertise-client-urls http://$ip:2379 --listen-peer-urls http://$ip:2380 --initial-advertise-peer-urls http://$ip:2380 --initial-cluster $initial --initial-cluster-token $tag-etcd --initial-cluster-state new
Restart=on-failure
RestartSec=2
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
UNIT

  # pg_hba: the single server's lines (the service's role from the VPC over TLS only, the
  # seeding role from the VPC, the exporter from the loopback, the owner's peer login), and the
  # members' replication and pg_rewind, over TLS only (remote/tls.sh gave the server its
  # certificate; each member checks the other's with the deployment's CA, verify-full).
  for m in ${member_ips//,/ }; do
    hba+="    - hostssl replication replicator $m/32 scram-sha-256"$'\n'
    hba+="    - hostssl all postgres $m/32 scram-sha-256"$'\n'
  done
  printf "include_dir = '%s/conf.d'\n" "$PG_CONF_DIR" >/etc/orders/patroni-base.conf
  umask 077
  cat >/etc/orders/patroni.yml <<YAML
# Written by infra/engines/postgres/remote/patroni-setup.sh (do.sh up --replicas).
scope: orders
namespace: /orders/
name: $name
log:
  level: INFO
restapi:
  listen: $ip:8008
  connect_address: $ip:8008
etcd3:
  hosts: $etcd_hosts
bootstrap:
  dcs:
    ttl: $PATRONI_TTL
    loop_wait: $PATRONI_LOOP_WAIT
    retry_timeout: $PATRONI_RETRY_TIMEOUT
    maximum_lag_on_failover: 1048576
    # One synchronous standby acknowledges every commit.
    synchronous_mode: true
    synchronous_node_count: 1
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        synchronous_commit: 'on'
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        max_connections: 200
  initdb:
    - encoding: UTF8
    - locale: C
postgresql:
  listen: $ip,127.0.0.1:5432
  connect_address: $ip:5432
  data_dir: $DATA/data
  bin_dir: $PG_BIN
  pgpass: $DATA/pgpass
  use_unix_socket: true
  # The first boot's settings (conf.d/orders.conf: durability, preloads, the JSON log, memory)
  # and the plan log's threshold; Patroni's parameters come after them.
  custom_conf: /etc/orders/patroni-base.conf
  authentication:
    superuser:
      username: postgres
      password: '$PG_SUPERUSER_PASSWORD'
      sslmode: verify-full
      sslrootcert: /etc/orders/tls/ca.crt
    replication:
      username: replicator
      password: '$PG_REPLICATION_PASSWORD'
      sslmode: verify-full
      sslrootcert: /etc/orders/tls/ca.crt
  parameters:
    unix_socket_directories: /var/run/postgresql
  pg_ident:
    - orders_owner postgres orders_owner
  pg_hba:
    - local orders orders_owner peer map=orders_owner
    - local all postgres peer
    - local all all peer
    - hostssl orders orders_service $vpc scram-sha-256
    - hostssl orders orders_loader $vpc scram-sha-256
    - host orders orders_monitor 127.0.0.1/32 scram-sha-256
    - host all postgres 127.0.0.1/32 scram-sha-256
    - host replication replicator 127.0.0.1/32 scram-sha-256
$hba
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
  nosync: false
YAML
  chown postgres:postgres /etc/orders/patroni.yml
  umask 022
  install -d -o postgres -g postgres -m 0700 "$DATA"
  install -d -o postgres -g postgres -m 2775 /var/run/postgresql
  # The plan log's threshold (setup-plan-log.sh writes it on the primary; every member reads it).
  local threshold=-1
  if [ "$plan_ms" != -1 ]; then threshold="'${plan_ms}ms'"; fi
  printf '# Written by infra/engines/postgres/remote/patroni-setup.sh (PG_PLAN_LOG_MS).\nauto_explain.log_min_duration = %s\n' \
    "$threshold" >"$PG_CONF_DIR/conf.d/orders-plan-log.conf"
  chown postgres:postgres "$PG_CONF_DIR/conf.d/orders-plan-log.conf"

  cat >/etc/systemd/system/orders-patroni.service <<UNIT
[Unit]
Description=Patroni member $name: PostgreSQL with automatic failover (do.sh up --replicas)
Wants=network-online.target orders-etcd.service
After=network-online.target orders-etcd.service

[Service]
Type=simple
User=postgres
Group=postgres
ExecStart=$PATRONI /etc/orders/patroni.yml
KillMode=process
TimeoutStopSec=60
# As Patroni's own unit: no restart. A killed member stays down until started (do.sh failover
# starts it again after the failover, and it rejoins as a standby).
Restart=no

[Install]
WantedBy=multi-user.target
UNIT
  systemctl daemon-reload
  systemctl enable orders-etcd orders-patroni >/dev/null 2>&1 || true
  systemctl start orders-etcd
  echo "patroni-setup: member $name ($ip): etcd started ($etcd_hosts), Patroni configured"
}

start() {
  systemctl start orders-patroni
  for _ in $(seq 120); do
    if patroni_cluster >/dev/null; then echo "patroni-setup: Patroni answers"; return 0; fi
    sleep 1
  done
  echo "patroni-setup: Patroni does not answer 120 s after its start" >&2
  tail -n 30 /var/log/sim-systemd/orders-patroni.service.log 2>/dev/null >&2 || journalctl -u orders-patroni -n 30 >&2 || true
  exit 1
}

# Waits for a leader, one synchronous standby and N-1 members streaming.
wait_ready() {
  local want=$1 answer
  for _ in $(seq 240); do
    answer=$(patroni_cluster || true)
    if [ -n "$answer" ] && python3 -c '
import json, sys
members = json.loads(sys.argv[1]).get("members", [])
roles = [m.get("role") for m in members]
streaming = [m for m in members if m.get("role") != "leader" and m.get("state") == "streaming"]
ok = roles.count("leader") == 1 and roles.count("sync_standby") == 1 and len(members) == int(sys.argv[2]) and len(streaming) == int(sys.argv[2]) - 1
if ok:
    for m in members:
        print("  %s %s: %s, %s" % (m["name"], m["host"], m["role"], m["state"]))
sys.exit(0 if ok else 1)' "$answer" "$want"; then
      echo "patroni-setup: the cluster is ready"
      return 0
    fi
    sleep 1
  done
  echo "patroni-setup: the cluster is not ready after 240 s: $answer" >&2
  exit 1
}

grants() {
  # shellcheck source=/dev/null
  . /etc/orders/pg-cluster.env
  runuser -u postgres -- env PGOPTIONS='-c search_path=pg_catalog,pg_temp' "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 \
    -h /var/run/postgresql -d postgres -c 'GRANT pg_read_all_stats TO orders_service'
  echo "patroni-setup: orders_service may read pg_stat_replication (pg_read_all_stats)"
}

case ${1:-} in
  grants) grants ;;
  configure) shift; [ $# = 7 ] || { echo "usage: patroni-setup.sh configure NAME IP ETCD_MEMBERS MEMBER_IPS VPC_CIDR TAG PLAN_LOG_MS" >&2; exit 2; }; configure "$@" ;;
  start) start ;;
  wait) wait_ready "${2:?usage: patroni-setup.sh wait N}" ;;
  *) echo "usage: patroni-setup.sh configure ... | start | wait N | grants" >&2; exit 2 ;;
esac
