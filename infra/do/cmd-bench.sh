# shellcheck shell=bash
# `do.sh seed` and `do.sh round`: the benchmark runs on the load droplets. The first load droplet
# leads: the cloud firewalls admit it (and the other load droplets) to every database, so it
# loads them all at the same moment with one `orders-bench seed --target all` (one manifest listing
# each), and its `orders-bench round --reseed` reloads them before every repeat and counts their
# rows and WAL for the fairness gate. With HYBRID=1 the hybrid's database is one of them: bench.env
# names it (ORDERS_BENCH_DATABASE, orders-bench's --database pgh=URL, kept off the command line for
# its password) and the round drives its service as the third target (--target pgh=URL). With
# several load droplets the others run `orders-bench agent`, and the leader's round runs every
# repeat in k6 execution segments, one per droplet, started together and merged into one result.

prefix() {
  local line
  while IFS= read -r line; do printf '%s%s\n' "$1" "$line"; done
}

leader() {
  LOADS=$(load_roles)
  [ -n "$LOADS" ] || die "no load droplets (run: infra/do/do.sh up)"
  LEADER=$(printf '%s\n' "$LOADS" | head -n 1)
}

cmd_seed() {
  refresh_droplets
  check_hybrid_setting
  leader
  say "loading every database from $TAG-$LEADER: orders-bench seed --target all $*"
  # The passwords reach orders-bench through its environment (bench.env), not its command line.
  rssh "$(need_ip "$LEADER" public)" "cd /opt/orders && set -a && . /etc/orders/bench.env && set +a && orders-bench seed --target all --manifest /opt/orders/dataset.json $(quote "$@")" 2>&1 |
    prefix "[$LEADER] "
}

# Waits for round ID on the leader (printing its output), copies its folder back and writes the
# report here. The round itself runs in a unit of its own on the leader: a dropped connection ends
# only this wait, and `do.sh round --attach ID` takes it up again.
attach() {
  local id=$1 host rc=0
  host=$(need_ip "$LEADER" public)
  say "round $id on $TAG-$LEADER (if this connection drops: infra/do/do.sh round --attach $id)"
  rssh "$host" "orders-round wait $(quote "$id")" || rc=$?
  if [ "$rc" = 255 ]; then die "lost the connection; the round goes on: infra/do/do.sh round --attach $id"; fi
  if ! dry; then mkdir -p "$RESULTS_DIR"; rm -rf "${RESULTS_DIR:?}/$id"; fi
  rscp -q -r "root@$host:/opt/orders/results/$id" "$RESULTS_DIR/" || die "could not copy the round's folder back"
  if [ "$rc" != 0 ]; then
    die "the round failed (exit $rc); its output is in $RESULTS_DIR/$id/round.log"
  fi
  # The report, written here again when this machine runs the binaries (else the droplet's stays).
  if ! dry && "$BIN_DIR/orders-bench" --version >/dev/null 2>&1; then
    "$BIN_DIR/orders-bench" report "$RESULTS_DIR/$id" >/dev/null || say "note: the local report failed; the droplet's report.md is in the folder"
  fi
  say "results: $RESULTS_DIR/$id/ (report.md, report.html, result.json; round.log is the round's output)"
}

cmd_round() {
  local extra=() attach_id='' reseed=(--reseed) services=() targets=() pair target url engine line id role followers='' args
  while [ $# -gt 0 ]; do
    case $1 in
      --attach) attach_id=$2; shift 2 ;;
      --no-reseed) reseed=(); shift ;;
      --mix) MIX=$2; shift 2 ;;
      --start-rate) START_RATE=$2; shift 2 ;;
      --step) STEP=$2; shift 2 ;;
      --max-rate) MAX_RATE=$2; shift 2 ;;
      --step-duration) STEP_DURATION=$2; shift 2 ;;
      *) extra+=("$1"); shift ;;
    esac
  done
  refresh_droplets
  check_hybrid_setting
  leader
  if [ -n "$attach_id" ]; then attach "$attach_id"; return; fi
  # The services by their private addresses: orders-bench round takes orders-pg's and
  # orders-mongo's as --pg-url and --mongo-url, every other one (the hybrid's) as a further target,
  # --target NAME=URL (its database comes from bench.env: ORDERS_BENCH_DATABASE).
  for pair in $(pair_names); do
    target=$(pair_target "$pair")
    url=http://$(need_ip "$pair-app" private):$APP_PORT
    case $target in
      pg | mongo) services+=("--$target-url" "$url") ;;
      *) targets+=(--target "$target=$url") ;;
    esac
  done
  for role in $LOADS; do
    if [ "$role" != "$LEADER" ]; then followers+=${followers:+,}http://$(need_ip "$role" private):$AGENT_PORT; fi
  done
  id=$(date -u +%Y%m%dT%H%M%SZ)-$MIX
  # Every k6 of the round, the leader's and the agents', pushes its figures to the monitor's
  # Prometheus, from the environment of its unit (/etc/orders/k6-remote-write.env, with the
  # droplet's name as a tag): one setting for the leader's k6 and the agents' alike, which
  # `round --prometheus-rw` (the leader's environment only) would not reach.
  args=(--mix "$MIX" --start-rate "$START_RATE" --step "$STEP" --max-rate "$MAX_RATE" --step-duration "$STEP_DURATION"
    ${services[@]+"${services[@]}"} ${reseed[@]+"${reseed[@]}"}
    --manifest /opt/orders/dataset.json --generator k6 --script /opt/orders/loadtest/k6/orders.js --out "/opt/orders/results/$id")
  if [ -n "$followers" ]; then args+=(--followers "$followers"); fi
  args+=(${targets[@]+"${targets[@]}"})
  # What an engine adds to every round (<engine>_round_args, given the other arguments passed on;
  # PostgreSQL's plan log threshold), one argument per line.
  for engine in $(engines); do
    if declare -F "${engine}_round_args" >/dev/null; then
      while IFS= read -r line; do args+=("$line"); done < <("${engine}_round_args" ${extra[@]+"${extra[@]}"})
    fi
  done
  say "round $id: mix $MIX, $START_RATE..$MAX_RATE req/s per target in steps of $STEP every $STEP_DURATION, from $(printf '%s\n' "$LOADS" | grep -c .) load droplet(s)"
  rssh "$(need_ip "$LEADER" public)" "orders-round start $(quote "$id" "${args[@]}" ${extra[@]+"${extra[@]}"})"
  attach "$id"
}
