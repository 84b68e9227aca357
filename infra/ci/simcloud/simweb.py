"""A stand-in for Grafana on the simulated monitor droplet, where it is not installed (it is not in
Debian's packages; Prometheus is, and runs for real): an HTTP server that listens where Grafana
would, from the settings the droplet gives it (GF_SERVER_HTTP_ADDR and GF_SERVER_HTTP_PORT in its
unit's environment; default every address, port 3000), and answers every GET with one line naming
itself. So a test sees whether a tunnel reaches it and whether anything else can.

    python3 simweb.py grafana
"""

import http.server
import os
import sys


def listen_address():
    return os.environ.get("GF_SERVER_HTTP_ADDR") or "0.0.0.0", int(os.environ.get("GF_SERVER_HTTP_PORT") or 3000)


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
    if name != "grafana":
        sys.exit(f"simweb: only grafana is simulated, not {name}")
    address = listen_address()
    server = http.server.ThreadingHTTPServer(address, Answer)
    server.name = name
    print(f"simweb: {name} (simulated) on {address[0]}:{address[1]}", flush=True)
    server.serve_forever()
