# shellcheck shell=bash
# `do.sh up --replicas N` (issue 42): each engine's own replication on droplets, in place of one
# database droplet per engine. PAIR-db stays member 1 and PAIR-db-2..PAIR-db-N are the others, all
# made from the engine's cloud-init/db.yaml, carrying the tag TAG-PAIR-db (so its firewall), and
# turned into a replicated deployment after boot by the engine's remote scripts:
#   postgres  Patroni with etcd on every member (a three-member etcd cluster: Patroni's store
#             survives the loss of any one droplet), synchronous_mode on, one synchronous standby
#             (remote/patroni-setup.sh; Patroni 4.1.5 and etcd 3.4 as the local replicated stack);
#   mongo     the replica set rs0 with a shared keyfile (remote/replset-setup.sh).
# The services and orders-bench get a multi-host URL with target_session_attrs=read-write
# (orders-pg) and a replica-set URI (orders-mongo), as the local replicated stack gives them, so a
# new primary is found without a restart. `do.sh failover` (cmd-failover.sh) kills a primary.
# The deployment remembers nothing locally: the number of members is read from the droplets
# that exist (replicas_detect). The hybrid's pair (HYBRID=1) stays a single server: refused here.
# The engines' parts (ports between members, the URLs) belong in their droplets.sh; they are
# here until that file takes them.
# shellcheck disable=SC2154 # ENGINES_DIR, STATE_DIR, TAG, DROPLETS ... come from do.sh

REPLICAS=${REPLICAS:-1}
# Patroni's failover settings (its defaults): the leader key lives TTL seconds, Patroni loops every
# LOOP_WAIT seconds; a dead primary's key expires after at most TTL, then its synchronous standby
# takes over. MongoDB's electionTimeoutMillis stays at its default (10 s).
PATRONI_TTL=${PATRONI_TTL:-30}
PATRONI_LOOP_WAIT=${PATRONI_LOOP_WAIT:-10}
PATRONI_RETRY_TIMEOUT=${PATRONI_RETRY_TIMEOUT:-10}

replicated() { [ "$REPLICAS" -gt 1 ]; }
# The pairs that are replicated: the engines' own pairs (not the hybrid's).
replicated_pair() { replicated && case $1 in postgres | mongo) true ;; *) false ;; esac; }

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

# The secrets of a replicated deployment (secrets.env): PostgreSQL's superuser and replication
# passwords (Patroni's, the same on every member), MongoDB's keyfile (the members' authentication
# to each other) and its administrator's password, one for the set since any member may become
# the primary (a single mongo-db makes its own on the droplet and keeps it there).
replica_secret_names() {
  replicated || return 0
  printf '%s\n' PG_SUPERUSER_PASSWORD PG_REPLICATION_PASSWORD MONGO_KEYFILE MONGO_ADMIN_PASSWORD
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
  local made
  made=$(printf '%s\n' "$DROPLETS" | awk -v p="$TAG-postgres-db-" 'index($1, p) == 1 { n++ } END { print n + 1 }')
  if [ "$made" = 1 ]; then
    made=$(printf '%s\n' "$DROPLETS" | awk -v p="$TAG-mongo-db-" 'index($1, p) == 1 { n++ } END { print n + 1 }')
  fi
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
# the other members ("PORT FROM" lines, added to the firewall PAIR-db).
replica_member_ports() {
  replicated_pair "$1" || return 0
  case $(pair_engine "$1") in
    # PostgreSQL's streaming replication and pg_rewind, Patroni's REST API, etcd's clients and peers.
    postgres) printf '%s\n' "5432 $1-db" "8008 $1-db" "2379 $1-db" "2380 $1-db" ;;
    mongo) printf '%s\n' "27017 $1-db" ;;
  esac
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
# (PostgreSQL: target_session_attrs=read-write; MongoDB: replicaSet=rs0), in single quotes: the
# load droplets source bench.env with bash, to which a bare & would end the assignment (systemd
# takes the quotes off as well).
replicas_render() {
  local pair ip hosts f
  replicated || return 0
  for pair in $(pair_names); do
    replicated_pair "$pair" || continue
    ip=$(need_ip "$pair-db" private)
    case $(pair_engine "$pair") in
      postgres)
        hosts=$(replica_hosts "$pair" 5432)
        for f in "$STATE_DIR/env/$(pair_service "$pair").env" "$STATE_DIR/env/bench.env"; do
          sed -i "s|^\([A-Z_]*\)=\(.*\)@$ip:5432/orders\$|\1='\2@$hosts/orders?target_session_attrs=read-write'|" "$f"
        done
        ;;
      mongo)
        hosts=$(replica_hosts "$pair" 27017)
        for f in "$STATE_DIR/env/$(pair_service "$pair").env" "$STATE_DIR/env/bench.env"; do
          sed -i "s|^\([A-Z_]*\)=\(.*\)@$ip:27017/?authSource=admin\$|\1='\2@$hosts/?authSource=admin\&replicaSet=rs0'|" "$f"
        done
        ;;
    esac
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

# --- up: the members after their first boot --------------------------------------------------------

# PostgreSQL: Patroni and etcd on every member; member 1 bootstraps the cluster when there is
# none, the others join it as standbys (one synchronous). Then the roles and migrations on the
# primary, the plan log's threshold on every member, the exporter on member 1.
replicas_provision_postgres() {
  local pair=$1 role host etcd='' sep='' members='' primary dir remote=$ENGINES_DIR/postgres/remote f
  for role in $(replica_members "$pair"); do
    etcd+=$sep"pg$(replica_index "$role")=$(need_ip "$role" private)"
    members+=$sep$(need_ip "$role" private)
    sep=,
  done
  f=$STATE_DIR/env/patroni.env
  (
    umask 077
    printf 'PG_SUPERUSER_PASSWORD=%s\nPG_REPLICATION_PASSWORD=%s\n' "$PG_SUPERUSER_PASSWORD" "$PG_REPLICATION_PASSWORD"
    printf 'PATRONI_TTL=%s\nPATRONI_LOOP_WAIT=%s\nPATRONI_RETRY_TIMEOUT=%s\n' "$PATRONI_TTL" "$PATRONI_LOOP_WAIT" "$PATRONI_RETRY_TIMEOUT"
  ) >"$f"
  # Configure every member (etcd starts: it needs a majority of its members to answer), then
  # start Patroni on member 1 and wait for its leader, then on the others.
  for role in $(replica_members "$pair"); do
    host=$(need_ip "$role" public)
    send "$host" "$f"
    rscript "$host" "$remote/patroni-setup.sh" configure "pg$(replica_index "$role")" "$(need_ip "$role" private)" \
      "$etcd" "$members" "$VPC_CIDR" "$TAG" "$PG_PLAN_LOG_MS"
  done
  for role in $(replica_members "$pair"); do
    rscript "$(need_ip "$role" public)" "$remote/patroni-setup.sh" start
    if [ "$role" = "$pair-db" ]; then
      dry || wait_replica_primary "$pair" 180 >/dev/null || die "no PostgreSQL primary 180 s after Patroni started on $TAG-$pair-db"
    fi
  done
  rscript "$(need_ip "$pair-db" public)" "$remote/patroni-setup.sh" wait "$REPLICAS"
  primary=$pair-db
  if ! dry; then primary=$(wait_replica_primary "$pair" 60) || die "no PostgreSQL primary among the members"; fi
  say "PostgreSQL: Patroni's leader is $TAG-$primary; roles and migrations there"
  dir=$(db_env_dir "$pair")
  host=$(need_ip "$primary" public)
  send "$host" "$dir/postgres-db.env" "$STATE_DIR/migrations.tar"
  rscript "$host" "$remote/setup.sh" jsonb
  rscript "$host" "$remote/patroni-setup.sh" grants
  rscript "$host" "$remote/setup-plan-log.sh" "$PG_PLAN_LOG_MS"
  # The other members keep a copy of the roles' passwords, as member 1 always did.
  for role in $(replica_members "$pair"); do
    [ "$role" != "$primary" ] || continue
    send "$(need_ip "$role" public)" "$dir/postgres-db.env"
    rssh "$(need_ip "$role" public)" 'install -m 0600 /opt/orders/incoming/postgres-db.env /etc/orders/postgres-db.env && rm -rf /opt/orders/incoming'
  done
  install_on "$(need_ip "$pair-db" public)" prometheus-postgres-exporter "http://$(need_ip "$pair-db" private):$PG_EXPORTER_PORT/metrics" \
    "$dir/postgres-exporter.env" /etc/orders/postgres-exporter.env 0600 \
    "$REPO/infra/monitoring/exporters/postgres-queries.yaml" /etc/prometheus/postgres-queries.yaml 0644
}

# MongoDB: every member restarts as a member of rs0 with the keyfile (members 2..N empty, as a new
# member must be), member 1 initiates the set; then the users on the primary, the exporter on
# member 1.
replicas_provision_mongo() {
  local pair=$1 role host members='' sep='' primary dir f=$STATE_DIR/env/mongo-replica.env remote=$ENGINES_DIR/mongo/remote
  for role in $(replica_members "$pair"); do
    members+=$sep$(need_ip "$role" private):27017
    sep=,
  done
  (umask 077 && printf 'MONGO_KEYFILE=%s\nMONGO_ADMIN_PASSWORD=%s\n' "$MONGO_KEYFILE" "$MONGO_ADMIN_PASSWORD" >"$f")
  for role in $(replica_members "$pair"); do
    host=$(need_ip "$role" public)
    send "$host" "$f"
    rscript "$host" "$remote/replset-setup.sh" member "$(replica_index "$role")"
  done
  rscript "$(need_ip "$pair-db" public)" "$remote/replset-setup.sh" initiate "$members"
  primary=$pair-db
  if ! dry; then primary=$(wait_replica_primary "$pair" 120) || die "no MongoDB primary among the members"; fi
  say "MongoDB: rs0's primary is $TAG-$primary; users there"
  dir=$(db_env_dir "$pair")
  host=$(need_ip "$primary" public)
  send "$host" "$dir/mongo-db.env"
  rscript "$host" "$ENGINES_DIR/mongo/remote/setup.sh"
  install_on "$(need_ip "$pair-db" public)" mongodb-exporter "http://$(need_ip "$pair-db" private):$MONGO_EXPORTER_PORT/metrics" \
    "$dir/mongodb-exporter.env" /etc/orders/mongodb-exporter.env 0600
}

# provision_pair_database PAIR: a replicated pair's members, or the engine's one server.
provision_pair_database() {
  if replicated_pair "$1"; then
    "replicas_provision_$(pair_engine "$1")" "$1"
  else
    "$(pair_engine "$1")_provision" "$1"
  fi
}
