#!/usr/bin/env bash
# Runs on a member of a replicated PostgreSQL deployment (Patroni; remote/patroni-setup.sh) as
# root, for do.sh failover and up:
#   role     prints "primary", "standby" or "down" and the time (epoch seconds), from Patroni's REST
#            API on this member (a member whose Patroni does not answer is down)
#   kill     kill -9 of this member's database: Patroni and its postmaster at once (a postmaster
#            killed alone is started again by its Patroni, which still holds the leader key: no
#            failover). Prints "killed PIDS at EPOCH".
#   rejoin   starts Patroni again and waits until the member streams as a standby (Patroni runs
#            pg_rewind when its timeline diverged); prints "standby at EPOCH" and its state
set -euo pipefail
cd /
now() { date +%s.%N | cut -c1-14; }
# Patroni's REST API listens on this member's VPC address alone (patroni-setup.sh configure).
patroni() { curl -fsS --max-time 2 "http://$(cat /etc/orders/member-ip 2>/dev/null || echo 127.0.0.1):8008/patroni" 2>/dev/null; }
field() { python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get(sys.argv[2], ""))' "$1" "$2"; }

role() {
  local answer
  answer=$(patroni || true)
  if [ -z "$answer" ]; then echo "down $(now)"; return; fi
  case $(field "$answer" state) in running | streaming) ;; *) echo "down $(now)"; return ;; esac
  case $(field "$answer" role) in
    primary | master) echo "primary $(now)" ;;
    *) echo "standby $(now)" ;;
  esac
}

kill_member() {
  local pids='' pid
  pid=$(systemctl show -p MainPID --value orders-patroni)
  if [ -n "$pid" ] && [ "$pid" != 0 ]; then pids+=" $pid"; fi
  pid=$(head -n 1 /var/lib/postgresql/patroni/data/postmaster.pid 2>/dev/null || true)
  if [ -n "$pid" ]; then pids+=" $pid"; fi
  [ -n "$pids" ] || { echo "member.sh: neither Patroni nor PostgreSQL runs here" >&2; exit 1; }
  local at
  at=$(now)
  # shellcheck disable=SC2086 # one word per pid
  kill -9 $pids
  echo "killed${pids} at $at"
}

rejoin() {
  local answer
  systemctl start orders-patroni
  for _ in $(seq 180); do
    answer=$(patroni || true)
    if [ -n "$answer" ] && [ "$(field "$answer" state)" = streaming ] || { [ -n "$answer" ] && [ "$(field "$answer" role)" = replica ] && [ "$(field "$answer" state)" = running ]; }; then
      echo "standby $(now) ($(field "$answer" state), timeline $(field "$answer" timeline))"
      return 0
    fi
    sleep 1
  done
  echo "member.sh: not a streaming standby 180 s after Patroni started: ${answer:-no answer}" >&2
  exit 1
}

case ${1:-} in
  role) role ;;
  kill) kill_member ;;
  rejoin) rejoin ;;
  *) echo "usage: member.sh role|kill|rejoin" >&2; exit 2 ;;
esac
