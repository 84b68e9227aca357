#!/usr/bin/env python3
"""What TLS to the database costs per request (docs/service-cost.md, "TLS to the database").

One PostgreSQL (Debian's, built with OpenSSL: the stack's wheel has no TLS) with `ssl = on` that
accepts plaintext and TLS sessions alike, and one mongod with `--tlsMode preferTLS`, each on a free
127.0.0.1 port with its data in a temporary folder, certificates from `infra/local/tls.sh certs`.
ORDERS orders are written once through the service; then, per service (release builds,
WORKER_THREADS=1 and a pool of 16 as in scripts/service-bench.sh), two instances run at the same
time on the same data, one with TLS (`verify-full` / `tls=true` and the CA) and one without, and
one k6 process sends each GET /orders/{id} (a random seeded id) at RATE requests/s
(constant-arrival-rate), ROUNDS rounds of DURATION s after a WARMUP s warm-up (so the pools'
connections, and their handshakes, are made before). Side by side, whatever else loads the machine
loads both. Per round and instance: the instance's CPU (user + system from /proc) per request, its
database sessions' CPU per request (PostgreSQL: its backends, found by `application_name`;
mongod: its connections' threads, `conn<N>`, found by `appName` in mongod's log; listed again at
the end of the round, so a session opened during it counts from 0), k6's p50 and p95. The servers and every file are removed when it ends, on failure too.

Settings (environment): RATE=300 DURATION=20 WARMUP=5 ROUNDS=5 ORDERS=2000 BIN_DIR=target/release
K6 (default the venv's), PG_BIN (Debian's /usr/lib/postgresql/N/bin with OpenSSL), MONGOD.
"""

import glob
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RATE = int(os.environ.get("RATE", "300"))
DURATION = int(os.environ.get("DURATION", "20"))
WARMUP = int(os.environ.get("WARMUP", "5"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
ORDERS = int(os.environ.get("ORDERS", "2000"))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
BIN_DIR = os.environ.get("BIN_DIR", os.path.join(TARGET, "release"))
K6 = os.environ.get("K6", os.path.join(REPO, ".venv", "bin", "k6"))
TICK = os.sysconf("SC_CLK_TCK")
PG_USER = "orders-pg"
SERVICES = ("orders-pg", "orders-mongo")
SETTINGS = ("off", "on")

K6_SCRIPT = """
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';
const orders = Number(__ENV.ORDERS), seed = __ENV.SEED === '1';
const rate = (base) => ({ executor: 'constant-arrival-rate', exec: 'get', env: { BASE: base },
  rate: Number(__ENV.RATE), timeUnit: '1s', duration: __ENV.DURATION + 's', preAllocatedVUs: 32, maxVUs: 128 });
export const options = seed
  ? { scenarios: { seed: { executor: 'shared-iterations', exec: 'post', vus: 8, iterations: orders } } }
  : { discardResponseBodies: true, scenarios: { off: rate(__ENV.OFF), on: rate(__ENV.ON) },
      thresholds: { 'http_req_duration{scenario:off}': ['max>=0'], 'http_req_duration{scenario:on}': ['max>=0'],
                    'http_reqs{scenario:off}': ['count>=0'], 'http_reqs{scenario:on}': ['count>=0'] } };
export function post() {
  const n = exec.scenario.iterationInTest;
  const body = JSON.stringify({ id: n + 1, customer: { id: 1 + (n % 200), name: 'Ada', email: 'ada@example.com' },
    items: [1, 2, 3].map((p) => ({ product_id: p, sku: 'SKU-' + p, name: 'Item ' + p, quantity: 1, unit_price_cents: 1999 })),
    currency: 'EUR', shipping: { street: 'Main 1', city: 'Berlin', postal_code: '10115', country: 'DE' } });
  const r = http.post(__ENV.OFF + '/orders', body, { headers: { 'Content-Type': 'application/json' } });
  check(r, { created: (x) => x.status === 201 || x.status === 409 });
}
export function get() {
  const r = http.get(__ENV.BASE + '/orders/' + (1 + Math.floor(Math.random() * orders)));
  check(r, { ok: (x) => x.status === 200 });
}
"""


def say(*words):
    print("tls-cost:", *words, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit(f"nothing listens on {port} after {seconds} s")


def postgres_bin():
    candidates = [os.environ["PG_BIN"]] if "PG_BIN" in os.environ else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for path in candidates:
        out = subprocess.run([os.path.join(path, "pg_config"), "--configure"], capture_output=True, text=True)
        if "openssl" in out.stdout:
            return path
    raise SystemExit("no PostgreSQL built with OpenSSL: bash infra/local/tls.sh install")


def mongod_binary():
    if "MONGOD" in os.environ:
        return os.environ["MONGOD"]
    found = glob.glob(os.path.join(REPO, ".venv/lib/python3*/site-packages/fiftyone/db/bin/mongod"))
    if not found:
        raise SystemExit("no mongod in .venv (bash infra/local/stack.sh install)")
    return found[0]


def as_pg_user(argv):
    return ["runuser", "-u", PG_USER, "--"] + argv if os.getuid() == 0 else argv


def ticks_of(stat_path):
    """utime + stime from a /proc .../stat file, 0 when it is gone."""
    try:
        with open(stat_path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0


class Servers:
    def __init__(self, work):
        self.work = work
        self.pg_bin = postgres_bin()
        self.pg_port, self.mongo_port = free_port(), free_port()
        self.pg_data = os.path.join(work, "pg")
        self.mongo_log = os.path.join(work, "mongod.log")
        self.mongo = None
        self.pg_started = False

    def cert(self, name):
        return os.path.join(self.work, "certs", name)

    def start(self):
        subprocess.run(["bash", os.path.join(REPO, "infra/local/tls.sh"), "certs", os.path.join(self.work, "certs")],
                       check=True, capture_output=True)
        os.chmod(self.work, 0o755)
        pg_parent = os.path.join(self.work, "pgparent")
        os.makedirs(pg_parent)
        if os.getuid() == 0:
            shutil.chown(pg_parent, PG_USER, PG_USER)
        self.pg_data = os.path.join(pg_parent, "data")
        subprocess.run(as_pg_user([os.path.join(self.pg_bin, "initdb"), "-D", self.pg_data, "-U", "postgres",
                                   "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"]),
                       check=True, capture_output=True, cwd="/")
        for name in ("server.crt", "server.key"):
            path = os.path.join(self.pg_data, name)
            shutil.copy(self.cert(name), path)
            os.chmod(path, 0o600)
            if os.getuid() == 0:
                shutil.chown(path, PG_USER, PG_USER)
        with open(os.path.join(self.pg_data, "postgresql.auto.conf"), "a") as conf:
            conf.write(f"listen_addresses = '127.0.0.1'\nport = {self.pg_port}\nunix_socket_directories = ''\n"
                       "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n"
                       "shared_buffers = 128MB\nmax_connections = 100\n")
        with open(os.path.join(self.pg_data, "pg_hba.conf"), "w") as hba:
            hba.write("host all all 127.0.0.1/32 trust\n")  # plaintext and TLS alike
        subprocess.run(as_pg_user([os.path.join(self.pg_bin, "pg_ctl"), "start", "-D", self.pg_data, "-l",
                                   os.path.join(pg_parent, "log"), "-w", "-t", "60"]),
                       check=True, capture_output=True, cwd="/")
        self.pg_started = True
        wait_port(self.pg_port)
        self.psql_run("CREATE DATABASE tls_cost", database="postgres")
        mongo_data = os.path.join(self.work, "mongo")
        os.makedirs(mongo_data)
        self.mongo = subprocess.Popen(
            [mongod_binary(), "--bind_ip", "127.0.0.1", "--port", str(self.mongo_port), "--nounixsocket",
             "--dbpath", mongo_data, "--wiredTigerCacheSizeGB", "0.25", "--tlsMode", "preferTLS",
             "--tlsCertificateKeyFile", self.cert("server.pem"), "--tlsCAFile", self.cert("ca.crt"),
             "--tlsAllowConnectionsWithoutCertificates", "--logpath", self.mongo_log],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.mongo_port)

    def psql_run(self, sql, database="tls_cost"):
        out = subprocess.run([os.path.join(self.pg_bin, "psql"), "-Atq", "-h", "127.0.0.1", "-p", str(self.pg_port),
                              "-U", "postgres", "-d", database, "-c", sql], capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def stop(self):
        if self.mongo:
            self.mongo.terminate()
            self.mongo.wait(30)
        if self.pg_started:
            subprocess.run(as_pg_user([os.path.join(self.pg_bin, "pg_ctl"), "stop", "-D", self.pg_data, "-m", "fast"]),
                           capture_output=True, cwd="/")

    def url(self, service, setting):
        name = f"{service}-{setting}"
        if service == "orders-pg":
            url = f"postgres://postgres@127.0.0.1:{self.pg_port}/tls_cost?application_name={name}"
            return url + (f"&sslmode=verify-full&sslrootcert={self.cert('ca.crt')}" if setting == "on" else "")
        uri = f"mongodb://127.0.0.1:{self.mongo_port}/?appName={name}"
        return uri + (f"&tls=true&tlsCAFile={self.cert('ca.crt')}" if setting == "on" else "")

    def session_stats(self, service, setting):
        """The /proc stat files of the database sessions of one instance, and what the server says of
        their encryption."""
        name = f"{service}-{setting}"
        if service == "orders-pg":
            rows = self.psql_run("SELECT a.pid || ' ' || s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) "
                                 f"WHERE a.application_name = '{name}'").split("\n")
            rows = [row.split() for row in rows if row]
            return [f"/proc/{pid}/stat" for pid, _ in rows], "pg_stat_ssl.ssl " + ",".join(ssl for _, ssl in rows)
        conns = set()
        with open(self.mongo_log) as log:
            for line in log:
                if '"client metadata"' in line:
                    entry = json.loads(line)
                    if entry["attr"].get("doc", {}).get("application", {}).get("name") == name:
                        conns.add(entry["attr"]["client"])
        stats = []
        for task in glob.glob(f"/proc/{self.mongo.pid}/task/*"):
            try:
                with open(os.path.join(task, "comm")) as f:
                    if f.read().strip() in conns:
                        stats.append(os.path.join(task, "stat"))
            except FileNotFoundError:
                pass
        return stats, f"{len(stats)} connection threads"


class Service:
    def __init__(self, service, url, work, setting):
        self.port = free_port()
        env = {"PATH": os.environ.get("PATH", ""), "BIND_ADDR": f"127.0.0.1:{self.port}", "RUST_LOG": "warn",
               "WORKER_THREADS": "1"}
        if service == "orders-pg":
            env.update(DATABASE_URL=url, PG_POOL_SIZE="16")
        else:
            env.update(MONGODB_URI=url, MONGODB_DB="tls_cost", MONGO_POOL_SIZE="16")
        self.log = open(os.path.join(work, f"{service}-{setting}.log"), "a")
        self.process = subprocess.Popen([os.path.join(BIN_DIR, service)], env=env, stdout=self.log, stderr=self.log)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(self.base + "/readyz", timeout=2)
                return
            except Exception:
                if self.process.poll() is not None or time.time() > deadline:
                    raise SystemExit(f"{service} did not start; see its log")
                time.sleep(0.2)

    def diagnostics_tls(self):
        try:
            report = json.load(urllib.request.urlopen(self.base + "/diagnostics", timeout=10))
            return json.dumps(report.get("tls"))
        except Exception as error:  # orders-pg's report needs PostgreSQL 16+ (EXPLAIN GENERIC_PLAN)
            return f"/diagnostics: {error}"

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)
        self.log.close()


def k6(script, off, on, *, seed=False, duration=DURATION):
    summary = script + ".summary.json"
    env = dict(os.environ, OFF=off, ON=on, ORDERS=str(ORDERS), SEED="1" if seed else "0", RATE=str(RATE),
               DURATION=str(duration))
    subprocess.run([K6, "run", "--quiet", "--no-color", "--summary-export", summary, script], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(summary) as f:
        return json.load(f)["metrics"]


def measure(servers, service, script, work):
    """ROUNDS rounds with both instances loaded at once: one row per round and setting."""
    instances = {setting: Service(service, servers.url(service, setting), work, setting) for setting in SETTINGS}
    rows = []
    try:
        k6(script, instances["off"].base, instances["on"].base, seed=True)
        k6(script, instances["off"].base, instances["on"].base, duration=WARMUP)
        for setting in SETTINGS:
            say(service, setting, "/diagnostics tls:", instances[setting].diagnostics_tls())
        for round_ in range(1, ROUNDS + 1):
            files = {s: servers.session_stats(service, s)[0] for s in SETTINGS}
            before = {s: (ticks_of(f"/proc/{instances[s].process.pid}/stat"), {f: ticks_of(f) for f in files[s]})
                      for s in SETTINGS}
            metrics = k6(script, instances["off"].base, instances["on"].base)
            for s in SETTINGS:
                requests = metrics[f"http_reqs{{scenario:{s}}}"]["count"]
                service_ticks = ticks_of(f"/proc/{instances[s].process.pid}/stat") - before[s][0]
                # The sessions as they are now: one the pool opened during the round counts from 0.
                now, says = servers.session_stats(service, s)
                database_ticks = sum(ticks_of(f) - before[s][1].get(f, 0) for f in now)
                duration = metrics[f"http_req_duration{{scenario:{s}}}"]
                row = {"service": service, "tls": s, "round": round_, "requests": requests,
                       "service_us": service_ticks / TICK / requests * 1e6,
                       "database_us": database_ticks / TICK / requests * 1e6,
                       "p50_ms": duration["med"], "p95_ms": duration["p(95)"], "server_says": says}
                rows.append(row)
                say(json.dumps(row))
            failed = metrics["checks"]["fails"]
            if failed or metrics.get("dropped_iterations", {}).get("count", 0):
                say(f"round {round_}: {failed} failed checks, dropped iterations: the rate was not kept")
    finally:
        for instance in instances.values():
            instance.stop()
    return rows


def main():
    for tool in (K6, os.path.join(BIN_DIR, "orders-pg"), os.path.join(BIN_DIR, "orders-mongo")):
        if not os.access(tool, os.X_OK):
            raise SystemExit(f"{tool} is missing (cargo build --release -p orders-pg -p orders-mongo; "
                             "bash infra/local/stack.sh install for k6)")
    work = tempfile.mkdtemp(prefix="orders-tls-cost-")
    servers = Servers(work)
    rows = []
    try:
        servers.start()
        script = os.path.join(work, "get.js")
        with open(script, "w") as f:
            f.write(K6_SCRIPT)
        for service in SERVICES:
            rows += measure(servers, service, script, work)
    finally:
        servers.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nGET /orders/{{id}} at {RATE} req/s to each instance at once, {ROUNDS} rounds of {DURATION} s, "
          "WORKER_THREADS=1, pool 16\n")
    print("| service | round | service µs/req off | on | database µs/req off | on | p50 ms off | on | p95 ms off | on |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    pick = lambda service, round_, s: next(r for r in rows if (r["service"], r["round"], r["tls"]) == (service, round_, s))
    for service in SERVICES:
        for round_ in range(1, ROUNDS + 1):
            off, on = pick(service, round_, "off"), pick(service, round_, "on")
            cells = [f"{off[k]:.{d}f} | {on[k]:.{d}f}" for k, d in
                     (("service_us", 1), ("database_us", 1), ("p50_ms", 2), ("p95_ms", 2))]
            print(f"| {service} | {round_} | " + " | ".join(cells) + " |")
    print("\nMedians over the rounds; on - off, and its range over the rounds:\n")
    print("| service | figure | off | on | on - off (median) | on - off (range) |")
    print("|---|---|---|---|---|---|")
    for service in SERVICES:
        for figure in ("service_us", "database_us", "p50_ms", "p95_ms"):
            off = [pick(service, r, "off")[figure] for r in range(1, ROUNDS + 1)]
            on = [pick(service, r, "on")[figure] for r in range(1, ROUNDS + 1)]
            diff = [b - a for a, b in zip(off, on)]
            d = 1 if figure.endswith("us") else 3
            print(f"| {service} | {figure} | {statistics.median(off):.{d}f} | {statistics.median(on):.{d}f} | "
                  f"{statistics.median(diff):+.{d}f} | {min(diff):+.{d}f} to {max(diff):+.{d}f} |")


if __name__ == "__main__":
    main()
