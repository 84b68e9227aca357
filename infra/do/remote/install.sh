#!/usr/bin/env bash
# Runs on a droplet (do.sh up): install the files do.sh copied to /opt/orders/incoming where they
# differ from what is installed, and restart the service only when one of them changed or it is
# not running; then wait until it is ready. A second `up` with nothing changed leaves every
# service running untouched; a changed setting (say, a recreated database droplet's address)
# reaches the service.
# usage: install.sh UNIT READY_URL [SOURCE DESTINATION MODE]...
#   MODE is an octal file mode, or `tar`: SOURCE is a tar unpacked into the folder DESTINATION.
set -euo pipefail
unit=$1 ready=$2
shift 2
changed=()
while [ $# -ge 3 ]; do
  src=$1 dest=$2 mode=$3
  shift 3
  if [ "$mode" = tar ]; then
    if cmp -s "$src" "$dest/.installed-$(basename "$src")"; then continue; fi
    tar -C "$dest" --no-same-owner -xf "$src"
    install -m 0644 "$src" "$dest/.installed-$(basename "$src")"
  else
    if [ -f "$dest" ] && cmp -s "$src" "$dest" && [ "$(stat -c %a "$dest")" = "${mode#0}" ]; then continue; fi
    install -D -m "$mode" "$src" "$dest"
  fi
  changed+=("$dest")
done
rm -rf /opt/orders/incoming

if [ ${#changed[@]} -eq 0 ] && systemctl is-active --quiet "$unit"; then
  echo "$unit: nothing changed, left running"
  exit 0
fi
systemctl daemon-reload
systemctl enable "$unit" >/dev/null 2>&1
systemctl restart "$unit"
if ! curl -fs --retry 60 --retry-delay 1 --retry-connrefused -o /dev/null "$ready"; then
  echo "$unit is not ready ($ready); its last log lines:" >&2
  journalctl -u "$unit" -n 40 --no-pager >&2 || true
  exit 1
fi
if [ ${#changed[@]} -eq 0 ]; then
  echo "$unit: started (it was not running)"
else
  echo "$unit: restarted, changed: ${changed[*]}"
fi
