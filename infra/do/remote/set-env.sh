#!/usr/bin/env bash
# Runs on an app droplet (do.sh toggle): set or remove variables in a service's toggles file
# (read by its unit after the env file that `up` manages, so toggles survive a new `up`),
# restart the service, wait until it is ready and show the settings it reports. Without any
# NAME=VALUE it only shows them (after a toggle applied on the database droplet).
# usage: set-env.sh FILE SERVICE PORT [NAME=VALUE...]   (NAME= removes NAME)
set -euo pipefail
file=$1 service=$2 port=$3
shift 3
if [ $# -gt 0 ]; then
  (umask 077 && touch "$file")
  for kv in "$@"; do
    name=${kv%%=*}
    value=${kv#*=}
    sed -i "/^${name}=/d" "$file"
    if [ -n "$value" ]; then printf '%s=%s\n' "$name" "$value" >>"$file"; fi
  done
  echo "$file:"
  sed 's/^/  /' "$file"
  systemctl restart "$service"
  curl -fsS --retry 60 --retry-delay 1 --retry-connrefused -o /dev/null "http://127.0.0.1:$port/readyz"
  echo "$service restarted and ready"
fi
echo "$service: effective settings from /diagnostics:"
curl -fsS "http://127.0.0.1:$port/diagnostics" | jq -c '(.settings // {}) + (if .gin_index then {gin_fastupdate: .gin_index.fastupdate} else {} end)' | head -c 2000
echo
