"""The writes of `do.sh failover`, run on the first load droplet (python3 - URL KILL_FILE SECONDS
RATE < write-probe.py): a careful client of the service at URL. It inserts one order after
another, RATE a second, each with an Idempotency-Key of its own; an insert that fails (503,
outcome unknown, no answer) is sent again with the same key every 100 ms, up to 60 s, so a retry
never makes a second order. Once KILL_FILE holds the kill's time (epoch seconds, written by
do.sh), it goes on until writes are back: an insert acknowledged after the last failed attempt,
with none failing for 5 s after it (when no attempt failed after the kill, the first insert
acknowledged after it). A write acknowledged in the instant after the kill does not end the
outage, which may not have begun yet (they are counted apart). Then it reads back every order the service acknowledged (GET
/orders/ID) and prints one JSON line: what was acknowledged, read back and lost, the failed
attempts, and when writes stopped and came back. Its progress goes to stderr ("ready" after the
first acknowledged insert).
"""

import json
import sys
import time
import urllib.error
import urllib.request
import uuid

url, kill_file, seconds, rate = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])


def request(method, path, body=None, key=None):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Idempotency-Key"] = key
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=3) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, None
    except (OSError, ValueError):
        return 0, None


def order(n):
    return {
        "customer": {"id": 900000 + n % 1000, "name": "Failover Probe", "email": "probe@example.com"},
        "items": [{"product_id": 17, "sku": "SKU-17", "name": "probe item", "quantity": 1, "unit_price_cents": 100}],
        "currency": "EUR",
        "shipping": {"street": "1 Probe Street", "city": "Berlin", "postal_code": "10115", "country": "DE"},
    }


def kill_time():
    try:
        with open(kill_file) as f:
            return float(f.read().strip())
    except (OSError, ValueError):
        return None


started = time.time()
acknowledged, attempts, failed, given_up, retries = [], 0, 0, 0, 0
first_failure_after_kill = last_failure = back_at = None
resumed_at = None  # the first acknowledgement after the latest failed attempt
ready = False
n = 0
while time.time() - started < seconds:
    n += 1
    key, body, first_sent = str(uuid.uuid4()), order(n), time.time()
    while True:
        attempts += 1
        sent = time.time()
        status, answer = request("POST", "/orders", body, key)
        if status == 201 and answer and "id" in answer:
            acked = time.time()
            acknowledged.append({"id": answer["id"], "sent": first_sent, "acked": acked})
            if resumed_at is None:
                resumed_at = acked
            break
        failed += 1
        resumed_at = None
        killed = kill_time()
        if killed is not None and sent >= killed and first_failure_after_kill is None:
            first_failure_after_kill = sent
        last_failure = sent
        if time.time() - first_sent > 60:
            given_up += 1
            break
        retries += 1
        time.sleep(0.1)
    if acknowledged and not ready:
        ready = True
        print("ready", file=sys.stderr, flush=True)
    killed = kill_time()
    if killed is not None:
        if first_failure_after_kill is None:
            after = [a["acked"] for a in acknowledged if a["acked"] >= killed]
            back_at = after[0] if after else None
        else:
            back_at = resumed_at
        if back_at is not None and time.time() - back_at > 5:
            break
    time.sleep(max(0.0, 1.0 / rate - (time.time() - first_sent)))

missing = []
for a in acknowledged:
    for _ in range(50):
        status, answer = request("GET", f"/orders/{a['id']}")
        if status == 200 or status == 404:
            break
        time.sleep(0.2)
    if status != 200:
        missing.append(a["id"])
killed = kill_time()
print(json.dumps({
    "kill_at": killed,
    "attempts": attempts,
    "failed_attempts": failed,
    "retries": retries,
    "given_up": given_up,
    "acknowledged": len(acknowledged),
    "acknowledged_after_kill": len([a for a in acknowledged if killed is not None and a["sent"] >= killed]),
    "read_back": len(acknowledged) - len(missing),
    "lost": missing,
    "first_failure_after_kill": first_failure_after_kill,
    "acknowledged_after_kill_before_failure": len([a for a in acknowledged if killed is not None and a["acked"] >= killed
                                                   and (first_failure_after_kill is None or a["acked"] <= first_failure_after_kill)]),
    "last_failure": last_failure,
    "writes_back_at": back_at,
}))
