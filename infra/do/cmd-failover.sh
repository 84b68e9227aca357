# shellcheck shell=bash
# `do.sh failover --engine postgres|mongo` (issue 43, point 5): on a replicated deployment (up
# --replicas N), kill -9 the database of the member that is primary now (found by asking every
# member: Patroni's REST API, MongoDB's `hello`; the engine's remote/member.sh), typically while a
# round runs. Meanwhile the first load droplet writes through the engine's service as a careful
# client (remote/write-probe.py: one insert after another, retried with its Idempotency-Key). It
# reports which member took over and when, when the service's writes came back, and whether every
# write the service acknowledged can be read back (the command fails if one cannot); then the
# killed member is started again and rejoins as a standby (--no-rejoin leaves it down). The
# figures go to $RESULTS_DIR/failover-<engine>-<time>.json too.
# shellcheck disable=SC2154 # TAG, STATE_DIR, RESULTS_DIR, LEADER ... come from do.sh

failover_usage() {
  cat <<USAGE
  failover --engine postgres|mongo [--no-rejoin]
                          (a deployment made with up --replicas 3) kill -9 the engine's primary
                          database process (PostgreSQL: Patroni and its postmaster; MongoDB: mongod)
                          while the first load droplet writes through its service; report which
                          member took over and when writes came back, check that every write the
                          service acknowledged reads back, then restart the killed member as a
                          standby (--no-rejoin: leave it down). Run it during a round (in another
                          terminal) to see the round's rate across the kill
USAGE
}

# Seconds from epoch A to epoch B, one decimal.
seconds_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

cmd_failover() {
  local engine='' rejoin=1 pair primary role out kill_at new='' new_at='' deadline load_host app_url kill_file
  local probe_out probe_err probe_pid summary lost remote id
  while [ $# -gt 0 ]; do
    case $1 in
      --engine) [ $# -ge 2 ] || die "failover: --engine postgres|mongo"; engine=$2; shift 2 ;;
      --engine=*) engine=${1#*=}; shift ;;
      --no-rejoin) rejoin=0; shift ;;
      *) die "failover: unknown argument $1 (--engine postgres|mongo, --no-rejoin)" ;;
    esac
  done
  case $engine in postgres | mongo) ;; *) die "failover: --engine postgres or --engine mongo" ;; esac
  pair=$engine
  refresh_droplets
  replicated_pair "$pair" || die "failover: this deployment has one $engine server: make it with infra/do/do.sh up --replicas 3"
  remote=$ENGINES_DIR/$engine/remote/member.sh
  leader
  if dry; then
    rscript "$(need_ip "$pair-db" public)" "$remote" role
    rscript "$(need_ip "$pair-db" public)" "$remote" kill
    return 0
  fi
  primary=$(replica_primary "$pair")
  [ -n "$primary" ] || die "failover: no member of $engine is primary now: infra/do/do.sh status, then up --replicas $REPLICAS"
  say "$engine: the primary is $TAG-$primary; writes through $(pair_service "$pair") from $TAG-$LEADER"

  id=$(date -u +%Y%m%dT%H%M%SZ)
  app_url=http://$(need_ip "$pair-app" private):$APP_PORT
  load_host=$(need_ip "$LEADER" public)
  kill_file=/tmp/orders-failover-$pair-$id
  probe_out=$STATE_DIR/failover-$pair-$id.out
  probe_err=$STATE_DIR/failover-$pair-$id.err
  # shellcheck disable=SC2029 # the arguments are quoted for the remote shell on purpose
  ssh "${SSH_OPTS[@]}" "root@$load_host" "python3 - $(quote "$app_url" "$kill_file" 300 10)" \
    <"$HERE/remote/write-probe.py" >"$probe_out" 2>"$probe_err" &
  probe_pid=$!
  for _ in $(seq 60); do
    grep -q '^ready' "$probe_err" 2>/dev/null && break
    kill -0 "$probe_pid" 2>/dev/null || { cat "$probe_err" >&2; die "failover: the writes through $(pair_service "$pair") did not start"; }
    sleep 0.5
  done
  grep -q '^ready' "$probe_err" || { kill "$probe_pid" 2>/dev/null; die "failover: no write through $(pair_service "$pair") was acknowledged in 30 s"; }
  sleep 2

  out=$(rscript "$(need_ip "$primary" public)" "$remote" kill) || { kill "$probe_pid" 2>/dev/null; die "failover: could not kill the database on $TAG-$primary"; }
  kill_at=${out##* at }
  rssh "$load_host" "echo $kill_at >$kill_file"
  say "kill -9 on $TAG-$primary: ${out% at *}"

  # The member that takes over (the others are asked until one is primary).
  deadline=$((SECONDS + 180))
  while [ -z "$new" ] && [ "$SECONDS" -lt "$deadline" ]; do
    for role in $(replica_members "$pair"); do
      [ "$role" != "$primary" ] || continue
      out=$(replica_role "$role")
      if [ "${out%% *}" = primary ]; then new=$role; new_at=${out#* }; break; fi
    done
    [ -n "$new" ] || sleep 1
  done
  if [ -n "$new" ]; then
    say "$TAG-$new took over (seen $(seconds_between "$kill_at" "$new_at") s after the kill)"
  else
    say "no member took over within 180 s of the kill"
  fi

  wait "$probe_pid" || true
  rssh "$load_host" "rm -f $kill_file" || true
  summary=$(tail -n 1 "$probe_out")
  printf '%s' "$summary" | jq -e . >/dev/null 2>&1 || { cat "$probe_err" >&2; die "failover: the writes' summary is missing"; }
  lost=$(printf '%s' "$summary" | jq '.lost | length')
  {
    printf '  failover of %s: %s killed, %s took over\n' "$engine" "$TAG-$primary" "${new:+$TAG-}${new:-nobody}"
    printf '%s' "$summary" | jq -r --arg kill "$kill_at" '
      ($kill | tonumber) as $k |
      def after($t): "\(($t - $k) * 10 | round / 10) s";
      "  writes failed:      \(if .first_failure_after_kill then "from \(after(.first_failure_after_kill)) after the kill (\(.acknowledged_after_kill_before_failure) acknowledged before that)" else "none (the service answered every insert)" end)",
      "  writes came back:   \(if .writes_back_at then "\(after(.writes_back_at)) after the kill (the first insert acknowledged after the last failure)" else "not within the probe" end)",
      "  attempts:           \(.attempts) (\(.failed_attempts) failed, \(.retries) retried with the same Idempotency-Key, \(.given_up) given up)",
      "  acknowledged:       \(.acknowledged) (\(.acknowledged_after_kill) first sent after the kill), read back: \(.read_back), lost: \(.lost | length)"'
  } >&3

  if [ "$rejoin" = 1 ]; then
    out=$(rscript "$(need_ip "$primary" public)" "$remote" rejoin) || die "failover: $TAG-$primary did not rejoin"
    say "$TAG-$primary rejoined: ${out%% *} $(seconds_between "$kill_at" "$(printf '%s' "$out" | awk '{ print $2 }')") s after the kill"
  fi
  mkdir -p "$RESULTS_DIR"
  printf '%s' "$summary" | jq --arg e "$engine" --arg old "$primary" --arg new "$new" --arg new_at "$new_at" \
    '. + {engine: $e, killed: $old, took_over: $new, took_over_at: ($new_at | tonumber? // null)}' >"$RESULTS_DIR/failover-$engine-$id.json"
  say "figures: $RESULTS_DIR/failover-$engine-$id.json"
  [ "$lost" = 0 ] || die "failover: $lost acknowledged write(s) cannot be read back: $(printf '%s' "$summary" | jq -c .lost)"
  [ -n "$new" ] || die "failover: no member of $engine took over"
}
