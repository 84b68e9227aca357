# shellcheck shell=bash
# PostgreSQL on the droplets: what infra/do/do.sh calls for a pair of droplets whose engine is
# postgres (orders-pg's pair postgres-db/postgres-app, and with HYBRID=1 the hybrid's,
# hybrid-db/hybrid-app), its settings, its own command, `toggle`, and orders-pg's pair as a
# replicated deployment (up --replicas N: Patroni with etcd). Sourced by do.sh after
# config.sh and lib.sh, whose helpers (render, send, rscript, install_on, need_ip, pair_* ...)
# these functions use; the contract is infra/engines/README.md. The droplets' first boot is
# cloud-init/db.yaml and app.yaml, their files after boot env/ (rendered) and remote/ (run over ssh).
# shellcheck disable=SC2154 # ENGINES_DIR, STATE_DIR, REPO, APP_PORT, TAG ... come from do.sh

# postgres_exporter on the database droplets (open to the monitor droplet only).
PG_EXPORTER_PORT=9187
# PostgreSQL's plan log on postgres-db (auto_explain, server-wide, into the JSON log that
# orders-bench reads through orders_bench_read_log): the plan of every statement that runs at least
# this many milliseconds. 20 catches a sequential scan of a million orders, not an index plan.
PG_PLAN_LOG_MS=${PG_PLAN_LOG_MS:-20}

# --- what do.sh calls (infra/engines/README.md) --------------------------------------------------

# The plan log threshold is whole milliseconds (-1: no plan log).
postgres_check() {
  [[ $PG_PLAN_LOG_MS =~ ^(-1|[0-9]+)$ ]] || die "PG_PLAN_LOG_MS=$PG_PLAN_LOG_MS: give whole milliseconds (or -1: no plan log)"
}

# postgres_inbound PAIR: the database droplet's ports, "PORT FROM...": PostgreSQL from its own app
# droplet and the load droplets, the exporter from the monitor.
postgres_inbound() {
  printf '%s\n' "5432 $1-app load" "$PG_EXPORTER_PORT monitor"
}

# postgres_exporter PAIR: "PORT JOB" of the exporter Prometheus scrapes on PAIR-db.
postgres_exporter() { printf '%s\n' "$PG_EXPORTER_PORT postgres"; }

# postgres_render PAIR: the pair's files, from the templates in env/ filled in with its own database
# (the address of PAIR-db, the passwords of its roles: PG_* for orders-pg's pair, the hybrid's
# PGH_* under the names the templates and the droplet's scripts read): SERVICE.env for PAIR-app,
# and for PAIR-db its roles' passwords and its exporter's settings (db_env_dir: env/, the hybrid's
# env/hybrid/). The hybrid's database joins bench.env (env/bench-hybrid.env): orders-bench takes it
# from its environment, not its command line.
postgres_render() {
  local pair=$1 prefix dir env=$ENGINES_DIR/postgres/env
  prefix=$(pair_prefix "$pair")
  dir=$(db_env_dir "$pair")
  mkdir -p "$dir"
  # shellcheck disable=SC2034 # read by render through ${!name}
  (
    ip=${prefix}_DB_IP service=${prefix}_SERVICE_PASSWORD loader=${prefix}_LOADER_PASSWORD monitor=${prefix}_MONITOR_PASSWORD
    PG_DB_IP=${!ip} PG_SERVICE_PASSWORD=${!service} PG_LOADER_PASSWORD=${!loader} PG_MONITOR_PASSWORD=${!monitor}
    render "$env/orders-pg.env" "$STATE_DIR/env/$(pair_service "$pair").env"
    render "$env/postgres-db.env" "$dir/postgres-db.env"
    render "$env/postgres-exporter.env" "$dir/postgres-exporter.env"
    if [ "$pair" = hybrid ]; then render "$env/bench-hybrid.env" "$dir/bench.env"; fi
  )
  if [ "$pair" = hybrid ]; then cat "$dir/bench.env" >>"$STATE_DIR/env/bench.env"; fi
}

# postgres_provision PAIR: PAIR-db gets its certificate (TLS on, the VPC address: remote/tls.sh),
# its roles' passwords and the migrations of its layout (jsonb: orders-pg's, hybrid:
# orders-pg-hybrid's), the plan log, then its exporter's settings.
postgres_provision() {
  local pair=$1 layout=jsonb host dir remote=$ENGINES_DIR/postgres/remote
  if [ "$pair" = hybrid ]; then layout=hybrid; fi
  dir=$(db_env_dir "$pair")
  host=$(need_ip "$pair-db" public)
  # shellcheck disable=SC2046 # one path per line, none with a space
  send "$host" "$dir/postgres-db.env" "$STATE_DIR/migrations.tar" $(tls_files "$pair-db")
  # TLS and the VPC address first (remote/tls.sh): a restart, if any, before the roles.
  rscript "$host" "$remote/tls.sh" "$(need_ip "$pair-db" private)"
  rscript "$host" "$remote/setup.sh" "$layout"
  # The same plan log on both servers: what it costs, it costs both.
  rscript "$host" "$remote/setup-plan-log.sh" "$PG_PLAN_LOG_MS"
  install_on "$host" prometheus-postgres-exporter "http://$(need_ip "$pair-db" private):$PG_EXPORTER_PORT/metrics" \
    "$dir/postgres-exporter.env" /etc/orders/postgres-exporter.env 0600 \
    "$REPO/infra/monitoring/exporters/postgres-queries.yaml" /etc/prometheus/postgres-queries.yaml 0644
}

# postgres_round_args [ARG...]: what every round gets, one argument per line, given the arguments
# passed on to it. The plan log (which plan ran each sequential scan; orders-bench reads orders-pg's
# database's): postgres-db logs plans server-wide with its own threshold (PG_PLAN_LOG_MS at `up`),
# which orders-bench then uses whatever is passed here.
postgres_round_args() {
  if [ "$PG_PLAN_LOG_MS" != -1 ] && [[ " $* " != *" --plan-log-ms "* ]]; then
    printf '%s\n' --plan-log-ms "$PG_PLAN_LOG_MS"
  fi
}

# Its own command, `do.sh toggle` (cmd_toggle below), and its lines of `do.sh help`.
postgres_commands() { printf '%s\n' toggle; }
postgres_usage() {
  cat <<USAGE
  toggle NAME=VALUE...    set PG_PLAN_CACHE_MODE (auto|force_custom_plan|force_generic_plan) or
                          PG_STATEMENT_MODE (prepared|unprepared) on the postgres-app droplet and
                          restart orders-pg, and with HYBRID=1 the same on hybrid-app for
                          orders-pg-hybrid (NAME= removes the setting); PG_GIN_FASTUPDATE (on|off)
                          is set on orders-pg's index itself, as its owner, on the postgres-db
                          droplet (with --replicas: the member that is primary now; the hybrid
                          layout has no GIN index)
USAGE
}

# --- replicated: do.sh up --replicas N (infra/do/replicas.sh) ------------------------------------
# PostgreSQL under Patroni with etcd on every member (a three-member etcd cluster: Patroni's store
# survives the loss of any one droplet), synchronous_mode on, one synchronous standby
# (remote/patroni-setup.sh; Patroni 4.1.5 and etcd 3.4 as the local replicated stack). The
# service and orders-bench get a multi-host URL with target_session_attrs=read-write, as the local
# replicated stack gives them.

# Patroni's failover settings (its defaults): the leader key lives TTL seconds, Patroni loops every
# LOOP_WAIT seconds; a dead primary's key expires after at most TTL, then its synchronous standby
# takes over.
PATRONI_TTL=${PATRONI_TTL:-30}
PATRONI_LOOP_WAIT=${PATRONI_LOOP_WAIT:-10}
PATRONI_RETRY_TIMEOUT=${PATRONI_RETRY_TIMEOUT:-10}

# Its secrets: the superuser's and replication's passwords (Patroni's, the same on every member).
postgres_replica_secrets() { printf '%s\n' PG_SUPERUSER_PASSWORD PG_REPLICATION_PASSWORD; }

# postgres_member_ports PAIR: "PORT FROM" lines, what the members reach on each other: PostgreSQL's
# streaming replication and pg_rewind, Patroni's REST API, etcd's clients and peers.
postgres_member_ports() { printf '%s\n' "5432 $1-db" "8008 $1-db" "2379 $1-db" "2380 $1-db"; }

# postgres_replica_urls PAIR: the service's and orders-bench's URLs (the single server's, as
# postgres_render wrote them) name every member, and open read-write sessions only.
postgres_replica_urls() {
  local ip hosts f
  ip=$(need_ip "$1-db" private)
  hosts=$(replica_hosts "$1" 5432)
  for f in "$STATE_DIR/env/$(pair_service "$1").env" "$STATE_DIR/env/bench.env"; do
    sed -i "s|^\([A-Z_]*\)=\(.*\)@$ip:5432/orders\$|\1='\2@$hosts/orders?target_session_attrs=read-write'|" "$f"
    sed -i "s|^\([A-Z_]*\)='\(.*\)@$ip:5432/orders?\(.*\)'\$|\1='\2@$hosts/orders?target_session_attrs=read-write\&\3'|" "$f"
  done
}

# PostgreSQL: Patroni and etcd on every member; member 1 bootstraps the cluster when there is
# none, the others join it as standbys (one synchronous). Then the roles and migrations on the
# primary, the plan log's threshold on every member, the exporter on member 1.
postgres_replicas_provision() {
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
    # shellcheck disable=SC2046 # one path per line, none with a space
    send "$host" "$f" $(tls_files "$role")
    # The member's certificate and TLS settings (conf.d, which Patroni's PostgreSQL reads).
    rscript "$host" "$remote/tls.sh" "$(need_ip "$role" private)"
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

# --- do.sh toggle ----------------------------------------------------------------------------------

# The settings of orders-pg's environment go to the postgres-app droplet (a restart), and with
# HYBRID=1 to the hybrid-app droplet too: orders-pg-hybrid reads the same PG_PLAN_CACHE_MODE and
# PG_STATEMENT_MODE, and both PostgreSQL services must run with the same ones for a round to
# compare their layouts alone. The GIN index's fastupdate is orders-pg's alone (the hybrid layout
# has no GIN index): it is applied on the postgres-db droplet (on a replicated deployment the
# member that is primary now: db_primary, infra/do/replicas.sh) as the role that owns the index,
# which orders-pg's role on droplets is not (docs/security.md); the service reads it back.
cmd_toggle() {
  local kv fastupdate='' primary service=()
  [ $# -gt 0 ] || die "usage: infra/do/do.sh toggle NAME=VALUE... (see: infra/do/do.sh help)"
  for kv in "$@"; do
    case $kv in
      PG_GIN_FASTUPDATE=on | PG_GIN_FASTUPDATE=off) fastupdate=${kv#*=} ;;
      PG_GIN_FASTUPDATE=) die "toggle: fastupdate is a setting of the index (it stays as it is until changed): give PG_GIN_FASTUPDATE=on or off" ;;
      PG_PLAN_CACHE_MODE=auto | PG_PLAN_CACHE_MODE=force_custom_plan | PG_PLAN_CACHE_MODE=force_generic_plan | PG_PLAN_CACHE_MODE=) service+=("$kv") ;;
      PG_STATEMENT_MODE=prepared | PG_STATEMENT_MODE=unprepared | PG_STATEMENT_MODE=) service+=("$kv") ;;
      *) die "toggle: '$kv' is not one of PG_GIN_FASTUPDATE=on|off, PG_PLAN_CACHE_MODE=auto|force_custom_plan|force_generic_plan, PG_STATEMENT_MODE=prepared|unprepared (NAME= removes it)" ;;
    esac
  done
  refresh_droplets
  check_hybrid_setting
  if [ -n "$fastupdate" ]; then
    # On the primary: postgres-db, or on a replicated deployment the member that is primary now.
    primary=$(db_primary postgres)
    if replicated_pair postgres; then say "PG_GIN_FASTUPDATE on $TAG-$primary, the primary now"; fi
    rscript "$(need_ip "$primary" public)" "$ENGINES_DIR/postgres/remote/gin-fastupdate.sh" "$fastupdate"
  fi
  toggle_service postgres-app ${service[@]+"${service[@]}"}
  if hybrid && [ ${#service[@]} -gt 0 ]; then
    say "the same settings for orders-pg-hybrid on $TAG-hybrid-app (both PostgreSQL services run with the same ones)"
    toggle_service hybrid-app "${service[@]}"
  fi
}
