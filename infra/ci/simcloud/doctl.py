"""A fake `doctl` over the simulated cloud: the commands infra/do/do.sh uses, answering like doctl
(text columns with --format/--no-header, or JSON with -o json) from a stateful account, and
refusing what DigitalOcean refuses: unknown sizes or sizes not offered in the region, more
droplets than the account's limit, deleting a tag that does not exist, deleting the region's
default VPC (the first VPC made in a region becomes its default) or a VPC that still has members.
Creating a droplet makes its namespaces (net.py, holder.py), copies its user-data in and starts
the cloud-init emulation in the background, as a real droplet boots on its own after the API call
returned. Every change of droplets or firewalls re-applies the firewall rules of every droplet.
"""

import datetime
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import time

import net
from world import HERE, kill_holder, locked_state, nsenter, read_state, run

REGIONS = {"fra1": "Frankfurt 1", "ams3": "Amsterdam 3", "nyc3": "New York 3"}
# slug: vcpus, memory MB, usd/hour, regions ("*": all)
SIZES = {
    "s-1vcpu-2gb": (1, 2048, 0.01786, "*"),
    "s-2vcpu-4gb": (2, 4096, 0.03571, "*"),
    "s-4vcpu-8gb": (4, 8192, 0.07143, "*"),
    "c-2": (2, 4096, 0.0625, "*"),
    "c-4": (4, 8192, 0.125, "*"),
    "c-8": (8, 16384, 0.25, "*"),
    "c-16": (16, 32768, 0.5, "fra1 nyc3"),
    "g-2vcpu-8gb": (2, 8192, 0.09375, "*"),
}
BOOLEAN = {"--force", "-f", "--no-header", "--wait", "--enable-ipv6", "--enable-monitoring", "--default"}


class ApiError(Exception):
    pass


def parse(argv):
    words, flags = [], {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("-") and a not in ("-",):
            name, eq, value = a.partition("=")
            if name in BOOLEAN:
                flags[name] = "true"
            elif eq:
                flags[name] = value
            else:
                flags[name] = argv[i + 1] if i + 1 < len(argv) else ""
                i += 1
        else:
            words.append(a)
        i += 1
    if "-o" in flags:
        flags["--output"] = flags.pop("-o")
    if "-f" in flags:
        flags["--force"] = flags.pop("-f")
    return words, flags


def size_json(slug):
    vcpus, memory, hourly, regions = SIZES[slug]
    return {
        "slug": slug,
        "memory": memory,
        "vcpus": vcpus,
        "disk": 25 * vcpus,
        "price_monthly": round(hourly * 672, 2),
        "price_hourly": hourly,
        "regions": sorted(REGIONS) if regions == "*" else regions.split(),
        "available": True,
        "description": "simulated",
    }


def droplet_json(d):
    return {
        "id": d["id"],
        "name": d["name"],
        "memory": SIZES[d["size_slug"]][1],
        "vcpus": SIZES[d["size_slug"]][0],
        "status": d["status"],
        "region": {"slug": d["region"], "name": REGIONS[d["region"]]},
        "image": {"slug": d["image"]},
        "size_slug": d["size_slug"],
        "size": size_json(d["size_slug"]),
        "networks": {
            "v4": [
                {"ip_address": d["public_ip"], "type": "public"},
                {"ip_address": d["private_ip"], "type": "private"},
            ]
        },
        "tags": d["tags"],
        "vpc_uuid": d["vpc_uuid"],
    }


def vpc_json(v):
    return {k: v[k] for k in ("id", "urn", "name", "description", "region", "ip_range", "created_at", "default")}


def firewall_json(f):
    return {"id": f["id"], "name": f["name"], "tags": f["tags"], "inbound_rules": f["inbound"], "outbound_rules": f["outbound"], "status": "succeeded"}


COLUMNS = {
    "droplet": {"ID": "id", "Name": "name", "PublicIPv4": "public_ip", "PrivateIPv4": "private_ip", "Region": "region", "Status": "status", "Tags": "tags", "VPCUUID": "vpc_uuid", "SizeSlug": "size_slug"},
    "vpc": {"ID": "id", "URN": "urn", "Name": "name", "Description": "description", "IPRange": "ip_range", "Region": "region", "Created": "created_at", "Default": "default"},
    "firewall": {"ID": "id", "Name": "name", "Status": "status", "Tags": "tags"},
    "tag": {"Name": "name", "DropletCount": "count"},
    "size": {"Slug": "slug", "Memory": "memory", "VCPUs": "vcpus", "PriceHourly": "price_hourly", "PriceMonthly": "price_monthly"},
    "account": {"Email": "email", "DropletLimit": "droplet_limit", "Status": "status", "UUID": "uuid"},
    "sshkey": {"ID": "id", "Name": "name", "FingerPrint": "fingerprint"},
    "region": {"Slug": "slug", "Name": "name", "Available": "available"},
}
DEFAULT_FORMAT = {"droplet": "ID,Name,PublicIPv4,PrivateIPv4,Status,Tags", "vpc": "ID,Name,IPRange,Region,Default", "firewall": "ID,Name,Status,Tags", "tag": "Name,DropletCount", "size": "Slug,Memory,VCPUs,PriceHourly", "account": "Email,DropletLimit,Status", "sshkey": "ID,Name,FingerPrint", "region": "Slug,Name,Available"}


def output(kind, rows, flags, as_json):
    """Prints rows (dicts) as doctl does: JSON with -o json, else columns."""
    if flags.get("--output") == "json":
        print(json.dumps(as_json, indent=2))
        return
    names = (flags.get("--format") or DEFAULT_FORMAT[kind]).split(",")
    lines = [] if flags.get("--no-header") else [names]
    for row in rows:
        cells = []
        for name in names:
            value = row.get(COLUMNS[kind][name], "")
            if isinstance(value, list):
                value = ",".join(str(v) for v in value)
            cells.append(str(value).lower() if isinstance(value, bool) else str(value))
        lines.append(cells)
    for cells in lines:
        print("\t".join(cells))


def new_id(state):
    state["next_id"] += 1
    return state["next_id"]


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def need_tags(state, names):
    for name in names:
        if name and name not in state["tags"]:
            state["tags"].append(name)


def create_droplet(state, name, flags):
    region, size = flags.get("--region", ""), flags.get("--size", "")
    if region not in REGIONS:
        raise ApiError(f"POST /v2/droplets: 422 region {region} is not available")
    if size not in SIZES or region not in size_json(size)["regions"]:
        raise ApiError(f"POST /v2/droplets: 422 Size is not available in this region ({size} in {region})")
    if len(state["droplets"]) >= state["account"]["droplet_limit"]:
        raise ApiError("POST /v2/droplets: 422 creating this/these droplet(s) will exceed your droplet limit")
    vpcs = [v for v in state["vpcs"] if v["id"] == flags.get("--vpc-uuid")] or [v for v in state["vpcs"] if v["region"] == region and v["default"]]
    if not vpcs:
        vpcs = [make_vpc(state, f"default-{region}", region, None, "")]
    vpc = vpcs[0]
    if vpc["region"] != region:
        raise ApiError(f"POST /v2/droplets: 422 VPC {vpc['id']} is not in {region}")
    tags = [t for t in flags.get("--tag-names", "").split(",") if t]
    need_tags(state, tags)
    droplet_id = new_id(state)
    state["next_host"] += 1
    host = state["next_host"]
    public = ipaddress.ip_address("198.18.0.0") + host
    vpc["next_host"] += 1
    private = ipaddress.ip_network(vpc["ip_range"]).network_address + vpc["next_host"]
    droplet = {
        "id": droplet_id,
        "name": name,
        "region": region,
        "size_slug": size,
        "image": flags.get("--image", ""),
        "tags": tags,
        "vpc_uuid": vpc["id"],
        "public_ip": str(public),
        "private_ip": str(private),
        "netns": f"{state['prefix']}-d{droplet_id}",
        "dir": os.path.join(state["world"], "droplets", str(droplet_id)),
        "status": "new",
        "holder_pid": None,
    }
    state["droplets"].append(droplet)
    if state.get("network", True):
        boot(state, droplet, vpc, flags.get("--user-data-file"))
    else:
        droplet["status"] = "active"
    return droplet


def holder_of(launcher):
    """The child of `unshare` (PID 1 of the droplet's PID namespace), by its parent."""
    for _ in range(200):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == launcher:
                return int(entry)
        time.sleep(0.05)
    raise ApiError("simcloud: the droplet's holder did not start")


def boot(state, droplet, vpc, user_data):
    os.makedirs(droplet["dir"], exist_ok=True)
    net.attach(state, droplet, vpc)
    log = open(os.path.join(droplet["dir"], "holder.log"), "w")
    launcher = subprocess.Popen(
        ["ip", "netns", "exec", droplet["netns"], "unshare", "--pid", "--fork", "--mount-proc", "--uts", "--ipc",
         "--propagation", "private", "/usr/bin/python3", os.path.join(HERE, "holder.py"), droplet["name"], droplet["dir"],
         *state.get("keep", [])],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, cwd="/",
    )
    droplet["launcher_pid"] = launcher.pid
    droplet["holder_pid"] = holder_of(launcher.pid)
    for _ in range(200):
        if os.path.exists(os.path.join(droplet["dir"], "ready")):
            break
        if launcher.poll() is not None:
            raise ApiError(f"simcloud: droplet {droplet['name']} failed to boot: {open(log.name).read()}")
        time.sleep(0.05)
    else:
        raise ApiError(f"simcloud: droplet {droplet['name']} did not boot")
    droplet["status"] = "active"
    if user_data:
        with open(user_data, "rb") as f:
            # Readable by root only, as cloud-init keeps it (it holds the deployment's passwords).
            store = "umask 077 && mkdir -p /var/lib/cloud/instance && cat >/var/lib/cloud/instance/user-data.txt"
            run(nsenter(droplet, ["sh", "-c", store]), input=f.read().decode())
        start = f"setsid /usr/bin/python3 '{HERE}/cloudinit.py' run </dev/null >/var/log/cloud-init-output.log 2>&1 &"
        run(nsenter(droplet, ["sh", "-c", start]))


def delete_droplet(state, droplet):
    kill_holder(droplet)
    run(["ip", "netns", "del", droplet["netns"]], check=False)
    shutil.rmtree(droplet["dir"], ignore_errors=True)
    state["droplets"].remove(droplet)


def make_vpc(state, name, region, ip_range, description):
    index = len(state.get("vpc_indexes", [])) + 1
    state.setdefault("vpc_indexes", []).append(index)
    vpc_id = f"vpc-{new_id(state)}"
    default = not any(v["region"] == region for v in state["vpcs"])
    vpc = {
        "id": vpc_id,
        "urn": f"do:vpc:{vpc_id}",
        "name": name,
        "description": description,
        "region": region,
        "ip_range": ip_range or f"10.{100 + index}.0.0/20",
        "created_at": now(),
        "default": default,
        "index": index,
        "next_host": 1,
    }
    state["vpcs"].append(vpc)
    return vpc


def find(items, key_value, *keys):
    for item in items:
        if any(str(item[k]) == key_value for k in keys):
            return item
    return None


def main(argv):
    words, flags = parse(argv)
    cmd = " ".join(words[:3])
    if words[:2] == ["account", "get"]:
        account = read_state()["account"]
        return output("account", [account], flags, account)
    if words[:3] == ["compute", "ssh-key", "list"]:
        keys = read_state()["ssh_keys"]
        return output("sshkey", keys, flags, keys)
    if words[:3] == ["compute", "size", "list"]:
        sizes = [size_json(s) for s in SIZES]
        return output("size", sizes, flags, sizes)
    if words[:3] == ["compute", "region", "list"]:
        regions = [{"slug": r, "name": n, "available": True, "sizes": [s for s in SIZES if r in size_json(s)["regions"]]} for r, n in REGIONS.items()]
        return output("region", regions, flags, regions)
    with locked_state() as state:
        if words[:3] == ["compute", "tag", "list"]:
            rows = [{"name": t, "count": sum(t in d["tags"] for d in state["droplets"])} for t in state["tags"]]
            return output("tag", rows, flags, rows)
        if words[:3] == ["compute", "tag", "create"]:
            need_tags(state, words[3:4])
            return output("tag", [{"name": words[3], "count": 0}], flags, {"name": words[3]})
        if words[:3] == ["compute", "tag", "delete"]:
            for name in words[3:]:
                if name not in state["tags"]:
                    raise ApiError(f"DELETE /v2/tags/{name}: 404 (request \"simcloud\") tag not found")
                state["tags"].remove(name)
            return None
        if words[:2] == ["vpcs", "list"]:
            return output("vpc", state["vpcs"], flags, [vpc_json(v) for v in state["vpcs"]])
        if words[:2] == ["vpcs", "create"]:
            vpc = make_vpc(state, flags.get("--name", ""), flags.get("--region", ""), flags.get("--ip-range"), flags.get("--description", ""))
            return output("vpc", [vpc], flags, vpc_json(vpc))
        if words[:2] == ["vpcs", "delete"]:
            vpc = find(state["vpcs"], words[2], "id")
            if vpc is None:
                raise ApiError(f"DELETE /v2/vpcs/{words[2]}: 404 vpc not found")
            if vpc["default"]:
                raise ApiError(f"DELETE /v2/vpcs/{vpc['id']}: 403 (request \"simcloud\") cannot delete the default VPC of a region")
            if any(d["vpc_uuid"] == vpc["id"] for d in state["droplets"]):
                raise ApiError(f"DELETE /v2/vpcs/{vpc['id']}: 409 (request \"simcloud\") VPC has members")
            state["vpcs"].remove(vpc)
            return None
        if words[:3] == ["compute", "firewall", "list"]:
            return output("firewall", [dict(f, status="succeeded") for f in state["firewalls"]], flags, [firewall_json(f) for f in state["firewalls"]])
        if words[:3] in (["compute", "firewall", "create"], ["compute", "firewall", "update"]):
            tags = [t for t in flags.get("--tag-names", "").split(",") if t]
            missing = [t for t in tags if t not in state["tags"]]
            if missing:
                raise ApiError(f"firewall: 422 tag(s) {','.join(missing)} do not exist")
            if words[2] == "create":
                firewall = {"id": f"fw-{new_id(state)}"}
                state["firewalls"].append(firewall)
            else:
                firewall = find(state["firewalls"], words[3], "id")
                if firewall is None:
                    raise ApiError(f"PUT /v2/firewalls/{words[3]}: 404 firewall not found")
            firewall.update(name=flags.get("--name", ""), tags=tags, inbound=flags.get("--inbound-rules", ""), outbound=flags.get("--outbound-rules", ""))
            net.apply_firewalls(state)
            return output("firewall", [dict(firewall, status="succeeded")], flags, [firewall_json(firewall)])
        if words[:3] == ["compute", "firewall", "delete"]:
            firewall = find(state["firewalls"], words[3], "id")
            if firewall is None:
                raise ApiError(f"DELETE /v2/firewalls/{words[3]}: 404 firewall not found")
            state["firewalls"].remove(firewall)
            net.apply_firewalls(state)
            return None
        if words[:3] == ["compute", "droplet", "list"]:
            tag = flags.get("--tag-name")
            rows = [d for d in state["droplets"] if not tag or tag in d["tags"]]
            return output("droplet", rows, flags, [droplet_json(d) for d in rows])
        if words[:3] == ["compute", "droplet", "create"]:
            made = [create_droplet(state, name, flags) for name in words[3:]]
            net.apply_firewalls(state)
            return output("droplet", made, flags, [droplet_json(d) for d in made])
        if words[:3] == ["compute", "droplet", "delete"]:
            tag = flags.get("--tag-name")
            if tag:
                doomed = [d for d in state["droplets"] if tag in d["tags"]]
            else:
                doomed = [find(state["droplets"], w, "id", "name") for w in words[3:]]
                if None in doomed:
                    raise ApiError("DELETE /v2/droplets: 404 droplet not found")
            for droplet in doomed:
                delete_droplet(state, droplet)
            net.apply_firewalls(state)
            return None
    raise ApiError(f"simcloud doctl: command not simulated: {cmd} {flags}")


if __name__ == "__main__":
    try:
        main(sys.argv[2:])
    except ApiError as error:
        print(f"Error: {error}", file=sys.stderr)
        sys.exit(1)
