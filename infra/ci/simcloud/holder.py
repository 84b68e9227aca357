"""PID 1 of a simulated droplet. Started by the fake doctl inside the droplet's network namespace
with new PID, mount, UTS and IPC namespaces (`unshare --pid --fork --mount-proc --uts --ipc`), it
gives the droplet its own system: its hostname, overlays over /etc, /usr, /opt, /var, /root, /home
and /srv (reads see this machine's files, writes land in the droplet's folder), fresh tmpfs on
/tmp, /run and /dev/shm, none of this machine's PostgreSQL or MongoDB files, and the simulation's
systemctl, systemd-run, journalctl and cloud-init first on the PATH. The folders the simulation runs
from (the checkout and the world, with the binaries the test copied into it: the `keep` list of world.py) stay visible where
they are: one under a tmpfs (a checkout under /tmp) is bound back into it, so where a user cloned
does not matter. Then it listens on port 22
(the fake ssh connects there first, so the cloud firewall decides who gets in), reaps orphans like
an init, and dies with every process of the droplet when the droplet is deleted.
"""

import os
import socket
import subprocess
import sys
import threading
import time

from world import HERE

OVERLAID = ["/etc", "/usr", "/opt", "/var", "/root", "/home", "/srv"]
TMPFS = {"/tmp": "1777", "/run": "0755", "/dev/shm": "1777"}
# This machine's own database files and binaries, which a fresh droplet does not have.
HIDDEN = [
    "/etc/postgresql",
    "/etc/postgresql-common",
    "/usr/lib/postgresql",
    "/usr/share/postgresql",
    "/usr/share/postgresql-common",
    "/var/lib/postgresql",
    "/var/log/postgresql",
    "/var/lib/mongodb",
    "/var/log/mongodb",
    "/etc/mongod.conf",
    "/usr/local/bin/initdb",
    "/usr/local/bin/pg_ctl",
    "/usr/local/bin/postgres",
    "/etc/systemd/system/multi-user.target.wants",
]
# Where this machine's view of a folder about to be covered by a tmpfs is held while the folders
# the droplet must keep are bound back (under the droplet's own /var; unmounted afterwards).
STASH = "/var/lib/simcloud-host"
FAKES = {"systemctl": "systemd.py", "systemd-run": "systemd.py", "journalctl": "systemd.py", "cloud-init": "cloudinit.py"}


def sh(*cmd):
    subprocess.run(cmd, check=True)


def under(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def cover(path, mode, keep):
    """A fresh tmpfs on `path`, with the folders of `keep` that lie under it bound back in."""
    inside = [k for k in keep if under(k, path)]
    stash = STASH + path
    if inside:
        os.makedirs(stash, exist_ok=True)
        sh("mount", "--rbind", path, stash)
    sh("mount", "-t", "tmpfs", "-o", f"mode={mode}", "tmpfs", path)
    for folder in inside:
        os.makedirs(folder, exist_ok=True)
        sh("mount", "--rbind", stash + folder[len(path):], folder)
    if inside:
        sh("umount", "--lazy", stash)
        os.removedirs(stash)


def prepare(name, base, keep):
    socket.sethostname(name)
    for path in OVERLAID:
        upper, work = f"{base}/upper{path}", f"{base}/work{path}"
        os.makedirs(upper, exist_ok=True)
        os.makedirs(work, exist_ok=True)
        sh("mount", "-t", "overlay", "overlay", "-o", f"lowerdir={path},upperdir={upper},workdir={work}", path)
    # The folders to keep, outermost first (one inside another is kept with it).
    keep = sorted({os.path.abspath(k) for k in keep})
    keep = [k for i, k in enumerate(keep) if not any(under(k, outer) for outer in keep[:i])]
    for path, mode in TMPFS.items():
        cover(path, mode, keep)
    os.makedirs("/run/lock", exist_ok=True)
    for path in HIDDEN:
        sh("rm", "-rf", path)
    with open("/etc/hostname", "w") as f:
        f.write(name + "\n")
    for name, module in FAKES.items():
        target = f"/usr/local/sbin/{name}"
        with open(target, "w") as f:
            f.write(f"#!/bin/sh\nPYTHONDONTWRITEBYTECODE=1 exec /usr/bin/python3 '{HERE}/{module}' '{name}' \"$@\"\n")
        os.chmod(target, 0o755)
    os.makedirs("/var/log/sim-systemd", exist_ok=True)


def listen_ssh():
    """Port 22: accepts and closes, so a client knows the firewall let it through."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 22))
    server.listen(64)
    while True:
        conn, _ = server.accept()
        try:
            conn.sendall(b"SSH-2.0-simcloud\r\n")
        finally:
            conn.close()


def main():
    name, base, keep = sys.argv[1], sys.argv[2], sys.argv[3:]
    prepare(name, base, keep)
    threading.Thread(target=listen_ssh, daemon=True).start()
    with open(os.path.join(base, "ready"), "w") as f:
        f.write("ready\n")
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            pid = 0
        if pid == 0:
            time.sleep(0.5)


if __name__ == "__main__":
    main()
