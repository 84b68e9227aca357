#!/usr/bin/env bash
# Installed on the load droplets as /usr/local/sbin/orders-round (do.sh up). A round runs in a
# transient systemd unit of its own, so it outlives the ssh session that started it; do.sh round
# waits for it with `wait`, which can be repeated after a dropped connection.
#   orders-round start ID ARG...   start `orders-bench round ARG...` as unit orders-round-ID, output
#                                  in /opt/orders/results/ID/round.log
#   orders-round wait ID           print the round's output as it comes; exit with its status
#   orders-round run ID CMD...     (the unit's command) run CMD and record its exit status
set -euo pipefail
results=/opt/orders/results
unit() { printf 'orders-round-%s' "$1"; }
active() { systemctl is-active --quiet "$(unit "$1")"; }

case ${1:-} in
  start)
    id=$2
    shift 2
    dir=$results/$id
    # One round at a time: two would share the databases and the load droplets.
    if [ -f "$results/.running" ] && active "$(cat "$results/.running")"; then
      echo "round $(cat "$results/.running") is still running: do.sh round --attach $(cat "$results/.running")" >&2
      exit 1
    fi
    mkdir -p "$dir"
    echo "$id" >"$results/.running"
    rm -f "$dir/exit-code"
    systemd-run --unit "$(unit "$id")" --collect --quiet \
      -p WorkingDirectory=/opt/orders -p EnvironmentFile=/etc/orders/bench.env \
      -p EnvironmentFile=-/etc/orders/k6-remote-write.env -p LimitNOFILE=1048576 \
      -p "StandardOutput=append:$dir/round.log" -p "StandardError=append:$dir/round.log" \
      /usr/local/sbin/orders-round run "$id" orders-bench round "$@"
    echo "round $id started on $(hostname) as unit $(unit "$id")"
    ;;
  run)
    id=$2
    shift 2
    rc=0
    "$@" || rc=$?
    echo "$rc" >"$results/$id/exit-code"
    rm -f "$results/.running"
    exit "$rc"
    ;;
  wait)
    id=$2
    dir=$results/$id
    [ -d "$dir" ] || { echo "no round $id on $(hostname)" >&2; exit 1; }
    offset=0
    while :; do
      done_=0
      if [ -f "$dir/exit-code" ] || ! active "$id"; then done_=1; fi
      size=$(stat -c %s "$dir/round.log" 2>/dev/null || echo 0)
      if [ "$size" -gt "$offset" ]; then
        tail -c +$((offset + 1)) "$dir/round.log" | head -c $((size - offset))
        offset=$size
      fi
      if [ "$done_" = 1 ]; then
        if [ -f "$dir/exit-code" ]; then exit "$(cat "$dir/exit-code")"; fi
        echo "the round's unit $(unit "$id") ended without an exit status" >&2
        exit 1
      fi
      sleep 2
    done
    ;;
  *)
    echo "usage: orders-round start ID ARG... | wait ID | run ID CMD..." >&2
    exit 2
    ;;
esac
