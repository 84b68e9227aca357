#!/usr/bin/env bash
# Runs on a member of the replica set rs0 (do.sh up --replicas N; remote/replset-setup.sh) as
# root, for do.sh failover and up:
#   role     prints "primary", "standby" or "down" and the time (epoch seconds), from `hello` on this
#            member's mongod (which needs no login)
#   kill     kill -9 of this member's mongod (its unit does not restart it). Prints "killed PID at EPOCH".
#   rejoin   starts mongod again and waits until it is a secondary (it rolls back what it wrote
#            that the majority never acknowledged); prints "standby at EPOCH"
set -euo pipefail
cd /
now() { date +%s.%N | cut -c1-14; }
# The options of a connection to this member's mongod (TLS: remote/tls.sh).
MONGO_LOCAL_QUERY=''
# shellcheck source=/dev/null
if [ -f /etc/orders/mongo-local.env ]; then . /etc/orders/mongo-local.env; fi
hello() { mongosh --quiet "mongodb://127.0.0.1:27017/$MONGO_LOCAL_QUERY" --eval "db.runCommand({\"hello\": 1}).$1" 2>/dev/null || true; }

role() {
  if [ "$(hello isWritablePrimary)" = true ]; then
    echo "primary $(now)"
  elif [ "$(hello secondary)" = true ]; then
    echo "standby $(now)"
  else
    echo "down $(now)"
  fi
}

kill_member() {
  local pid at
  pid=$(systemctl show -p MainPID --value mongod)
  if [ -z "$pid" ] || [ "$pid" = 0 ]; then echo "member.sh: mongod does not run here" >&2; exit 1; fi
  at=$(now)
  kill -9 "$pid"
  echo "killed $pid at $at"
}

rejoin() {
  systemctl start mongod
  for _ in $(seq 180); do
    if [ "$(hello secondary)" = true ]; then echo "standby $(now) (SECONDARY)"; return 0; fi
    sleep 1
  done
  echo "member.sh: mongod is not a secondary 180 s after its start" >&2
  exit 1
}

case ${1:-} in
  role) role ;;
  kill) kill_member ;;
  rejoin) rejoin ;;
  *) echo "usage: member.sh role|kill|rejoin" >&2; exit 2 ;;
esac
