#!/usr/bin/env bash
# Runs on a MongoDB database droplet (mongo-db, and with --replicas every member) as root (do.sh
# up, after the first boot and on every `up`; safe to run again): TLS required, and mongod on its
# VPC address and the loopback alone (docs/security.md, "On droplets").
#   - server.key, server.crt (this droplet's, signed by the deployment's CA for its VPC address and
#     127.0.0.1) and ca.crt arrive in /opt/orders/incoming (do.sh copies them just before):
#     /etc/orders/tls/server.pem (key and certificate, the mongodb user's, 0600) and ca.crt;
#   - the net section of /etc/orders/mongod.conf (the first boot's settings, which a replica set
#     member's configuration is made from) and of /etc/mongod.conf: bindIp 127.0.0.1 and IP,
#     tls.mode requireTLS (no plaintext, the loopback's neither: this droplet's own mongosh and
#     exporter connect with tls=true), clients authenticate by password (no client certificate
#     asked for), members present this certificate to each other;
#   - /etc/orders/mongo-local.env: the options this droplet's scripts add to their connection
#     strings to 127.0.0.1 (MONGO_LOCAL_QUERY), and mongo-login.js made again with them;
#   - mongod restarts when something changed.
# usage: tls.sh IP
set -euo pipefail
ip=${1:?usage: tls.sh IP}
incoming=/opt/orders/incoming
cd /
dir=/etc/orders/tls
changed=0
install -d -m 0755 "$dir"
for f in server.key server.crt ca.crt; do
  [ -s "$incoming/$f" ] || { echo "tls.sh: $incoming/$f is missing" >&2; exit 1; }
done
if ! cmp -s "$incoming/ca.crt" "$dir/ca.crt"; then
  install -m 0644 "$incoming/ca.crt" "$dir/ca.crt"
  changed=1
fi
umask 077
cat "$incoming/server.crt" "$incoming/server.key" >"$dir/server.pem.new"
rm -f "$incoming/server.key" "$incoming/server.crt" "$incoming/ca.crt"
if cmp -s "$dir/server.pem.new" "$dir/server.pem"; then
  rm -f "$dir/server.pem.new"
else
  install -m 0600 -o mongodb -g mongodb "$dir/server.pem.new" "$dir/server.pem"
  rm -f "$dir/server.pem.new"
  changed=1
fi
# The net section, in place of the one in FILE (up to the next top-level key).
net="net:
  port: 27017
  bindIp: 127.0.0.1,$ip
  tls:
    mode: requireTLS
    certificateKeyFile: $dir/server.pem
    CAFile: $dir/ca.crt
    allowConnectionsWithoutCertificates: true"
with_net() {
  NET=$net awk '
    /^net:/ { print ENVIRON["NET"]; skip = 1; next }
    skip && /^[^ #]/ { skip = 0 }
    !skip { print }' "$1"
}
for f in /etc/orders/mongod.conf /etc/mongod.conf; do
  new=$(with_net "$f")
  if [ "$new" != "$(cat "$f")" ]; then
    printf '%s\n' "$new" >"$f.new"
    chmod 0644 "$f.new"
    mv "$f.new" "$f"
    changed=1
  fi
done
printf "MONGO_LOCAL_QUERY='?tls=true&tlsCAFile=%s'\n" "$dir/ca.crt" >/etc/orders/mongo-local.env
chmod 0644 /etc/orders/mongo-local.env
# shellcheck source=/dev/null
. /etc/orders/mongo-admin.env
printf 'connect("mongodb://orders_admin:%s@127.0.0.1:27017/admin?tls=true&tlsCAFile=%s").runCommand({"connectionStatus": 1})\n' \
  "$MONGO_ADMIN_PASSWORD" "$dir/ca.crt" >/etc/orders/mongo-login.js
if [ "$changed" = 1 ]; then
  systemctl restart mongod
  for _ in $(seq 120); do
    mongosh --quiet "mongodb://127.0.0.1:27017/?tls=true&tlsCAFile=$dir/ca.crt" --eval 'db.runCommand({"ping": 1}).ok' >/dev/null 2>&1 && break
    sleep 1
  done
  echo "tls.sh: mongod restarted with TLS required, listening on 127.0.0.1 and $ip"
else
  echo "tls.sh: TLS settings up to date (listening on 127.0.0.1 and $ip)"
fi
