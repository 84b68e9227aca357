#!/usr/bin/env bash
# Runs on the mongo-db droplet as root (do.sh up, after the first boot and on every `up`; safe to
# run again): the roles and users, one per job (docs/security.md, "On droplets"), made by the
# administrator orders_admin (whose password the first boot made on this droplet):
#   orders_service  orders-mongo (role ordersService): find, insert, update on orders.orders;
#                   createIndex there (the service applies migrations/mongo at start-up, a no-op
#                   once the indexes exist); $collStats for its /diagnostics, and serverStatus,
#                   getCmdLineOpts, getDefaultRWConcern, getParameter (the server's tlsMode). No
#                   remove, no drop, no other collection.
#   orders_loader   orders-bench on the load droplets (role ordersLoader): seeding orders.orders
#                   (drop, insert, build the indexes), counting it, and the figures a round reads:
#                   serverStatus, and fsync for the checkpoint after a load.
#   orders_monitor  Percona's mongodb_exporter on this droplet (MongoDB's built-in clusterMonitor:
#                   the server's statistics, getDiagnosticData; no write anywhere).
# Neither of the first two reads another database. The passwords arrive in /opt/orders/incoming/mongo-db.env (do.sh
# copies it just before), are kept in /etc/orders/mongo-db.env (0600) and reach mongosh in a file
# readable by root only, removed afterwards; never on a command line.
set -euo pipefail
incoming=/opt/orders/incoming
install -m 0600 "$incoming/mongo-db.env" /etc/orders/mongo-db.env
rm -rf "$incoming"
# shellcheck source=/dev/null
. /etc/orders/mongo-admin.env
# shellcheck source=/dev/null
. /etc/orders/mongo-db.env
# The options of a connection to this droplet's mongod (TLS, once remote/tls.sh turned it on).
MONGO_LOCAL_QUERY=''
# shellcheck source=/dev/null
if [ -f /etc/orders/mongo-local.env ]; then . /etc/orders/mongo-local.env; fi
umask 077
script=/etc/orders/mongo-setup.js
trap 'rm -f "$script"' EXIT

# as_admin COMMAND...: run commands (JSON, each written on one line) as orders_admin, in order;
# the exit status is mongosh's (the first refused command stops it).
as_admin() {
  local command
  : >"$script"
  for command in "$@"; do
    printf 'connect("mongodb://orders_admin:%s@127.0.0.1:27017/admin%s").runCommand(%s)\n' "$MONGO_ADMIN_PASSWORD" "$MONGO_LOCAL_QUERY" "${command//$'\n'/ }" >>"$script"
  done
  mongosh --quiet --nodb "$script" >/dev/null
}

orders='{"db": "orders", "collection": "orders"}'
# KIND NAME FIELDS, one object per line.
objects="Role|ordersService|\"roles\": [], \"privileges\": [
  {\"resource\": $orders, \"actions\": [\"find\", \"insert\", \"update\", \"createIndex\", \"collStats\"]},
  {\"resource\": {\"cluster\": true}, \"actions\": [\"serverStatus\", \"getCmdLineOpts\", \"getDefaultRWConcern\", \"getParameter\"]}]
Role|ordersLoader|\"roles\": [], \"privileges\": [
  {\"resource\": $orders, \"actions\": [\"find\", \"insert\", \"update\", \"remove\", \"createCollection\", \"dropCollection\", \"createIndex\", \"dropIndex\", \"listIndexes\", \"collStats\"]},
  {\"resource\": {\"cluster\": true}, \"actions\": [\"serverStatus\", \"fsync\"]}]
User|orders_service|\"pwd\": \"$MONGO_SERVICE_PASSWORD\", \"roles\": [{\"role\": \"ordersService\", \"db\": \"admin\"}]
User|orders_loader|\"pwd\": \"$MONGO_LOADER_PASSWORD\", \"roles\": [{\"role\": \"ordersLoader\", \"db\": \"admin\"}]
User|orders_monitor|\"pwd\": \"$MONGO_MONITOR_PASSWORD\", \"roles\": [{\"role\": \"clusterMonitor\", \"db\": \"admin\"}]"
objects=${objects//$'\n  '/ }  # each object on one line
updates=()
while IFS='|' read -r kind name fields; do updates+=("{\"update$kind\": \"$name\", $fields}"); done <<<"$objects"
# On a later `up` all of them exist: one call brings them up to date. Otherwise each is created, or
# updated when it exists.
if ! as_admin "${updates[@]}" 2>/dev/null; then
  while IFS='|' read -r kind name fields; do
    as_admin "{\"create$kind\": \"$name\", $fields}" 2>/dev/null || as_admin "{\"update$kind\": \"$name\", $fields}"
  done <<<"$objects"
fi
echo "mongod: users orders_service (role ordersService), orders_loader (role ordersLoader) and orders_monitor (role clusterMonitor) up to date"
