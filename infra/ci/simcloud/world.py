"""The simulated cloud's world: where its files live, its state (what the fake DigitalOcean
account holds), and how to run a command inside a droplet.

A world is one folder (SIMCLOUD_WORLD) holding `state.json` (guarded by `state.lock`), one folder
per droplet (its private copies of /etc, /usr, /opt, /var, ... as overlay upper layers) and `bin/`
with the operator's fake doctl, ssh and scp. Network: one namespace with the bridges (the public
network and one per VPC; no uplink, no route off the machine), one for the operator (holding
OPERATOR_IP), one per droplet. A droplet is a holder process (holder.py) that is PID 1 of its own
PID, mount, UTS and IPC namespaces inside the droplet's network namespace; commands enter it with
nsenter.

`python3 world.py create DIR --operator-ip IP [--no-network]` makes a world, `python3 world.py
destroy DIR` removes everything it made (also after a failure halfway). The droplets see this
machine's checkout and the world where they are, even
under /tmp, /run or /dev/shm, which each droplet covers with a tmpfs of its own (holder.py).
"""

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
DROPLET_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Addresses of the simulated public network (RFC 2544's benchmarking block): only inside the
# world's own namespaces.
PUBLIC_NET = "198.18.0.0/15"
PUBLIC_PREFIX = 15


def world_dir():
    path = os.environ.get("SIMCLOUD_WORLD")
    if not path:
        sys.exit("simcloud: SIMCLOUD_WORLD is not set")
    return path


def run(cmd, check=True, **kwargs):
    """Runs a command (a list); raises with its output when it fails and `check` is set."""
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {result.returncode}: {result.stderr.strip() or result.stdout.strip()}")
    return result


@contextlib.contextmanager
def locked_state(world=None):
    """The state, read under the world's lock and written back when the block ends."""
    world = world or world_dir()
    with open(os.path.join(world, "state.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = os.path.join(world, "state.json")
        with open(path) as f:
            state = json.load(f)
        yield state
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(state, f, indent=1)
        os.replace(tmp, path)


def read_state(world=None):
    world = world or world_dir()
    with open(os.path.join(world, "state.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        with open(os.path.join(world, "state.json")) as f:
            return json.load(f)


def nsenter(droplet, command, env=None, cwd="/root"):
    """The argv that runs `command` (a list) inside a droplet, with a login-like environment."""
    base = {"PATH": DROPLET_PATH, "HOME": "/root", "LANG": "C.UTF-8", "USER": "root", "LOGNAME": "root", "SHELL": "/bin/bash"}
    base.update(env or {})
    pairs = [f"{k}={v}" for k, v in base.items()]
    return ["nsenter", "-t", str(droplet["holder_pid"]), "-m", "-u", "-i", "-n", "-p", f"--wd={cwd}", "env", "-i", *pairs, *command]


def ns_names(state):
    prefix = state["prefix"]
    return f"{prefix}-net", f"{prefix}-op"


def create(world, operator_ip, network=True):
    """The bridge namespace with the public bridge, and the operator's namespace on it. Without
    `network` only the account's state: droplets are records, nothing boots (for quick tests of
    the doctl calls that need neither root nor namespaces)."""
    os.makedirs(os.path.join(world, "droplets"), exist_ok=True)
    os.makedirs(os.path.join(world, "bin"), exist_ok=True)
    prefix = "obs" + os.urandom(2).hex()
    state = {
        "prefix": prefix,
        "world": world,
        "operator_ip": operator_ip,
        "next_id": 1001,
        "next_host": 10,
        "account": {"email": "operator@simcloud.invalid", "droplet_limit": 10, "status": "active", "uuid": "sim-account"},
        "ssh_keys": [{"id": 4242, "name": "simcloud", "fingerprint": "00:11:22:33"}],
        "tags": [],
        "vpcs": [],
        "firewalls": [],
        "droplets": [],
        "network": network,
        # What the droplets must see of this machine where it is (holder.py binds it back).
        "keep": [REPO, world],
    }
    with open(os.path.join(world, "state.json"), "w") as f:
        json.dump(state, f, indent=1)
    write_tools(world)
    if not network:
        print(f"world {world}: the account's state only (no network, droplets do not boot)")
        return
    net, op = ns_names(state)
    run(["ip", "netns", "add", net])
    run(["ip", "-n", net, "link", "set", "lo", "up"])
    run(["ip", "-n", net, "link", "add", "brpub", "type", "bridge"])
    run(["ip", "-n", net, "link", "set", "brpub", "up"])
    run(["ip", "netns", "add", op])
    run(["ip", "-n", op, "link", "set", "lo", "up"])
    run(["ip", "-n", net, "link", "add", f"{prefix}op", "type", "veth", "peer", "name", "eth0", "netns", op])
    run(["ip", "-n", net, "link", "set", f"{prefix}op", "master", "brpub", "up"])
    run(["ip", "-n", op, "addr", "add", f"{operator_ip}/{PUBLIC_PREFIX}", "dev", "eth0"])
    run(["ip", "-n", op, "link", "set", "eth0", "up"])
    print(f"world {world}: namespaces {net} (bridges) and {op} (operator {operator_ip})")


def write_tools(world):
    """The operator's doctl, ssh and scp (bin/ of the world, first on the PATH of do.sh)."""
    for tool in ("doctl", "ssh", "scp"):
        script = os.path.join(world, "bin", tool)
        module = "doctl" if tool == "doctl" else "remote"
        with open(script, "w") as f:
            f.write(f"#!/bin/sh\nSIMCLOUD_WORLD='{world}' PYTHONDONTWRITEBYTECODE=1 exec /usr/bin/python3 '{HERE}/{module}.py' {tool} \"$@\"\n")
        os.chmod(script, 0o755)


def kill_holder(droplet):
    """Ends a droplet: its holder is PID 1 of the droplet's PID namespace, so every process in it dies."""
    pid = droplet.get("holder_pid")
    if pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            if not os.path.exists(f"/proc/{pid}"):
                break
            time.sleep(0.05)
    launcher = droplet.get("launcher_pid")
    if launcher:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(launcher, signal.SIGKILL)


def destroy(world):
    """Removes everything the world made, whatever state it is in."""
    state_file = os.path.join(world, "state.json")
    if os.path.exists(state_file):
        with open(state_file) as f:
            state = json.load(f)
        for droplet in state.get("droplets", []):
            kill_holder(droplet)
            run(["ip", "netns", "del", droplet["netns"]], check=False)
        if not state.get("network", True):
            shutil.rmtree(world, ignore_errors=True)
            return
        net, op = ns_names(state)
        run(["ip", "netns", "del", op], check=False)
        run(["ip", "netns", "del", net], check=False)
        # Namespaces of droplets a failed create left out of the state.
        for line in run(["ip", "netns", "list"], check=False).stdout.splitlines():
            name = line.split()[0] if line.split() else ""
            if name.startswith(state["prefix"] + "-"):
                run(["ip", "netns", "del", name], check=False)
    shutil.rmtree(world, ignore_errors=True)
    print(f"world {world} removed")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "create":
        operator_ip = sys.argv[sys.argv.index("--operator-ip") + 1]
        create(os.path.abspath(sys.argv[2]), operator_ip, network="--no-network" not in sys.argv)
    elif len(sys.argv) == 3 and sys.argv[1] == "destroy":
        destroy(os.path.abspath(sys.argv[2]))
    else:
        sys.exit("usage: world.py create DIR --operator-ip IP [--no-network] | destroy DIR")
