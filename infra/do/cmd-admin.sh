# shellcheck shell=bash
# `do.sh status`, `tunnel`, `ssh` and `down`, and what an engine's own commands use (`do.sh toggle`
# is PostgreSQL's: infra/engines/postgres/droplets.sh).

# toggle_service ROLE [NAME=VALUE]...: set them in the toggles file of the service on app droplet
# ROLE and restart it (without any, only show its settings).
toggle_service() {
  local role=$1 service
  shift
  service=$(service_of "$role")
  rscript "$(need_ip "$role" public)" "$HERE/remote/set-env.sh" "/etc/orders/$service.toggles.env" "$service" "$APP_PORT" "$@"
}

# The VPC and firewalls of this deployment that exist ("id name default" lines; firewalls "id name").
list_vpc() {
  query "[{\"id\":\"dry-run-vpc\",\"name\":\"$TAG-vpc\",\"default\":false}]" doctl vpcs list --output json |
    jq -r --arg n "$TAG-vpc" '.[] | select(.name == $n) | "\(.id) \(.name) \(.default)"'
}
# Every firewall the deployment can have, the hybrid's too whatever HYBRID says now (a deployment
# made with HYBRID=1 may be taken down without it); a dry run has those of the current settings.
list_firewalls() {
  local fake='' name ours
  ours=$(HYBRID=1 OPERATOR_CIDR=- firewall_specs | cut -d'|' -f1)
  while read -r name; do
    fake+="{\"id\":\"dry-run-fw-$name\",\"name\":\"$name\"},"
  done < <(OPERATOR_CIDR=- firewall_specs | cut -d'|' -f1)
  query "[${fake%,}]" doctl compute firewall list --output json |
    jq -r --arg p "$TAG-" '.[] | select(.name | startswith($p)) | "\(.id) \(.name)"' |
    while read -r id name; do
      if grep -qx -- "$name" <<<"$ours"; then printf '%s %s\n' "$id" "$name"; fi
    done
}

cmd_status() {
  refresh_droplets
  printf '%s\n' "$DROPLETS" | awk 'BEGIN { printf "  %-30s %-16s %-16s %s\n", "droplet", "public", "private", "size" }
    NF >= 4 { printf "  %-30s %-16s %-16s %s\n", $1, $2, $3, $4 }' >&3
  if [ -n "$(ip_of monitor public)" ]; then
    printf '  Grafana and Prometheus: infra/do/do.sh tunnel (they listen on the monitor droplet'"'"'s loopback and VPC address)\n' >&3
  fi
  printf '  VPC %s, %s firewall(s)\n' "$(list_vpc | awk '{ print $2 ($3 == "true" ? " (the region default)" : "") }' | grep . || echo none)" \
    "$(list_firewalls | grep -c . || true)" >&3
  print_cost >&3
  replicas_status >&3
}

# An SSH tunnel to Grafana, which listens on the monitor droplet's loopback only, and Prometheus,
# which listens on its VPC address (the load droplets push to it): no HTTP port of theirs is open
# to the internet, and Grafana's password travels inside SSH. Runs until Ctrl-C.
cmd_tunnel() {
  local host prometheus
  [ $# -eq 0 ] || die "usage: infra/do/do.sh tunnel (local ports: TUNNEL_GRAFANA_PORT, TUNNEL_PROMETHEUS_PORT)"
  refresh_droplets
  host=$(need_ip monitor public)
  prometheus=$(need_ip monitor private):$PROMETHEUS_PORT
  {
    printf '  Grafana:    http://127.0.0.1:%s (user admin, password GRAFANA_PASSWORD in %s/secrets.env)\n' \
      "$TUNNEL_GRAFANA_PORT" "$STATE_DIR"
    printf '  Prometheus: http://127.0.0.1:%s\n' "$TUNNEL_PROMETHEUS_PORT"
  } >&3
  say "SSH tunnel to $TAG-monitor open until Ctrl-C"
  run ssh "${SSH_OPTS[@]}" -N -o ExitOnForwardFailure=yes \
    -L "127.0.0.1:$TUNNEL_GRAFANA_PORT:127.0.0.1:3000" -L "127.0.0.1:$TUNNEL_PROMETHEUS_PORT:$prometheus" "root@$host"
}

cmd_ssh() {
  [ $# -gt 0 ] || die "usage: infra/do/do.sh ssh ROLE [COMMAND]"
  local role=$1
  shift
  refresh_droplets
  run ssh "${SSH_OPTS[@]}" "root@$(need_ip "$role" public)" "$@"
}

# Everything this deployment made: droplets by tag, then the firewalls and the VPC by their
# exact names (neither can carry a tag on DigitalOcean), then the tags. Each only if it exists, so
# a second `down` (or one after a half-finished `up`) has nothing to fail on. A VPC that became
# the region's default (the first VPC of a region does) cannot be deleted: it stays, free.
cmd_down() {
  local id name is_default try left have t kept=''
  refresh_droplets
  if [ -n "$DROPLETS" ]; then
    say "deleting $(printf '%s\n' "$DROPLETS" | grep -c .) droplet(s); billing stops now:"
    print_cost >&3
    run doctl compute droplet delete --tag-name "$TAG" --force
  fi

  while read -r id name; do
    run doctl compute firewall delete "$id" --force
    say "firewall $name deleted"
  done < <(list_firewalls)

  if ! dry; then
    for try in $(seq 1 60); do
      left=$(doctl compute droplet list --tag-name "$TAG" --output json | jq -r '(. // [])[].name')
      [ -n "$left" ] || break
      say "waiting for droplets to go ($try/60): $(printf '%s' "$left" | tr '\n' ' ')"
      sleep 5
    done
  fi

  read -r id name is_default < <(list_vpc; echo) || true
  if [ -n "${id:-}" ] && [ "$is_default" = true ]; then
    kept="the VPC $name ($id), the default VPC of $REGION: DigitalOcean does not delete a region's default VPC (it costs nothing; delete it in the control panel after making another VPC the default)"
  elif [ -n "${id:-}" ]; then
    for try in $(seq 1 30); do
      if run doctl vpcs delete "$id" --force; then say "VPC $name deleted"; break; fi
      [ "$try" -lt 30 ] || die "the VPC $name ($id) is still in use: infra/do/do.sh down again in a minute"
      say "VPC still in use, retrying ($try/30)"
      sleep 10
    done
  fi

  # Every tag the deployment can have, the hybrid's too (as the firewalls above).
  have=$(query "$(all_tags)" doctl compute tag list --format Name --no-header)
  for t in $(HYBRID=1 all_tags); do
    if grep -qx -- "$t" <<<"$have"; then run doctl compute tag delete "$t" --force; fi
  done
  if dry; then show rm -rf "$STATE_DIR"; else rm -rf "$STATE_DIR"; fi

  if dry; then DROPLETS=''; else refresh_droplets; fi
  print_cost >&3
  if [ -n "$kept" ]; then
    say "deleted everything tagged or named $TAG except $kept"
  else
    say "deleted everything tagged or named $TAG (results stay in $RESULTS_DIR)"
  fi
}
