"""The simulated cloud's network: a droplet's namespace on the public bridge and on its VPC's
bridge, and the cloud firewalls as nftables rules inside every droplet's namespace.

DigitalOcean's semantics: a droplet no firewall applies to accepts everything; a droplet with
firewalls (by tag or id) accepts inbound only what one of their inbound rules allows (sources by
address or by tag: every address of every droplet carrying the tag) and sends only what an
outbound rule allows; replies to allowed traffic always pass. The rules are regenerated from the
account's state after every change of droplets or firewalls, so what `do.sh` asked doctl for is
exactly what is enforced.
"""

import ipaddress
import os

from world import PUBLIC_PREFIX, ns_names, run


def vpc_bridge(state, vpc):
    net, _ = ns_names(state)
    name = f"brv{vpc['index']}"
    links = run(["ip", "-n", net, "-o", "link", "show"], check=False).stdout
    if f": {name}:" not in links and f": {name}@" not in links:
        run(["ip", "-n", net, "link", "add", name, "type", "bridge"])
        run(["ip", "-n", net, "link", "set", name, "up"])
    return name


def attach(state, droplet, vpc):
    """Creates the droplet's network namespace: eth0 on the public bridge, eth1 on the VPC's."""
    net, _ = ns_names(state)
    ns = droplet["netns"]
    short = f"{state['prefix']}d{droplet['id'] - 1000}"
    run(["ip", "netns", "add", ns])
    run(["ip", "-n", ns, "link", "set", "lo", "up"])
    for dev, peer, bridge, addr, prefix in (
        ("eth0", f"{short}p", "brpub", droplet["public_ip"], PUBLIC_PREFIX),
        ("eth1", f"{short}v", vpc_bridge(state, vpc), droplet["private_ip"], ipaddress.ip_network(vpc["ip_range"]).prefixlen),
    ):
        run(["ip", "-n", net, "link", "add", peer, "type", "veth", "peer", "name", dev, "netns", ns])
        run(["ip", "-n", net, "link", "set", peer, "master", bridge, "up"])
        run(["ip", "-n", ns, "addr", "add", f"{addr}/{prefix}", "dev", dev])
        run(["ip", "-n", ns, "link", "set", dev, "up"])


def parse_rules(text):
    """`protocol:tcp,ports:22,address:1.2.3.4/32 protocol:...` → [{'protocol': ['tcp'], ...}]."""
    rules = []
    for part in (text or "").split():
        rule = {}
        for item in part.split(","):
            key, _, value = item.partition(":")
            rule.setdefault(key, []).append(value)
        rules.append(rule)
    return rules


def addresses(state, rule, key):
    """IPv4 networks a rule names by `address`/`tag`/`droplet_id` (IPv6 ones do not exist here)."""
    nets = []
    for value in rule.get("address", []):
        if ":" not in value:
            nets.append(ipaddress.ip_network(value, strict=False))
    for tag in rule.get("tag", []):
        for d in state["droplets"]:
            if tag in d["tags"]:
                nets += [ipaddress.ip_network(d["public_ip"]), ipaddress.ip_network(d["private_ip"])]
    for value in rule.get("droplet_id", []):
        for d in state["droplets"]:
            if str(d["id"]) == value:
                nets += [ipaddress.ip_network(d["public_ip"]), ipaddress.ip_network(d["private_ip"])]
    return [str(n) for n in ipaddress.collapse_addresses(nets)]


def nft_rule(state, rule, direction):
    nets = addresses(state, rule, direction)
    if not nets:
        return None
    match = f"ip {'saddr' if direction == 'in' else 'daddr'} {{ {', '.join(nets)} }}"
    protocol = (rule.get("protocol") or ["tcp"])[0]
    if protocol == "icmp":
        return f"{match} ip protocol icmp accept"
    ports = (rule.get("ports") or ["all"])[0]
    if ports in ("all", "0", ""):
        return f"{match} meta l4proto {protocol} accept"
    return f"{match} {protocol} dport {ports} accept"


def ruleset(state, droplet):
    """The nftables ruleset of one droplet, or just a flush when no firewall applies to it."""
    firewalls = [
        f for f in state["firewalls"] if set(f["tags"]) & set(droplet["tags"]) or droplet["id"] in f.get("droplet_ids", [])
    ]
    lines = ["flush ruleset"]
    if not firewalls:
        return "\n".join(lines) + "\n"
    chains = {}
    for direction, hook in (("in", "input"), ("out", "output")):
        body = [
            f"    type filter hook {hook} priority 0; policy drop;",
            "    ct state established,related accept",
            f"    {'iif' if direction == 'in' else 'oif'} \"lo\" accept",
        ]
        for f in firewalls:
            for rule in parse_rules(f["inbound" if direction == "in" else "outbound"]):
                line = nft_rule(state, rule, direction)
                if line:
                    body.append(f"    {line}  # firewall {f['name']}")
        chains[hook] = body
    lines.append("table inet simcloud_firewall {")
    for hook, body in chains.items():
        lines += [f"  chain {hook} {{", *body, "  }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def apply_firewalls(state):
    if not state.get("network", True):
        return
    folder = os.path.join(state["world"], "nft")
    os.makedirs(folder, exist_ok=True)
    for droplet in state["droplets"]:
        if not droplet.get("holder_pid"):
            continue
        path = os.path.join(folder, f"{droplet['name']}.nft")
        with open(path, "w") as f:
            f.write(ruleset(state, droplet))
        run(["ip", "netns", "exec", droplet["netns"], "nft", "-f", path])
