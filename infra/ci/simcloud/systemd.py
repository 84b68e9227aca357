"""systemctl, systemd-run and journalctl inside a simulated droplet (which has no systemd). A unit
really runs: its file (/etc/systemd/system, /run/systemd/transient, /lib/systemd/system, plus
`<unit>.d/*.conf` drop-ins) is read when it starts, its ExecStart runs with the environment of its
Environment= and EnvironmentFile= lines (a missing EnvironmentFile without `-` fails the start, as
in systemd), as its User/Group, in its WorkingDirectory, with its LimitNOFILE, output to
StandardOutput=append:/file: or the unit's log that journalctl reads; `${NAME}` and a word `$NAME`
in an Exec line take the unit's environment as in systemd (the latter split at whitespace into words,
none when empty). A supervisor process per unit
restarts it on failure (Restart=, RestartSec=) and stops it with KillSignal, then SIGKILL after
TimeoutStopSec. So a unit that names a wrong variable or binary fails here as it would on a droplet.
Not simulated: sandboxing (ProtectSystem=, PrivateTmp=, NoNewPrivileges=), dependencies between
units, sockets and timers.
"""

import grp
import json
import os
import pwd
import re
import resource
import shlex
import signal
import subprocess
import sys
import time

UNIT_DIRS = ["/etc/systemd/system", "/run/systemd/transient", "/lib/systemd/system", "/usr/lib/systemd/system"]
STATE = "/run/sim-systemd"
LOGS = "/var/log/sim-systemd"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def unit_name(name):
    return name if "." in name else f"{name}.service"


def load_unit(name):
    """The unit's settings: {section: {key: [values]}}, drop-ins applied; None when it does not exist."""
    files = []
    for folder in UNIT_DIRS:
        if os.path.exists(f"{folder}/{name}"):
            files.append(f"{folder}/{name}")
            break
    if not files:
        return None
    for folder in UNIT_DIRS:
        drop_ins = f"{folder}/{name}.d"
        if os.path.isdir(drop_ins):
            files += sorted(f"{drop_ins}/{f}" for f in os.listdir(drop_ins) if f.endswith(".conf"))
    unit, section = {}, None
    for path in files:
        lines = open(path).read().replace("\\\n", " ").splitlines()
        for line in lines:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("[") and line.endswith("]"):
                section = unit.setdefault(line[1:-1], {})
                continue
            key, _, value = line.partition("=")
            values = section.setdefault(key.strip(), [])
            if value.strip() == "" and key.strip() in ("ExecStart", "Environment", "EnvironmentFile"):
                values.clear()  # an empty assignment resets the list, as in systemd
            else:
                values.append(value.strip())
    return unit


def setting(unit, key, default=None):
    values = unit.get("Service", {}).get(key)
    return values[-1] if values else default


def status_path(name):
    return f"{STATE}/{name}.json"


def read_status(name):
    try:
        with open(status_path(name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {"state": "inactive"}


def write_status(name, **fields):
    os.makedirs(STATE, exist_ok=True)
    status = read_status(name)
    status.update(fields)
    with open(status_path(name) + ".tmp", "w") as f:
        json.dump(status, f)
    os.replace(status_path(name) + ".tmp", status_path(name))


def alive(pid):
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def environment(unit):
    """The unit's environment, or an error message (a required EnvironmentFile is missing)."""
    env = {"PATH": DEFAULT_PATH, "LANG": "C.UTF-8"}
    for line in unit.get("Service", {}).get("Environment", []):
        for pair in shlex.split(line):
            key, _, value = pair.partition("=")
            env[key] = value
    for path in unit.get("Service", {}).get("EnvironmentFile", []):
        optional = path.startswith("-")
        path = path.lstrip("-")
        if not os.path.exists(path):
            if optional:
                continue
            return None, f"Failed to load environment files: {path}: No such file or directory"
        for line in open(path).read().splitlines():
            line = line.strip()
            if not line or line[0] in "#;" or "=" not in line:
                continue
            key, _, value = line.partition("=")
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            env[key.strip()] = value
    return env, None


def expand(words, env):
    """systemd's variables in an Exec line: a word that is `$NAME` becomes the value's words, `${NAME}`
    anywhere becomes the value, `$$` a dollar sign."""
    out = []
    for word in words:
        whole = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if whole:
            out += env.get(whole[1], "").split()
            continue
        out.append(re.sub(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m[1], "") if m[1] else "$", word))
    return out


def command_line(text, env):
    """An Exec line: prefixes (`-` ignore failure, `+`/`!` full privileges, `@`) and its words."""
    prefixes = ""
    while text and text[0] in "-+!@:":
        prefixes += text[0]
        text = text[1:]
    return prefixes, expand(shlex.split(text), env)


def spawn(unit, argv, env, privileged, log):
    user, group = setting(unit, "User"), setting(unit, "Group")
    cwd = (setting(unit, "WorkingDirectory") or "/").lstrip("-")
    nofile = setting(unit, "LimitNOFILE")

    demoted = user and not privileged
    if demoted:
        entry = pwd.getpwnam(user)
        gid = grp.getgrnam(group).gr_gid if group else entry.pw_gid
        env["HOME"], env["USER"], env["LOGNAME"] = entry.pw_dir, user, user

    def demote():
        os.setsid()
        if nofile:
            limit = resource.RLIM_INFINITY if nofile == "infinity" else int(nofile)
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
            except (ValueError, OSError):
                # Without CAP_SYS_RESOURCE (a sandboxed machine) the hard limit cannot be raised.
                hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
                resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        if demoted:
            os.initgroups(user, gid)
            os.setgid(gid)
            os.setuid(entry.pw_uid)

    out = setting(unit, "StandardOutput", "")
    target = log
    for prefix in ("append:", "file:"):
        if out.startswith(prefix):
            target = out[len(prefix):]
    stream = open(target, "ab")
    return subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=stream, stderr=stream, preexec_fn=demote)


def supervise(name):
    """The supervisor of one unit: runs it, restarts it on failure, stops it on SIGTERM."""
    unit = load_unit(name)
    log = f"{LOGS}/{name}.log"
    os.makedirs(LOGS, exist_ok=True)
    child = None
    stopping = False

    def stop(*_):
        # Only signals here: the main loop is inside child.wait(), which must see the exit.
        nonlocal stopping
        stopping = True
        if child is None or child.poll() is not None:
            write_status(name, state="inactive", main_pid=None)
            os._exit(0)
        def kill(sig):
            try:
                os.killpg(child.pid, sig)
            except ProcessLookupError:
                pass

        kill(getattr(signal, setting(unit, "KillSignal", "SIGTERM")))
        signal.signal(signal.SIGALRM, lambda *_: kill(signal.SIGKILL))
        signal.alarm(max(1, int(float(setting(unit, "TimeoutStopSec", "90").rstrip("s")))))

    signal.signal(signal.SIGTERM, stop)
    env, error = environment(unit)
    if error:
        with open(log, "a") as f:
            f.write(f"{name}: {error}\n")
        write_status(name, state="failed", result="resources", main_pid=None, detail=error, start_failed=True)
        return
    for line in unit.get("Service", {}).get("ExecStartPre", []):
        prefixes, argv = command_line(line, env)
        code = spawn(unit, argv, dict(env), "+" in prefixes or "!" in prefixes, log).wait()
        if code != 0 and "-" not in prefixes:
            write_status(name, state="failed", result="exit-code", exec_main_status=code, main_pid=None, start_failed=True)
            return
    restart = setting(unit, "Restart", "no")
    delay = float(setting(unit, "RestartSec", "0.1").rstrip("s"))
    while not stopping:
        prefixes, argv = command_line(setting(unit, "ExecStart", ""), env)
        try:
            child = spawn(unit, argv, dict(env), "+" in prefixes or "!" in prefixes, log)
        except OSError as error:
            with open(log, "a") as f:
                f.write(f"{name}: failed to execute {argv[0]}: {error}\n")
            write_status(name, state="failed", result="exit-code", exec_main_status=203, main_pid=None, start_failed=True)
            return
        write_status(name, state="active", main_pid=child.pid, started_at=time.time())
        code = child.wait()
        if stopping:
            write_status(name, state="inactive", main_pid=None, exec_main_status=code)
            return
        ok = code == 0 or "-" in prefixes
        write_status(name, state="inactive" if ok else "failed", main_pid=None, exec_main_status=code, result="success" if ok else "exit-code")
        if stopping or restart == "no" or (restart == "on-failure" and ok):
            return
        write_status(name, state="activating")
        time.sleep(delay)


def supervisor_pid(name):
    return read_status(name).get("supervisor_pid")


def active_state(name):
    status = read_status(name)
    if status.get("state") in ("active", "activating") and not alive(status.get("supervisor_pid")):
        return "failed"
    return status.get("state", "inactive")


def start(name):
    if active_state(name) in ("active", "activating"):
        return 0
    unit = load_unit(name)
    if unit is None:
        print(f"Failed to start {name}: Unit {name} not found.", file=sys.stderr)
        return 5
    write_status(name, state="activating", result=None, exec_main_status=None, main_pid=None, detail=None, start_failed=False)
    os.makedirs(LOGS, exist_ok=True)
    with open(f"{LOGS}/{name}.log", "ab") as log:
        supervisor = subprocess.Popen(
            ["/usr/bin/python3", os.path.abspath(__file__), "--supervise", name],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
        )
    write_status(name, supervisor_pid=supervisor.pid)
    # Like systemctl start of a simple service: return once it runs (or failed to start).
    for _ in range(200):
        status = read_status(name)
        if status.get("state") == "active" or status.get("state") == "failed" or supervisor.poll() is not None:
            break
        time.sleep(0.05)
    if read_status(name).get("start_failed"):
        print(f"Job for {name} failed. See \"journalctl -u {name}\" for details.", file=sys.stderr)
        return 1
    return 0


def stop(name):
    pid = supervisor_pid(name)
    if alive(pid):
        os.kill(pid, signal.SIGTERM)
        for _ in range(1200):
            if not alive(pid):
                break
            time.sleep(0.05)
    if active_state(name) != "failed":
        write_status(name, state="inactive", main_pid=None)
    return 0


def enable(name):
    unit = load_unit(name)
    if unit is None:
        print(f"Failed to enable unit: Unit file {name} does not exist.", file=sys.stderr)
        return 1
    for target in unit.get("Install", {}).get("WantedBy", []):
        folder = f"/etc/systemd/system/{target}.wants"
        os.makedirs(folder, exist_ok=True)
        link = f"{folder}/{name}"
        if not os.path.lexists(link):
            source = next(f"{d}/{name}" for d in UNIT_DIRS if os.path.exists(f"{d}/{name}"))
            os.symlink(source, link)
    return 0


def systemctl(args):
    flags, words, props, i = [], [], [], 0
    while i < len(args):
        a = args[i]
        if a in ("-p", "--property"):
            props.append(args[i + 1])
            i += 1
        elif a.startswith("--property="):
            props.append(a.split("=", 1)[1])
        elif a.startswith("-"):
            flags.append(a)
        else:
            words.append(a)
        i += 1
    if not words:
        return 0
    verb, names = words[0], [unit_name(n) for n in words[1:]]
    if verb == "daemon-reload":
        return 0
    code = 0
    for name in names:
        if verb == "start":
            code |= start(name)
        elif verb == "stop":
            code |= stop(name)
        elif verb == "restart":
            stop(name)
            code |= start(name)
        elif verb == "enable":
            code |= enable(name)
            if "--now" in flags:
                code |= start(name)
        elif verb == "is-active":
            state = active_state(name)
            if "--quiet" not in flags and "-q" not in flags:
                print(state)
            code |= 0 if state == "active" else 3
        elif verb == "is-enabled":
            enabled = any(os.path.lexists(f"/etc/systemd/system/{t}.wants/{name}") for t in ("multi-user.target",))
            print("enabled" if enabled else "disabled")
            code |= 0 if enabled else 1
        elif verb == "show":
            status = read_status(name)
            values = {
                "ActiveState": active_state(name),
                "MainPID": status.get("main_pid") or 0,
                "ExecMainStatus": status.get("exec_main_status") or 0,
                "Result": status.get("result") or "success",
            }
            for key in (",".join(props).split(",") if props else values):
                print(values.get(key, "") if "--value" in flags else f"{key}={values.get(key, '')}")
        elif verb == "status":
            print(f"● {name} (simulated)\n     Active: {active_state(name)}")
            journalctl(["-u", name, "-n", "10"])
            code |= 0 if active_state(name) == "active" else 3
        elif verb == "reset-failed":
            write_status(name, state="inactive", result=None)
        else:
            print(f"systemctl (simulated): {verb} is not simulated", file=sys.stderr)
            return 1
    return code


def systemd_run(args):
    """`systemd-run [--unit N] [-p K=V]... [--setenv K=V]... [--collect] [--quiet] CMD...`: a transient unit."""
    name, props, env, i = f"run-{os.getpid()}", [], [], 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        key, eq, value = a.partition("=")
        if key in ("--unit", "-u", "--property", "-p", "--setenv", "-E", "--working-directory", "--uid", "--gid", "--description"):
            if not eq:
                value = args[i + 1]
                i += 1
            if key in ("--unit", "-u"):
                name = value
            elif key in ("--property", "-p"):
                props.append(value)
            elif key in ("--setenv", "-E"):
                env.append(value)
            elif key == "--working-directory":
                props.append(f"WorkingDirectory={value}")
            elif key == "--uid":
                props.append(f"User={value}")
        i += 1
    command = args[i:]
    name = unit_name(name)
    if active_state(name) in ("active", "activating"):
        print(f"Failed to start transient service unit: Unit {name} was already loaded or has a fragment file.", file=sys.stderr)
        return 1
    os.makedirs("/run/systemd/transient", exist_ok=True)
    lines = ["[Service]", "Type=simple", *props, *[f"Environment={shlex.quote(e)}" for e in env], "ExecStart=" + shlex.join(command)]
    with open(f"/run/systemd/transient/{name}", "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"Running as unit: {name}", file=sys.stderr)
    return start(name)


def journalctl(args):
    name, lines, follow = None, None, False
    i = 0
    while i < len(args):
        if args[i] in ("-u", "--unit"):
            name = unit_name(args[i + 1])
            i += 1
        elif args[i] in ("-n", "--lines"):
            lines = int(args[i + 1])
            i += 1
        elif args[i] in ("-f", "--follow"):
            follow = True
        i += 1
    if name is None:
        print("journalctl (simulated): pass -u UNIT", file=sys.stderr)
        return 1
    log = f"{LOGS}/{name}.log"
    if not os.path.exists(log):
        print("-- No entries --")
        return 0
    cmd = ["tail", "-n", str(lines if lines is not None else 100000)] + (["-f"] if follow else []) + [log]
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    if sys.argv[1:2] == ["--supervise"]:
        name = sys.argv[2]
        write_status(name, supervisor_pid=os.getpid())
        supervise(name)
        sys.exit(0)
    tool, rest = sys.argv[1], sys.argv[2:]
    sys.exit({"systemctl": systemctl, "systemd-run": systemd_run, "journalctl": journalctl}[tool](rest))
