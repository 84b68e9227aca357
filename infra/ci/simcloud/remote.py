"""Fake `ssh` and `scp` of the operator, for the simulated cloud. Like the real ones they first
open a TCP connection to port 22 of the droplet's public address from the operator's namespace,
so a cloud firewall that does not admit the operator makes them fail (exit 255, as ssh does);
then they run the command inside the droplet (ssh: `bash -c` of the joined arguments, stdin and
stdout passed through, the remote exit status returned) or copy files in or out of it (scp,
through tar, `-r` for folders, into an existing folder or as a new name, like scp). ssh also
forwards local ports (`-L [BIND:]PORT:HOST:HOSTPORT`, with `-N` for nothing else): it listens in
the operator's namespace and opens each connection to HOST:HOSTPORT from inside the droplet's
network namespace, so `127.0.0.1` is the droplet's own loopback, as with a real tunnel.
"""

import ctypes
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading

from world import nsenter, read_state

SSH_VALUE_OPTIONS = set("BbcDEeFIiJLlmOopQRSWw")
SCP_VALUE_OPTIONS = set("cDFiJlloPS")


def droplet_at(host):
    address = host.rsplit("@", 1)[-1]
    for droplet in read_state()["droplets"]:
        if address in (droplet["public_ip"], droplet["name"]):
            return droplet
    return None


def connect_timeout(options):
    for option in options:
        key, _, value = option.partition("=")
        if key.strip().lower() == "connecttimeout" and value.strip().isdigit():
            return min(int(value), 5)
    return 5


def reach(host, options):
    """The TCP connection to port 22 that the firewall must allow; exits 255 when it cannot."""
    droplet = droplet_at(host)
    address = host.rsplit("@", 1)[-1]
    try:
        with socket.create_connection((address, 22), timeout=connect_timeout(options)):
            pass
    except OSError as error:
        print(f"ssh: connect to host {address} port 22: {error.strerror or error}", file=sys.stderr)
        sys.exit(255)
    if droplet is None:
        print(f"ssh: {address}: no simulated droplet has this address", file=sys.stderr)
        sys.exit(255)
    return droplet


def split_options(argv, value_options, forwards=None):
    """(flags, -o options, the rest); `-L` values go to `forwards` when it is given."""
    options, rest, i = [], [], 0
    flags = set()
    while i < len(argv):
        a = argv[i]
        if a == "--":
            rest = argv[i + 1 :]
            break
        if a.startswith("-") and len(a) > 1 and not rest:
            letter = a[1]
            if letter in value_options:
                value = a[2:] or (argv[i + 1] if i + 1 < len(argv) else "")
                if letter == "o":
                    options.append(value)
                elif letter == "L" and forwards is not None:
                    forwards.append(value)
                i += 1 if a[2:] else 2
                continue
            flags.update(a[1:])
            i += 1
            continue
        rest = argv[i:]
        break
    return flags, options, rest


CLONE_NEWNET = 0x40000000
LIBC = ctypes.CDLL(None, use_errno=True)


def connect_inside(droplet, host, port):
    """A TCP connection opened from inside the droplet's network namespace: a thread of its own
    enters the namespace (setns applies to the calling thread) and the socket keeps it."""
    result = {}

    def enter_and_connect():
        try:
            with open(f"/run/netns/{droplet['netns']}") as namespace:
                if LIBC.setns(namespace.fileno(), CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns")
            result["socket"] = socket.create_connection((host, port), timeout=5)
        except OSError as error:
            result["error"] = error

    thread = threading.Thread(target=enter_and_connect)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["socket"]


def pump(source, sink):
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            try:
                end.shutdown(how)
            except OSError:
                pass


def forward(droplet, spec):
    """`-L [BIND:]PORT:HOST:HOSTPORT`: listen here, connect there for each client."""
    parts = spec.split(":")
    if len(parts) == 3:
        parts.insert(0, "127.0.0.1")
    if len(parts) != 4 or not parts[1].isdigit() or not parts[3].isdigit():
        sys.exit(f"ssh: bad local forwarding specification '{spec}'")
    bind, port, host, host_port = parts[0] or "127.0.0.1", int(parts[1]), parts[2], int(parts[3])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((bind, port))
    except OSError as error:
        print(f"bind [{bind}]:{port}: {error.strerror}", file=sys.stderr)
        print("Could not request local forwarding.", file=sys.stderr)
        sys.exit(255)
    listener.listen(16)

    def serve():
        while True:
            client, _ = listener.accept()
            try:
                remote = connect_inside(droplet, host, host_port)
            except OSError as error:
                print(f"channel: open failed: connect to {host} port {host_port}: {error}", file=sys.stderr)
                client.close()
                continue
            remote.settimeout(None)
            for a, b in ((client, remote), (remote, client)):
                threading.Thread(target=pump, args=(a, b), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()


def ssh(argv):
    forwards = []
    flags, options, rest = split_options(argv, SSH_VALUE_OPTIONS, forwards)
    if not rest:
        sys.exit("usage: ssh [options] host [command]")
    droplet = reach(rest[0], options)
    for spec in forwards:
        forward(droplet, spec)
    if "N" in flags:
        # Forwarding only, until the operator ends it.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
        sys.exit(0)
    command = " ".join(rest[1:])
    argv = nsenter(droplet, ["bash", "-c", command] if command else ["bash", "-l"])
    sys.exit(subprocess.run(argv).returncode)


def remote_part(spec):
    """`root@1.2.3.4:/path` → (host, path); a local path → (None, path)."""
    if ":" in spec and not spec.startswith("/") and not spec.startswith("."):
        host, _, path = spec.partition(":")
        return host, path or "."
    return None, spec


def scp(argv):
    flags, options, rest = split_options(argv, SCP_VALUE_OPTIONS)
    if len(rest) < 2:
        sys.exit("usage: scp [-r] source... target")
    recursive = "r" in flags
    sources, target = rest[:-1], rest[-1]
    target_host, target_path = remote_part(target)
    for source in sources:
        source_host, source_path = remote_part(source)
        if (source_host is None) == (target_host is None):
            sys.exit("scp (simulated): copy between this machine and one droplet")
        if target_host:
            copy_in(reach(target_host, options), source_path, target_path, recursive, len(sources) > 1)
        else:
            copy_out(reach(source_host, options), source_path, target_path, recursive)


def tar_pipe(sender, receiver):
    producer = subprocess.Popen(sender, stdout=subprocess.PIPE)
    consumer = subprocess.run(receiver, stdin=producer.stdout)
    producer.stdout.close()
    if producer.wait() != 0 or consumer.returncode != 0:
        sys.exit(1)


def copy_in(droplet, source, target, recursive, many):
    """This machine → droplet. Into `target` when it is a folder there, else as `target`."""
    if os.path.isdir(source) and not recursive:
        sys.exit(f"scp: {source}: not a regular file")
    is_dir = subprocess.run(nsenter(droplet, ["test", "-d", target])).returncode == 0
    if many and not is_dir:
        sys.exit(f"scp: {target}: not a directory")
    parent, name = os.path.split(os.path.abspath(source))
    if is_dir:
        receiver = nsenter(droplet, ["tar", "-C", target, "--no-same-owner", "-xf", "-"])
        return tar_pipe(["tar", "-C", parent, "-cf", "-", name], receiver)
    if os.path.isdir(source):
        script = f"mkdir -p {shlex.quote(target)} && tar -C {shlex.quote(target)} --no-same-owner -xf -"
        return tar_pipe(["tar", "-C", source, "-cf", "-", "."], nsenter(droplet, ["sh", "-c", script]))
    mode = oct(os.stat(source).st_mode & 0o777)[2:]
    script = f"cat >{shlex.quote(target)} && chmod {mode} {shlex.quote(target)}"
    with open(source, "rb") as f:
        if subprocess.run(nsenter(droplet, ["sh", "-c", script]), stdin=f).returncode != 0:
            sys.exit(1)


def copy_out(droplet, source, target, recursive):
    """Droplet → this machine, the same rules the other way round."""
    if subprocess.run(nsenter(droplet, ["test", "-e", source])).returncode != 0:
        sys.exit(f"scp: {source}: No such file or directory")
    source_is_dir = subprocess.run(nsenter(droplet, ["test", "-d", source])).returncode == 0
    if source_is_dir and not recursive:
        sys.exit(f"scp: {source}: not a regular file")
    parent, name = os.path.split(source.rstrip("/"))
    if os.path.isdir(target):
        return tar_pipe(nsenter(droplet, ["tar", "-C", parent or "/", "-cf", "-", name]), ["tar", "-C", target, "--no-same-owner", "-xf", "-"])
    if source_is_dir:
        os.makedirs(target)
        return tar_pipe(nsenter(droplet, ["tar", "-C", source, "-cf", "-", "."]), ["tar", "-C", target, "--no-same-owner", "-xf", "-"])
    with open(target, "wb") as f:
        if subprocess.run(nsenter(droplet, ["cat", source]), stdout=f).returncode != 0:
            sys.exit(1)


if __name__ == "__main__":
    tool, args = sys.argv[1], sys.argv[2:]
    {"ssh": ssh, "scp": scp}[tool](args)
