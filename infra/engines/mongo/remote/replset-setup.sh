#!/usr/bin/env bash
# Runs on each member of a replicated MongoDB deployment (do.sh up --replicas N: mongo-db,
# mongo-db-2 ...) as root, after the first boot; safe to run again. It owns the move from the
# first boot's standalone mongod to a member of the replica set rs0:
#   member INDEX        mongod with replication.replSetName rs0 and the set's keyfile (the
#                       members' authentication to each other, with authorization on). A member
#                       other than the first joins empty, as a new member must: its standalone data
#                       (only its own administrator) goes. The administrator's password becomes
#                       the set's one (do.sh made it), on member 1 by updateUser, so the file
#                       /etc/orders/mongo-admin.env works on whichever member is primary.
#   initiate HOSTS      (member 1) replSetInitiate with HOSTS (host:port,...) unless the set
#                       exists, then waits for a primary and HOSTS-1 secondaries
# The secrets arrive in /opt/orders/incoming/mongo-replica.env (root-only), and reach mongosh in
# root-only files, never on a command line.
set -euo pipefail
cd /
umask 077
script=/etc/orders/mongo-replset.js
trap 'rm -f "$script"' EXIT
# The options of a connection to this droplet's mongod (TLS: remote/tls.sh ran before).
MONGO_LOCAL_QUERY=''
# shellcheck source=/dev/null
if [ -f /etc/orders/mongo-local.env ]; then . /etc/orders/mongo-local.env; fi
local_uri() { printf 'mongodb://%s127.0.0.1:27017/%s%s' "${1:+$1@}" "${2:-}" "$MONGO_LOCAL_QUERY"; }

# as_admin PASSWORD COMMAND: one command (JSON on one line) as orders_admin on this mongod.
as_admin() {
  printf 'connect("%s").runCommand(%s).ok\n' "$(local_uri "orders_admin:$1" admin)" "$2" >"$script"
  mongosh --quiet --nodb "$script"
}
hello() { mongosh --quiet "$(local_uri)" --eval "db.runCommand({\"hello\": 1}).$1" 2>/dev/null || true; }
wait_mongod() {
  for _ in $(seq 120); do
    mongosh --quiet "$(local_uri)" --eval 'db.runCommand({"ping": 1}).ok' >/dev/null 2>&1 && return 0
    sleep 1
  done
  echo "replset-setup: mongod does not answer 120 s after its start" >&2
  exit 1
}

member() {
  local index=$1 conf
  install -m 0600 /opt/orders/incoming/mongo-replica.env /etc/orders/mongo-replica.env
  rm -rf /opt/orders/incoming
  # shellcheck source=/dev/null
  . /etc/orders/mongo-replica.env
  printf '%s\n' "$MONGO_KEYFILE" >/etc/orders/mongo-keyfile.new
  install -m 0400 -o mongodb -g mongodb /etc/orders/mongo-keyfile.new /etc/orders/mongo-keyfile
  rm -f /etc/orders/mongo-keyfile.new
  # The first boot's configuration with the set's name and the keyfile.
  conf=$(sed 's|^  authorization: enabled$|  authorization: enabled\n  keyFile: /etc/orders/mongo-keyfile|' /etc/orders/mongod.conf
    printf 'replication:\n  replSetName: rs0\n')
  if [ "$conf" = "$(cat /etc/mongod.conf)" ]; then
    echo "replset-setup: member $index is a member of rs0 already"
    return 0
  fi
  if [ "$index" = 1 ]; then
    # shellcheck source=/dev/null
    old=$(. /etc/orders/mongo-admin.env && printf '%s' "$MONGO_ADMIN_PASSWORD")
    # (A run that stopped halfway may have changed it already.)
    as_admin "$old" "{\"updateUser\": \"orders_admin\", \"pwd\": \"$MONGO_ADMIN_PASSWORD\"}" >/dev/null 2>&1 ||
      as_admin "$MONGO_ADMIN_PASSWORD" '{"connectionStatus": 1}' >/dev/null
  fi
  printf 'MONGO_ADMIN_PASSWORD=%s\n' "$MONGO_ADMIN_PASSWORD" >/etc/orders/mongo-admin.env
  printf 'connect("%s").runCommand({"connectionStatus": 1})\n' "$(local_uri "orders_admin:$MONGO_ADMIN_PASSWORD" admin)" \
    >/etc/orders/mongo-login.js
  systemctl stop mongod
  if [ "$index" != 1 ]; then
    find /var/lib/mongodb -mindepth 1 -delete
  fi
  umask 022
  printf '%s\n' "$conf" >/etc/mongod.conf
  systemctl start mongod
  wait_mongod
  echo "replset-setup: member $index restarted as a member of rs0"
}

initiate() {
  local hosts=$1 i=0 members='' h want
  # shellcheck source=/dev/null
  . /etc/orders/mongo-admin.env
  for h in ${hosts//,/ }; do
    members+=${members:+, }"{\"_id\": $i, \"host\": \"$h\"}"
    i=$((i + 1))
  done
  want=$i
  if [ "$(hello setName)" != rs0 ]; then
    as_admin "$MONGO_ADMIN_PASSWORD" "{\"replSetInitiate\": {\"_id\": \"rs0\", \"members\": [$members]}}" >/dev/null
    echo "replset-setup: rs0 initiated with $hosts"
  fi
  printf 'printjson(connect("%s").runCommand({"replSetGetStatus": 1}))\n' "$(local_uri "orders_admin:$MONGO_ADMIN_PASSWORD" admin)" >"$script"
  for _ in $(seq 240); do
    # PRIMARY once and SECONDARY want-1 times in the set's status.
    if mongosh --quiet --nodb "$script" 2>/dev/null | python3 -c '
import re, sys
states = re.findall(r"stateStr[\"'"'"']?\s*:\s*[\"'"'"'](\w+)", sys.stdin.read())
sys.exit(0 if states.count("PRIMARY") == 1 and states.count("SECONDARY") == int(sys.argv[1]) - 1 else 1)' "$want"; then
      echo "replset-setup: rs0 has a primary and $((want - 1)) secondaries"
      return 0
    fi
    sleep 1
  done
  echo "replset-setup: rs0 has no primary and $((want - 1)) secondaries after 240 s" >&2
  exit 1
}

case ${1:-} in
  member) member "${2:?usage: replset-setup.sh member INDEX}" ;;
  initiate) initiate "${2:?usage: replset-setup.sh initiate HOST:PORT,...}" ;;
  *) echo "usage: replset-setup.sh member INDEX | initiate HOSTS" >&2; exit 2 ;;
esac
