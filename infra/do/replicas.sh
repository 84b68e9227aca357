# shellcheck shell=bash
# `do.sh up --replicas N` (issue 42): each engine's own replication on droplets, in place of one
# database droplet per engine. PAIR-db stays member 1 and PAIR-db-2..PAIR-db-N are the others, all
# made from the engine's cloud-init/db.yaml, carrying the tag TAG-PAIR-db (so its firewall), and
# turned into a replicated deployment after boot by the engine's droplets.sh (infra/engines/README.md,
# "Replicated droplets"): PostgreSQL's Patroni with etcd on every member, MongoDB's replica set rs0.
# The engine also says which ports the members open to each other and gives the services and
# orders-bench a URL naming every member, so a new primary is found without a restart. Here: the
# members' roles, the count, the secrets, the cost, the roles now (status, the primary), and what
# calls the engine's parts. `do.sh failover` (cmd-failover.sh) kills a primary.
# The deployment remembers nothing locally: the number of members is read from the droplets
# that exist (replicas_detect). The hybrid's pair (HYBRID=1) stays a single server: refused here.
# shellcheck disable=SC2154 # ENGINES_DIR, STATE_DIR, TAG, DROPLETS ... come from do.sh

REPLICAS=${REPLICAS:-1}

replicated() { [ "$REPLICAS" -gt 1 ]; }
# The pairs that are replicated: each engine's own pair (named after it, not the hybrid's), when
# its droplets.sh has a replicated deployment (<engine>_replicas_provision).
replicated_pair() { replicated && [ "$1" = "$(pair_engine "$1")" ] && declare -F "$1_replicas_provision" >/dev/null; }

# replica_extra_members PAIR: PAIR-db-2 .. PAIR-db-N, one per line (none unless replicated).
replica_extra_members() {
  local i
  replicated_pair "$1" || return 0
  for i in $(seq 2 "$REPLICAS"); do printf '%s-db-%s\n' "$1" "$i"; done
}
# replica_members PAIR: every member's role, member 1 first.
replica_members() { printf '%s-db\n' "$1"; replica_extra_members "$1"; }
# replica_index ROLE: 1 for PAIR-db, N for PAIR-db-N.
replica_index() { case $1 in *-db) printf 1 ;; *) printf '%s' "${1##*-}" ;; esac; }

# The secrets of a replicated deployment (secrets.env): each engine's (<engine>_replica_secrets).
replica_secret_names() {
  local engine
  replicated || return 0
  for engine in $(engines); do
    if declare -F "${engine}_replica_secrets" >/dev/null; then "${engine}_replica_secrets"; fi
  done
}

# replicas_flag N: `up --replicas N`.
replicas_flag() {
  case $1 in
    1 | 3 | 5) ;;
    *) die "--replicas: 1 (one server per engine), 3 or 5 (an odd number of members: a majority survives), got '$1'" ;;
  esac
  REPLICAS=$1
}

# replicas_detect [up]: the number of members of the deployment that exists (its droplets). `up`
# refuses a different --replicas (it would delete nothing, but firewall and configure the members
# it does not know of wrongly); every other command takes the deployment's number.
replicas_detect() {
  local made=1 pair n
  for pair in $(HYBRID=1 pair_names); do
    n=$(printf '%s\n' "$DROPLETS" | awk -v p="$TAG-$pair-db-" 'index($1, p) == 1 { n++ } END { print n + 1 }')
    if [ "$made" = 1 ]; then made=$n; fi
  done
  if [ "${1:-}" = up ]; then
    if [ "$made" != 1 ] && [ "$made" != "$REPLICAS" ]; then
      die "this deployment has $made database members per engine, made with --replicas $made: pass --replicas $made again, or take everything down (infra/do/do.sh down)"
    fi
  else
    REPLICAS=$made
  fi
}

replicas_check() {
  replicated || return 0
  if hybrid; then die "--replicas with HYBRID=1: the hybrid's pair has no replicated deployment yet (run either)"; fi
}

# replica_member_ports PAIR: who may reach a member's ports besides what a single server allows:
# the other members ("PORT FROM" lines, added to the firewall PAIR-db; <engine>_member_ports).
replica_member_ports() {
  replicated_pair "$1" || return 0
  "$(pair_engine "$1")_member_ports" "$1"
}

# The plan's line on what the replicas add: their droplets and price.
replicas_cost_line() {
  local extra=0 price=0 role slug line
  replicated || return 0
  for role in $(roles); do
    case $role in *-db-[0-9]*) ;; *) continue ;; esac
    slug=$(size_of "$role")
    line=$(printf '%s\n' "$SIZE_LINES" | awk -v s="$slug" '$1 == s { print $2 }')
    price=$(awk -v a="$price" -v b="${line:-0}" 'BEGIN { print a + b }')
    extra=$((extra + 1))
  done
  awk -v n="$extra" -v p="$price" -v r="$REPLICAS" 'BEGIN {
    printf "  replicas %d members per engine: the %d further database droplets add %.4f USD/hour (%.2f USD a day)\n", r, n, p, p * 24 }'
}

# The members' private addresses as host:PORT,host:PORT,...
replica_hosts() { # PAIR PORT
  local role sep='' out=''
  for role in $(replica_members "$1"); do
    out+=$sep$(need_ip "$role" private):$2
    sep=,
  done
  printf '%s' "$out"
}

# After the engines rendered their files: the service's and orders-bench's URLs name every member
# (<engine>_replica_urls PAIR rewrites them in the files it rendered), in single quotes: the load
# droplets source bench.env with bash, to which a bare & would end the assignment (systemd takes
# the quotes off as well).
replicas_render() {
  local pair
  replicated || return 0
  for pair in $(pair_names); do
    if replicated_pair "$pair"; then "$(pair_engine "$pair")_replica_urls" "$pair"; fi
  done
}

# replica_role ROLE: what the member is now: primary, standby or down (the engine's remote/member.sh).
replica_role() {
  local engine
  engine=$(engine_of "$1")
  rscript "$(need_ip "$1" public)" "$ENGINES_DIR/$engine/remote/member.sh" role 2>/dev/null | tail -n 1 || true
}
# replica_primary PAIR: the role of the member that is primary now (nothing when none is).
replica_primary() {
  local role
  for role in $(replica_members "$1"); do
    if [ "$(replica_role "$role" | awk '{ print $1 }')" = primary ]; then printf '%s' "$role"; return 0; fi
  done
}
# wait_replica_primary PAIR SECONDS: the primary's role, once there is one.
wait_replica_primary() {
  local waited=0 primary
  while :; do
    primary=$(replica_primary "$1")
    if [ -n "$primary" ]; then printf '%s' "$primary"; return 0; fi
    [ "$waited" -lt "$2" ] || return 1
    sleep 2
    waited=$((waited + 2))
  done
}

# db_primary PAIR: the role of the pair's database droplet that takes writes now, for the commands
# that run SQL on it (do.sh toggle's PG_GIN_FASTUPDATE): PAIR-db for a single server; on a replicated
# deployment the member that says it is primary (the engine's remote/member.sh), asked now, since a
# failover moves it. A dry run shows the question to PAIR-db and takes PAIR-db.
db_primary() {
  local primary
  if ! replicated_pair "$1"; then printf '%s-db' "$1"; return 0; fi
  if dry; then replica_role "$1-db" >/dev/null; printf '%s-db' "$1"; return 0; fi
  primary=$(wait_replica_primary "$1" 60) || die "no member of $1 has been primary for 60 s (a failover under way?): infra/do/do.sh status"
  printf '%s' "$primary"
}

# `status` of a replicated deployment: each member's role now (asked over SSH).
replicas_status() {
  local pair role line=''
  replicated && ! dry || return 0
  for pair in $(pair_names); do
    replicated_pair "$pair" || continue
    line=''
    for role in $(replica_members "$pair"); do
      line+=" $role $(replica_role "$role" | awk '{ print $1 }' | grep . || echo unknown),"
    done
    printf '  %s members:%s\n' "$pair" "${line%,}"
  done
}

# provision_pair_database PAIR: a replicated pair's members (<engine>_replicas_provision), or the
# engine's one server.
provision_pair_database() {
  if replicated_pair "$1"; then
    "$(pair_engine "$1")_replicas_provision" "$1"
  else
    "$(pair_engine "$1")_provision" "$1"
  fi
}
