# shellcheck shell=bash
# `do.sh seed` and `do.sh round`: the benchmark itself runs on the droplets.

prefix() {
  local line
  while IFS= read -r line; do printf '%s%s\n' "$1" "$line"; done
}

# Wait for background jobs; fail with the names of the ones that failed.
wait_all() { # "PID NAME"...
  local job failed=''
  for job in "$@"; do
    wait "${job%% *}" || failed+=" ${job#* }"
  done
  [ -z "$failed" ] || { say "failed on:$failed"; return 1; }
}

# Both databases are loaded at the same moment, each from its app droplet (the only droplet its
# firewall admits). The deterministic generator writes the same orders into both. What the
# seeder writes to its working directory (the dataset manifest) is then copied to the load
# droplets, where k6 and orders-bench round read it.
cmd_seed() {
  local orders=1000000 extra=() jobs=() pair role target service host load
  while [ $# -gt 0 ]; do
    case $1 in
      --orders) orders=$2; shift 2 ;;
      *) extra+=("$1"); shift ;;
    esac
  done
  refresh_droplets
  for pair in postgres-app:pg:orders-pg mongo-app:mongo:orders-mongo; do
    IFS=: read -r role target service <<<"$pair"
    host=$(need_ip "$role" public)
    (set -o pipefail; rssh "$host" "set -a && . /etc/orders/$service.env && set +a && rm -rf /var/lib/orders/seed && mkdir -p /var/lib/orders/seed && cd /var/lib/orders/seed && orders-bench seed --target $target --orders $(quote "$orders" ${extra[@]+"${extra[@]}"})" 2>&1 | prefix "[$role] ") &
    jobs+=("$! $role")
  done
  wait_all "${jobs[@]}"

  say "dataset manifest -> load droplets"
  rm -rf "$STATE_DIR/seed"
  mkdir -p "$STATE_DIR/seed"
  for role in postgres-app mongo-app; do
    rscp -r "root@$(need_ip "$role" public):/var/lib/orders/seed" "$STATE_DIR/seed/$role"
  done
  for load in $(load_roles); do
    host=$(need_ip "$load" public)
    rssh "$host" 'rm -rf /opt/orders/seed && mkdir -p /opt/orders/seed'
    rscp -r "$STATE_DIR/seed/postgres-app" "$STATE_DIR/seed/mongo-app" "root@$host:/opt/orders/seed/"
    rssh "$host" 'cp -a /opt/orders/seed/postgres-app/. /opt/orders/ && cp -a /opt/orders/seed/mongo-app/. /opt/orders/'
  done
}

# k6 execution segment boundaries: 0, i/n, 1.
frac() { if [ "$1" = 0 ]; then echo 0; elif [ "$1" = "$2" ]; then echo 1; else echo "$1/$2"; fi; }

# One round from every load droplet at the same moment. With N load droplets each k6 runs the
# execution segment i/N:(i+1)/N of the same test, so together they offer the full rate.
cmd_round() {
  local extra=() jobs=() loads pg mongo id n i seq role host env cmd rc=0
  while [ $# -gt 0 ]; do
    case $1 in
      --mix) MIX=$2; shift 2 ;;
      --start-rate) START_RATE=$2; shift 2 ;;
      --step) STEP=$2; shift 2 ;;
      --max-rate) MAX_RATE=$2; shift 2 ;;
      --step-duration) STEP_DURATION=$2; shift 2 ;;
      *) extra+=("$1"); shift ;;
    esac
  done
  refresh_droplets
  pg=$(need_ip postgres-app private)
  mongo=$(need_ip mongo-app private)
  loads=$(load_roles)
  n=$(printf '%s\n' "$loads" | grep -c .) || die "no load droplets (run: infra/do/do.sh up)"
  id=$(date -u +%Y%m%dT%H%M%SZ)-$MIX
  seq=0
  for i in $(seq 1 "$n"); do seq+=",$(frac "$i" "$n")"; done

  say "round $id: mix $MIX, $START_RATE..$MAX_RATE req/s in steps of $STEP every $STEP_DURATION, from $n load droplet(s)"
  i=0
  for role in $loads; do
    host=$(need_ip "$role" public)
    env=''
    if [ "$n" -gt 1 ]; then
      env="K6_EXECUTION_SEGMENT=$(frac "$i" "$n"):$(frac $((i + 1)) "$n") K6_EXECUTION_SEGMENT_SEQUENCE=$seq "
    fi
    cmd="ulimit -n 1048576 && cd /opt/orders && ${env}orders-bench round $(quote \
      --pg "http://$pg:$APP_PORT" --mongo "http://$mongo:$APP_PORT" --mix "$MIX" \
      --start-rate "$START_RATE" --step "$STEP" --max-rate "$MAX_RATE" \
      --step-duration "$STEP_DURATION" --out "results/$id" ${extra[@]+"${extra[@]}"})"
    (set -o pipefail; rssh "$host" "$cmd" 2>&1 | prefix "[$role] ") &
    jobs+=("$! $role")
    i=$((i + 1))
  done
  wait_all "${jobs[@]}" || rc=1

  if ! dry; then mkdir -p "$RESULTS_DIR/$id"; fi
  for role in $loads; do
    rscp -r "root@$(need_ip "$role" public):/opt/orders/results/$id" "$RESULTS_DIR/$id/$role" || rc=1
  done
  say "results: $RESULTS_DIR/$id/"
  return "$rc"
}
