# shellcheck shell=bash
# Helpers of infra/do/do.sh. Every doctl, ssh and scp call goes through run/query, so that
# DRY_RUN=1 prints it (on the original stdout, fd 3) instead of running it.

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'do.sh: %s\n' "$*" >&2; exit 1; }
dry() { [ "${DRY_RUN:-0}" = 1 ]; }

# Quote arguments the way a person would type them.
quote() {
  local a out=''
  for a in "$@"; do
    case $a in
      '' | *[!A-Za-z0-9_@%+=:,./-]*) a="'${a//\'/\'\\\'\'}'" ;;
    esac
    out+=" $a"
  done
  printf '%s' "${out# }"
}
show() { printf '+ %s\n' "$(quote "$@")" >&3; }

# run CMD...: run it, or under DRY_RUN print it.
run() { if dry; then show "$@"; else "$@"; fi; }

# query FAKE CMD...: run it and pass its output on; under DRY_RUN print it and output FAKE.
query() {
  local fake=$1
  shift
  if dry; then
    show "$@"
    if [ -n "$fake" ]; then printf '%s\n' "$fake"; fi
  else
    "$@"
  fi
}

# ssh and scp read their options from one file, which keeps the printed commands short.
ssh_opts() {
  local cfg=$STATE_DIR/ssh_config
  mkdir -p "$STATE_DIR"
  {
    printf 'Host *\n  User root\n  BatchMode yes\n  ConnectTimeout 10\n  ServerAliveInterval 30\n'
    printf '  StrictHostKeyChecking accept-new\n  UserKnownHostsFile %s/known_hosts\n' "$STATE_DIR"
    if [ -n "$SSH_IDENTITY" ]; then printf '  IdentityFile %s\n' "$SSH_IDENTITY"; fi
  } >"$cfg"
  SSH_OPTS=(-F "$cfg")
}
# rssh HOST COMMAND: one shell command line on a droplet, as root.
rssh() { run ssh "${SSH_OPTS[@]}" "root@$1" "$2"; }
# rscript HOST SCRIPT ARG...: run a local script on a droplet (bash -s), with arguments.
rscript() {
  local host=$1 script=$2
  shift 2
  if dry; then
    printf '+ %s < %s\n' "$(quote ssh "${SSH_OPTS[@]}" "root@$host" bash -s -- "$@")" "$script" >&3
  else
    # shellcheck disable=SC2029 # the arguments are quoted for the remote shell on purpose
    ssh "${SSH_OPTS[@]}" "root@$host" "bash -s -- $(quote "$@")" <"$script"
  fi
}
rscp() { run scp "${SSH_OPTS[@]}" "$@"; }

# Whether the deployment has the third pair, the hybrid layout's (HYBRID=1 in config.sh).
hybrid() { [ "$HYBRID" = 1 ]; }

# The pairs of droplets, one per line: NAME ENGINE SERVICE TARGET. NAME-db runs the database and
# NAME-app its service; ENGINE is the folder infra/engines/ENGINE whose droplets.sh, cloud-init/db.yaml,
# app.yaml, env/ and remote/ make them (infra/engines/README.md); SERVICE is the binary and unit on
# NAME-app; TARGET the name orders-bench knows it by, and in capitals the prefix of its variables
# (PG_DB_IP, PG_SERVICE_PASSWORD ...). The hybrid's pair is a PostgreSQL pair, made from the same
# files. A new engine is one more line here.
pairs() {
  printf '%s\n' 'postgres postgres orders-pg pg' 'mongo mongo orders-mongo mongo'
  if hybrid; then printf '%s\n' 'hybrid postgres orders-pg-hybrid pgh'; fi
}
pair_names() { pairs | awk '{ print $1 }'; }
# pair_field PAIR N: field N of the pair's line (2 engine, 3 service, 4 target), whatever HYBRID says.
pair_field() { HYBRID=1 pairs | awk -v p="$1" -v n="$2" '$1 == p { print $n }'; }
pair_engine() { pair_field "$1" 2; }
pair_service() { pair_field "$1" 3; }
pair_target() { pair_field "$1" 4; }
pair_prefix() { pair_target "$1" | tr '[:lower:]' '[:upper:]'; }
# The engines of the deployment, each once, in the pairs' order.
engines() { pairs | awk '!seen[$2]++ { print $2 }'; }
# A role without its number: load-2 -> load, and a replicated database's further members
# (postgres-db-2, mongo-db-3; infra/do/replicas.sh) -> postgres-db, mongo-db.
role_base() { printf '%s' "${1%-[0-9]*}"; }
# The engine of a role's droplet (nothing for the load droplets and the monitor).
engine_of() {
  local base
  base=$(role_base "$1")
  case $base in *-db | *-app) pair_engine "${base%-*}" ;; esac
}
# Where a pair's database files are rendered: env/ for the pair named after its engine, env/PAIR/
# for another pair of the same engine (the hybrid's: the same file names, its own values).
db_env_dir() {
  if [ "$1" = "$(pair_engine "$1")" ]; then printf '%s' "$STATE_DIR/env"; else printf '%s' "$STATE_DIR/env/$1"; fi
}

# The droplets: role names, one per line ("load-1".."load-N" for the load droplets; with
# REPLICAS=N a replicated pair's database is PAIR-db and PAIR-db-2..PAIR-db-N: replicas.sh).
roles() {
  local i pair
  for pair in $(pair_names); do
    printf '%s-db\n' "$pair"
    replica_extra_members "$pair"
  done
  pair_names | sed 's/$/-app/'
  for i in $(seq 1 "$LOAD_COUNT"); do printf 'load-%s\n' "$i"; done
  printf '%s\n' monitor
}
role_tag() { printf '%s-%s' "$TAG" "$(role_base "$1")"; }  # load-2 -> TAG-load, postgres-db-2 -> TAG-postgres-db
# The cloud-init template of a role: its engine's cloud-init/db.yaml or app.yaml for a pair's
# droplet, infra/do/cloud-init/ROLE.yaml for the others (load, monitor).
template_of() {
  local engine
  engine=$(engine_of "$1")
  if [ -n "$engine" ]; then
    printf '%s/%s/cloud-init/%s.yaml' "$ENGINES_DIR" "$engine" "$(role_base "$1" | sed 's/.*-//')"
  else
    printf '%s/cloud-init/%s.yaml' "$HERE" "$(role_base "$1")"
  fi
}
# The service an app droplet runs.
service_of() {
  local service=''
  case $1 in *-app) service=$(pair_service "${1%-app}") ;; esac
  [ -n "$service" ] || die "$1 runs no service"
  printf '%s' "$service"
}
size_of() {
  case $(role_base "$1") in
    *-db) printf '%s' "$DB_SIZE" ;;
    *-app) printf '%s' "$APP_SIZE" ;;
    load) printf '%s' "$LOAD_SIZE" ;;
    monitor) printf '%s' "$MONITOR_SIZE" ;;
  esac
}

# DROPLETS caches one line per droplet carrying TAG: "name public-ip private-ip size usd/hour"
# ("-" for an address not assigned yet).
DROPLETS=''
fake_droplets_json() {
  local n=10 role sep='' slug
  printf '['
  for role in $(roles); do
    n=$((n + 1))
    slug=$(size_of "$role")
    printf '%s{"name":"%s-%s","size_slug":"%s","size":{"price_hourly":%s},"networks":{"v4":[{"type":"public","ip_address":"203.0.113.%s"},{"type":"private","ip_address":"10.110.0.%s"}]}}' \
      "$sep" "$TAG" "$role" "$slug" "$(table_price "$slug")" "$n" "$n"
    sep=','
  done
  printf ']\n'
}
# Droplets as JSON (doctl's), turned into the cache's lines.
droplet_lines() {
  jq -r '(. // [])[] | [.name,
      ((.networks.v4 // []) | map(select(.type == "public")) | .[0].ip_address // "-"),
      ((.networks.v4 // []) | map(select(.type == "private")) | .[0].ip_address // "-"),
      .size_slug, (.size.price_hourly // 0)] | join(" ")'
}
refresh_droplets() {
  DROPLETS=$(query "$(fake_droplets_json)" doctl compute droplet list --tag-name "$TAG" --output json | droplet_lines)
  # Every command but up takes the deployment's number of database members (replicas.sh).
  if [ "${REPLICAS_FROM_FLAG:-0}" != 1 ]; then replicas_detect; fi
}
# ip_of ROLE public|private (empty until the droplet has it)
ip_of() {
  local col=2
  if [ "$2" = private ]; then col=3; fi
  printf '%s\n' "$DROPLETS" | awk -v n="$TAG-$1" -v c="$col" '$1 == n && $c != "-" { print $c }'
}
# Commands that use the hybrid's pair refuse a deployment that has it while HYBRID=1 is not set:
# its firewall rules, its seeding and its target would be left out (and up would take its
# droplet off the apps' firewall).
check_hybrid_setting() {
  local made
  hybrid && return 0
  made=$(printf '%s\n' "$DROPLETS" | awk -v p="$TAG-hybrid-" 'index($1, p) == 1 { printf "%s ", $1 }')
  [ -z "$made" ] ||
    die "this deployment has the hybrid's droplets (${made% }), made with HYBRID=1: set HYBRID=1 again (export HYBRID=1), or take everything down (infra/do/do.sh down)"
}
need_ip() {
  local addr
  addr=$(ip_of "$1" "$2")
  [ -n "$addr" ] || die "no droplet $TAG-$1 (run: infra/do/do.sh up)"
  printf '%s' "$addr"
}
load_roles() { printf '%s\n' "$DROPLETS" | awk -v p="$TAG-load-" 'index($1, p) == 1 { print substr($1, length(p) - 4) }' | sort -V; }

wait_for_ips() {
  local try role missing
  for try in $(seq 1 60); do
    refresh_droplets
    missing=''
    for role in "$@"; do
      if [ -z "$(ip_of "$role" private)" ] || [ -z "$(ip_of "$role" public)" ]; then missing+=" $role"; fi
    done
    [ -n "$missing" ] || return 0
    say "waiting for addresses of:$missing ($try/60)"
    sleep 5
  done
  die "droplets without addresses after 5 minutes:$missing"
}

# Wait until a droplet answers on SSH and cloud-init has finished. Exit 0: done; 2: finished with
# recoverable errors (each role's scripts run with set -e, so a real failure is exit 1).
wait_cloud_init() {
  local host=$1 name=$2 try rc
  for try in $(seq 1 90); do
    rc=0
    rssh "$host" 'cloud-init status --wait >/dev/null' || rc=$?
    case $rc in
      0 | 2) return 0 ;;
      255) say "waiting for ssh on $name ($try/90)"; sleep 10 ;;
      *) die "the first boot of $name failed: infra/do/do.sh ssh ${name#"$TAG"-} tail -n 50 /var/log/cloud-init-output.log" ;;
    esac
  done
  die "no ssh on $name after 15 minutes"
}

# render TEMPLATE OUT: copy TEMPLATE with each __NAME__ replaced by the variable NAME.
render() {
  local tpl=$1 out=$2 name args=(-e '')
  while read -r name; do
    [ -n "${!name:-}" ] || die "render $tpl: $name is empty"
    args+=(-e "s|__${name}__|${!name}|g")
  done < <(grep -o '__[A-Z][A-Z0-9_]*__' "$tpl" | sed 's/^__//; s/__$//' | sort -u)
  (umask 077 && sed "${args[@]}" "$tpl" >"$out")
}

rand_hex() { od -An -tx1 -N16 /dev/urandom | tr -d ' \n'; }

# The deployment's passwords, one per role and job (docs/security.md, "On droplets"): made once
# per deployment in STATE_DIR/secrets.env (0600); a name missing from an older file is added.
# They reach the droplets after boot, over scp into root-only files, never in user-data. Every
# pair's database has the three roles, with passwords of their own under its prefix (PG_*,
# MONGO_*, and the hybrid's PGH_*); then Grafana's.
secret_names() {
  local prefix
  for prefix in $(pairs | awk '{ print toupper($4) }'); do
    printf '%s\n' "${prefix}_SERVICE_PASSWORD" "${prefix}_LOADER_PASSWORD" "${prefix}_MONITOR_PASSWORD"
  done
  printf '%s\n' GRAFANA_PASSWORD
  replica_secret_names
}
load_secrets() {
  local f=$STATE_DIR/secrets.env name
  mkdir -p "$STATE_DIR"
  (umask 077 && touch "$f")
  for name in $(secret_names); do
    grep -q "^$name=" "$f" || printf '%s=%s\n' "$name" "$(rand_hex)" >>"$f"
  done
  # shellcheck source=/dev/null
  . "$f"
}

# holds_secret FILE: whether FILE contains one of the deployment's passwords (every one in
# secrets.env, whatever HYBRID says now).
holds_secret() {
  local name value
  while IFS='=' read -r name value; do
    if [ -n "$value" ] && grep -qF -- "$value" "$1"; then return 0; fi
  done <"$STATE_DIR/secrets.env"
  return 1
}

# send HOST FILE...: copy files into the droplet's /opt/orders/incoming (made afresh, 0700, root
# only), from where the remote script run next installs them (secrets as 0600 files of root).
send() {
  local host=$1
  shift
  rssh "$host" 'rm -rf /opt/orders/incoming && install -d -m 0700 /opt/orders/incoming'
  if [ $# -gt 0 ]; then rscp -q "$@" "root@$host:/opt/orders/incoming/"; fi
}

# --- prices -------------------------------------------------------------------------------------

table_price() { printf '%s\n' "$SIZES" | awk -v s="$1" '$1 == s { p = $4 } END { print (p == "" ? 0 : p) }'; }

# The sizes DigitalOcean offers, as "slug usd/hour region,region,..." lines (the configuration's
# table under DRY_RUN, with REGION as the only region).
SIZE_LINES=''
# shellcheck disable=SC2034 # SIZE_LINES is read by cmd-up.sh (do.sh sources both)
load_sizes() {
  local fake
  fake=$(printf '%s\n' "$SIZES" | awk -v r="$REGION" 'NR > 2 && NF == 4 { printf "%s{\"slug\":\"%s\",\"price_hourly\":%s,\"available\":true,\"regions\":[\"%s\"]}", (n++ ? "," : "["), $1, $4, r } END { print "]" }')
  SIZE_LINES=$(query "$fake" doctl compute size list --output json |
    jq -r '.[] | select(.available != false) | [.slug, .price_hourly, ((.regions // []) | join(","))] | join(" ")')
}

# The droplets of this deployment that exist, with their sizes and prices, and the total.
print_cost() {
  local what='that exist now'
  if dry; then what='(dry run: as if they had been created)'; fi
  printf '%s\n' "$DROPLETS" | awk -v what="$what" '
    NF >= 5 { printf "  %-30s %-14s %8.5f USD/hour\n", $1, $4, $5; total += $5; n++ }
    END {
      if (n == 0) { print "  no droplets: 0 USD/hour"; exit }
      printf "  %-30s %-14s %8.5f USD/hour (%.2f USD a day) for %d droplet(s) %s\n", "total", "", total, total * 24, n, what
    }'
}
