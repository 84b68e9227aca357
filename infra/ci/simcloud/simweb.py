"""A stand-in for Grafana or Prometheus on the simulated monitor droplet, where neither is
installed: an HTTP server that listens where the real one would, from the same settings the
droplet gives the real one (Grafana: GF_SERVER_HTTP_ADDR and GF_SERVER_HTTP_PORT in its unit's
environment, default every address, port 3000; Prometheus: `--web.listen-address` in ARGS of
/etc/default/prometheus, default every address, port 9090), and answers every GET with one line
naming itself. So a test sees whether a tunnel reaches it and whether anything else can.

    python3 simweb.py grafana|prometheus
"""

import http.server
import os
import re
import sys


def listen_address(name):
    if name == "grafana":
        return os.environ.get("GF_SERVER_HTTP_ADDR") or "0.0.0.0", int(os.environ.get("GF_SERVER_HTTP_PORT") or 3000)
    match = re.search(r"--web\.listen-address[= ]([^\s\"']*):(\d+)", os.environ.get("ARGS", ""))
    return (match[1] or "0.0.0.0", int(match[2])) if match else ("0.0.0.0", 9090)


class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"{self.server.name} (simulated)\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    name = sys.argv[1]
    address = listen_address(name)
    server = http.server.ThreadingHTTPServer(address, Answer)
    server.name = name
    print(f"simweb: {name} (simulated) on {address[0]}:{address[1]}", flush=True)
    server.serve_forever()
