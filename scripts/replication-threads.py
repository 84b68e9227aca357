#!/usr/bin/env python3
"""Where a replicated durable write's CPU goes, by member and by process or thread.

`experiment replication` measures each member's CPU per write from its cgroup; this says which
part of each server burned it. It drives N inserts of about 1 KB straight through each engine's
driver (8 threads; PostgreSQL `synchronous_commit=on` with Patroni's synchronous standby, MongoDB
`w: majority, j: true`), against the stack's replicas and against its single servers, and reads
before and after:
  - every PostgreSQL process's CPU time (/proc/PID/stat), grouped by its title (client backend,
    walsender, walreceiver, startup (replay), walwriter, ...), and Patroni's;
  - every mongod thread's CPU time (/proc/PID/task/TID/stat), grouped by its name (conn,
    ReplWriterWorker, OplogApplier, oplogFetcher, WTJournalFlusher, ...), and each member's
    serverStatus command counters (getMore, replSetUpdatePosition, insert).
Each figure is divided by the acknowledged inserts. Needs root (it reads the members' processes
in their namespaces) and the stack's replicas and single servers running:
    bash infra/local/stack.sh start && bash infra/local/stack.sh start --replicas 3 --only-replicas
    .venv/bin/python scripts/replication-threads.py [--writes 3000]
It writes a scratch table `replication_threads` (PostgreSQL, database `orders`) and a scratch
database `replication_threads` (MongoDB), and drops both.
"""

import argparse
import os
import re
import subprocess
import sys
import threading
import time
from collections import defaultdict

import psycopg
from pymongo import MongoClient, WriteConcern

TICK = os.sysconf("SC_CLK_TCK")
DOC = {"customer_id": 7, "status": "placed", "items": [{"product_id": 1, "qty": 2}], "note": "x" * 900}


def stack_env():
    script = 'eval "$(bash infra/local/stack.sh env)" && env -0'
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    return dict(line.split("=", 1) for line in out.split("\0") if "=" in line)


def cpu_ms(stat_path):
    try:
        with open(stat_path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / TICK
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0.0


def port_of(url):
    return re.search(r":(\d+)(/|$)", url.split("@")[-1]).group(1)


def pids_of(namespace):
    out = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def pids_listening(port):
    """The root namespace's server processes (the single servers), by their listening port."""
    out = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True).stdout
    return sorted({int(p) for p in re.findall(r"pid=(\d+)", out)})


def postgres_group(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            title = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except FileNotFoundError:
        return None
    if "patroni" in title:
        return "patroni"
    if not title.startswith("postgres:"):
        return "postmaster" if "/bin/postgres" in title else None
    rest = title.split(":", 2)[-1].strip()
    for known in ("walsender", "walreceiver", "walwriter", "checkpointer", "background writer", "startup",
                  "autovacuum", "io worker", "logger", "walsummarizer", "archiver"):
        if rest.startswith(known):
            return known
    return "client backend"


def postgres_snapshot(pids):
    """CPU ms per group, over the postmaster's children found now (new backends start at 0)."""
    groups = defaultdict(float)
    for pid in pids:
        group = postgres_group(pid)
        if group:
            groups[group] += cpu_ms(f"/proc/{pid}/stat")
    return groups, {pid: postgres_group(pid) for pid in pids}


def mongod_snapshot(pid):
    groups = defaultdict(float)
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except FileNotFoundError:
            continue
        groups[re.sub(r"[-_]?\d+$", "", name)] += cpu_ms(f"/proc/{pid}/task/{tid}/stat")
    return groups


def drive(insert_one, writes, threads=8):
    done = [0]
    lock = threading.Lock()

    def worker(n):
        for _ in range(n):
            insert_one()
            with lock:
                done[0] += 1

    started = time.monotonic()
    workers = [threading.Thread(target=worker, args=(writes // threads,)) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return done[0], time.monotonic() - started


def member_namespaces(prefix, engine):
    """{member: namespace} of the replicas' members of `engine`."""
    found = {}
    for ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split("\n"):
        name = ns.split(" ")[0]
        m = re.fullmatch(rf"{prefix}-({engine}\d)", name)
        if m:
            found[m.group(1)] = name
    return dict(sorted(found.items()))


def measure_postgres(url, members, writes):
    """members: {name: () -> [pids]}, listed again after the inserts (their backends are new); the
    table lives on the primary `url` reaches."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS replication_threads")
        conn.execute("CREATE TABLE replication_threads (id bigserial PRIMARY KEY, doc jsonb NOT NULL)")
        sync = conn.execute("SHOW synchronous_standby_names").fetchone()[0]
        commit = conn.execute("SHOW synchronous_commit").fetchone()[0]
    local = threading.local()
    payload = psycopg.types.json.Jsonb(DOC)
    # Kept open until the CPU is read: a backend's CPU time leaves with its process.
    opened = []

    def insert_one():
        if not hasattr(local, "conn"):
            local.conn = psycopg.connect(url, autocommit=True)
            opened.append(local.conn)
        local.conn.execute("INSERT INTO replication_threads (doc) VALUES (%s)", (payload,))

    before = {m: postgres_snapshot(pids()) for m, pids in members.items()}
    n, seconds = drive(insert_one, writes)
    after = {m: postgres_snapshot(pids()) for m, pids in members.items()}
    for conn in opened:
        conn.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE replication_threads")
    return n, seconds, f"synchronous_commit={commit}, synchronous_standby_names='{sync}'", {
        m: {g: after[m][0][g] - before[m][0].get(g, 0.0) for g in after[m][0]} for m in members
    }


def measure_mongo(uri, members, writes):
    client = MongoClient(uri, serverSelectionTimeoutMS=10000)
    coll = client["replication_threads"].get_collection(
        "probe", write_concern=WriteConcern(w="majority", j=True))
    coll.drop()

    def counters():
        out = {}
        for name, (pid, member_uri) in members.items():
            status = MongoClient(member_uri, directConnection=True, serverSelectionTimeoutMS=5000).admin.command(
                "serverStatus")
            commands = status["metrics"]["commands"]
            out[name] = {
                "getMore": commands.get("getMore", {}).get("total", 0),
                "replSetUpdatePosition": commands.get("replSetUpdatePosition", {}).get("total", 0),
                "insert": commands.get("insert", {}).get("total", 0),
            }
        return out

    cpu_before = {m: mongod_snapshot(pid) for m, (pid, _) in members.items()}
    count_before = counters()
    n, seconds = drive(lambda: coll.insert_one(dict(DOC)), writes)
    cpu_after = {m: mongod_snapshot(pid) for m, (pid, _) in members.items()}
    count_after = counters()
    client.drop_database("replication_threads")
    cpu = {m: {g: cpu_after[m][g] - cpu_before[m].get(g, 0.0) for g in cpu_after[m]} for m in members}
    commands = {m: {k: count_after[m][k] - count_before[m][k] for k in count_after[m]} for m in members}
    return n, seconds, cpu, commands


def show(title, n, seconds, cpu, commands=None, floor=0.005):
    print(f"\n{title}: {n} inserts in {seconds:.1f} s ({n / seconds:.0f}/s); CPU ms per insert")
    for member, groups in cpu.items():
        total = sum(groups.values()) / n
        parts = sorted(((v / n, g) for g, v in groups.items() if v / n >= floor), reverse=True)
        print(f"  {member}: {total:.3f} = " + ", ".join(f"{g} {v:.3f}" for v, g in parts))
        if commands:
            c = commands[member]
            print("    per insert: " + ", ".join(f"{k} {v / n:.2f}" for k, v in c.items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writes", type=int, default=3000, help="inserts per engine and deployment")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("replication-threads: needs root (the members' processes are in network namespaces)")
    env = stack_env()
    if not env.get("REPLICA_DATABASE_URL"):
        sys.exit("replication-threads: the replicas are not running (bash infra/local/stack.sh start --replicas 3)")
    prefix = os.environ.get("STACK_REPLICA_PREFIX", "orders")

    pg_members = {m: (lambda ns=ns: pids_of(ns)) for m, ns in member_namespaces(prefix, "pg").items()}
    n, s, waited, cpu = measure_postgres(env["REPLICA_DATABASE_URL"], pg_members, args.writes)
    show(f"PostgreSQL, 3 members ({waited})", n, s, cpu)
    postmaster = pids_listening(port_of(env["DATABASE_URL"]))[0]

    def single_pids():
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
        return [postmaster] + [int(p) for p in children]

    single_pg = {"pg": single_pids}
    n, s, waited, cpu = measure_postgres(env["DATABASE_URL"], single_pg, args.writes)
    show(f"PostgreSQL, single server ({waited})", n, s, cpu)

    mongo_members = {}
    for member, ns in member_namespaces(prefix, "mongo").items():
        mongod = [p for p in pids_of(ns) if open(f"/proc/{p}/comm").read().strip() == "mongod"]
        addresses = subprocess.run(["ip", "-n", f"{prefix}-{member}", "-4", "-o", "addr", "show", "eth0"],
                                   capture_output=True, text=True).stdout
        host = re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", addresses).group(1)
        mongo_members[member] = (mongod[0], f"mongodb://{host}:27017/")
    n, s, cpu, commands = measure_mongo(env["REPLICA_MONGODB_URI"], mongo_members, args.writes)
    show("MongoDB, 3 members (w: majority, j: true)", n, s, cpu, commands)
    single = pids_listening(port_of(env["MONGODB_URI"]))
    n, s, cpu, commands = measure_mongo(env["MONGODB_URI"], {"mongo": (single[0], env["MONGODB_URI"])}, args.writes)
    show("MongoDB, single server (w: majority, j: true)", n, s, cpu, commands)


if __name__ == "__main__":
    main()
