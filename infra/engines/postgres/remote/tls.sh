#!/usr/bin/env bash
# Runs on a PostgreSQL database droplet as root (do.sh up, after the first boot and on every `up`;
# safe to run again; on a replicated member from patroni-setup.sh configure): TLS on, and the
# server on its VPC address and the loopback alone (docs/security.md, "On droplets").
#   - server.key, server.crt (this droplet's, signed by the deployment's CA for its VPC address and
#     127.0.0.1) and ca.crt arrive in /opt/orders/incoming (do.sh copies them just before) and go
#     to <cluster conf>/tls/, the key 0600 and the postgres user's;
#   - conf.d/orders-network.conf: listen_addresses 127.0.0.1 and IP, ssl on with those files,
#     TLS 1.2 at least. pg_hba (the first boot's, or Patroni's) has `hostssl` lines alone for the
#     service's and the loader's roles, so a session without TLS from the VPC finds no line;
#   - the Debian cluster restarts when a file changed and it is the one in use (a Patroni member's
#     settings reach its PostgreSQL when Patroni starts it).
# usage: tls.sh IP
set -euo pipefail
ip=${1:?usage: tls.sh IP}
incoming=/opt/orders/incoming
# shellcheck source=/dev/null
. /etc/orders/pg-cluster.env
cd /
dir=$PG_CONF_DIR/tls
conf=$PG_CONF_DIR/conf.d/orders-network.conf
changed=0
install -d -m 0750 -o postgres -g postgres "$dir"
for f in server.key server.crt ca.crt; do
  [ -s "$incoming/$f" ] || { echo "tls.sh: $incoming/$f is missing" >&2; exit 1; }
  mode=0644
  if [ "$f" = server.key ]; then mode=0600; fi
  if ! cmp -s "$incoming/$f" "$dir/$f"; then
    install -m "$mode" -o postgres -g postgres "$incoming/$f" "$dir/$f"
    changed=1
  fi
  rm -f "$incoming/$f"
done
# The CA's certificate where the clients on this droplet find it too (the same path as elsewhere).
install -D -m 0644 "$dir/ca.crt" /etc/orders/tls/ca.crt
# A deployment whose first boot predates TLS has one plaintext line for the service and the loader
# (or, from a later boot, a plaintext line for the loader alone): both become hostssl.
old_line='^host orders orders_service,orders_loader \([0-9./]*\) scram-sha-256$'
if grep -q "$old_line" "$PG_CONF_DIR/pg_hba.conf"; then
  sed -i "s|$old_line|hostssl orders orders_service \1 scram-sha-256\nhostssl orders orders_loader \1 scram-sha-256|" "$PG_CONF_DIR/pg_hba.conf"
  changed=1
fi
loader_line='^host orders orders_loader \([0-9./]*\) scram-sha-256$'
if grep -q "$loader_line" "$PG_CONF_DIR/pg_hba.conf"; then
  sed -i "s|$loader_line|hostssl orders orders_loader \1 scram-sha-256|" "$PG_CONF_DIR/pg_hba.conf"
  changed=1
fi
settings="# Written by infra/engines/postgres/remote/tls.sh (do.sh up).
listen_addresses = '127.0.0.1,$ip'
ssl = on
ssl_cert_file = '$dir/server.crt'
ssl_key_file = '$dir/server.key'
ssl_min_protocol_version = 'TLSv1.2'"
if [ "$settings" != "$(cat "$conf" 2>/dev/null)" ]; then
  printf '%s\n' "$settings" >"$conf"
  chown postgres:postgres "$conf"
  changed=1
fi
if [ "$changed" = 1 ] && systemctl is-enabled --quiet "$PG_SERVICE" >/dev/null 2>&1; then
  systemctl restart "$PG_SERVICE"
  for _ in $(seq 60); do runuser -u postgres -- "$PG_BIN/pg_isready" -q -h /var/run/postgresql && break; sleep 1; done
  echo "tls.sh: PostgreSQL restarted with TLS on, listening on 127.0.0.1 and $ip"
else
  echo "tls.sh: TLS settings up to date (listening on 127.0.0.1 and $ip)"
fi
