# shellcheck shell=bash
# `do.sh toggle`, `status`, `ssh` and `down`.

cmd_toggle() {
  local kv host
  [ $# -gt 0 ] || die "usage: infra/do/do.sh toggle NAME=VALUE... (see: infra/do/do.sh help)"
  for kv in "$@"; do
    case $kv in
      PG_GIN_FASTUPDATE=on | PG_GIN_FASTUPDATE=off | PG_GIN_FASTUPDATE=) ;;
      PG_PLAN_CACHE_MODE=auto | PG_PLAN_CACHE_MODE=force_custom_plan | PG_PLAN_CACHE_MODE=force_generic_plan | PG_PLAN_CACHE_MODE=) ;;
      PG_STATEMENT_MODE=prepared | PG_STATEMENT_MODE=unprepared | PG_STATEMENT_MODE=) ;;
      *) die "toggle: '$kv' is not one of PG_GIN_FASTUPDATE=on|off, PG_PLAN_CACHE_MODE=auto|force_custom_plan|force_generic_plan, PG_STATEMENT_MODE=prepared|unprepared (NAME= removes it)" ;;
    esac
  done
  refresh_droplets
  host=$(need_ip postgres-app public)
  rscript "$host" "$HERE/remote/set-env.sh" /etc/orders/orders-pg.env orders-pg "$APP_PORT" "$@"
}

cmd_status() {
  refresh_droplets
  printf '%s\n' "$DROPLETS" | awk 'BEGIN { printf "  %-28s %-16s %s\n", "droplet", "public", "private" }
    { printf "  %-28s %-16s %s\n", $1, $2, $3 }'
  if [ -n "$(ip_of monitor public)" ]; then
    printf '  Grafana: http://%s:3000 (admin, password GRAFANA_PASSWORD in %s/secrets.env)\n' \
      "$(ip_of monitor public)" "$STATE_DIR"
  fi
  print_cost
}

cmd_ssh() {
  [ $# -gt 0 ] || die "usage: infra/do/do.sh ssh ROLE [COMMAND]"
  local role=$1
  shift
  refresh_droplets
  run ssh "${SSH_OPTS[@]}" "root@$(need_ip "$role" public)" "$@"
}

# Everything this deployment made: droplets by tag, then the firewalls and the VPC by their
# exact names (neither can carry a tag on DigitalOcean), then the tags.
cmd_down() {
  local have name id try left fake_fw=''
  run doctl compute droplet delete --tag-name "$TAG" --force

  while IFS='|' read -r name _; do fake_fw+="dry-run-fw-$name $name"$'\n'; done < <(OPERATOR_CIDR=- firewall_specs)
  have=$(query "$fake_fw" doctl compute firewall list --format ID,Name --no-header)
  while IFS='|' read -r name _; do
    id=$(printf '%s\n' "$have" | awk -v n="$name" '$2 == n { print $1 }')
    if [ -n "$id" ]; then run doctl compute firewall delete "$id" --force; fi
  done < <(OPERATOR_CIDR=- firewall_specs)

  for try in $(seq 1 60); do
    left=$(query '' doctl compute droplet list --tag-name "$TAG" --format Name --no-header)
    [ -n "$left" ] || break
    say "waiting for droplets to go ($try/60): $(printf '%s' "$left" | tr '\n' ' ')"
    sleep 5
  done

  id=$(query "dry-run-vpc $TAG-vpc" doctl vpcs list --format ID,Name --no-header | awk -v n="$TAG-vpc" '$2 == n { print $1 }')
  if [ -n "$id" ]; then
    for try in $(seq 1 30); do
      if run doctl vpcs delete "$id" --force; then break; fi
      say "VPC still in use, retrying ($try/30)"
      sleep 10
    done
  fi
  # shellcheck disable=SC2046 # one word per tag
  run doctl compute tag delete $(all_tags) --force
  if dry; then show rm -rf "$STATE_DIR"; else rm -rf "$STATE_DIR"; fi
  say "deleted everything tagged or named $TAG (results stay in $RESULTS_DIR)"
}
