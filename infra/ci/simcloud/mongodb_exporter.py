"""Percona's mongodb_exporter on a simulated mongo-db droplet, whose install step downloads nothing:
the command line and environment of Percona's 0.47 (`--mongodb.uri`, `--collector.diagnosticdata`,
`--web.listen-address`, `--version`; MONGODB_USER and MONGODB_PASSWORD put into the URI the way
Percona's buildURI does when it has none), served by the project's mongo-serverstatus-exporter
(infra/monitoring), which names serverStatus the way Percona does. The droplet's unit, its
environment file and its MongoDB user are the real ones; any flag Percona's exporter would take but
this does not simulate is refused, so the unit cannot drift from what the simulation checks.

    mongodb_exporter.py STAND-IN [PERCONA FLAGS...]
"""

import os
import sys
from urllib.parse import quote, urlsplit, urlunsplit

SIMULATED = ("--mongodb.uri", "--web.listen-address", "--collector.diagnosticdata", "--version")


def parse(argv):
    flags, i = {}, 0
    while i < len(argv):
        name, eq, value = argv[i].partition("=")
        if name not in SIMULATED:
            sys.exit(f"mongodb_exporter (simulated): {name} is not simulated (only {', '.join(SIMULATED)})")
        if name in ("--mongodb.uri", "--web.listen-address") and not eq:
            i += 1
            value = argv[i] if i < len(argv) else sys.exit(f"mongodb_exporter (simulated): {name} needs a value")
        flags[name] = value
        i += 1
    return flags


def with_credentials(uri, user, password):
    parts = urlsplit(uri if "://" in uri else "mongodb://" + uri)
    if "@" in parts.netloc or not (user and password):
        return urlunsplit(parts)
    return urlunsplit(parts._replace(netloc=f"{quote(user, safe='')}:{quote(password, safe='')}@{parts.netloc}"))


def main():
    stand_in, flags = sys.argv[1], parse(sys.argv[2:])
    if "--version" in flags:
        print("mongodb_exporter (simulated: mongo-serverstatus-exporter with Percona's names)")
        return
    uri = flags.get("--mongodb.uri") or os.environ.get("MONGODB_URI")
    if not uri:
        sys.exit("mongodb_exporter (simulated): no --mongodb.uri or MONGODB_URI")
    listen = flags.get("--web.listen-address", ":9216")
    if listen.startswith(":"):
        listen = "0.0.0.0" + listen
    env = dict(os.environ, MONGODB_URI=with_credentials(uri, os.environ.get("MONGODB_USER"), os.environ.get("MONGODB_PASSWORD")))
    for name in ("MONGODB_USER", "MONGODB_PASSWORD"):
        env.pop(name, None)
    # The URI (with the password) goes in the environment: a command line is readable by anyone.
    os.execve(stand_in, [stand_in, "--listen", listen], env)


if __name__ == "__main__":
    main()
