#!/usr/bin/env bash
# Runs on the monitor droplet (do.sh up) after infra/monitoring and the rendered scrape targets
# were copied to /opt/orders and Grafana's settings (its admin password) to the root-only
# /opt/orders/incoming: put them where Prometheus and Grafana read them, restart both.
# Prometheus listens on ADDRESS, this droplet's VPC address and port, alone (not the loopback, not
# the public address): the load droplets push their k6 and orders-bench figures to it (remote
# write, latencies as native histograms; the cloud firewall admits only them), it scrapes itself
# there, Grafana reads it there, and do.sh tunnel forwards to it. Grafana stays on the loopback.
# usage: setup-monitor.sh ADDRESS   (e.g. 10.110.0.9:9090)
set -euo pipefail
listen=${1:?usage: setup-monitor.sh ADDRESS}
install -m 0600 /opt/orders/incoming/grafana.env /etc/orders/grafana.env
rm -rf /opt/orders/incoming
src=/opt/orders/monitoring
install -d -m 0755 /etc/prometheus
sed "s|\"localhost:9090\"|\"$listen\"|" "$src/prometheus.yml" >/etc/prometheus/prometheus.yml
chmod 0644 /etc/prometheus/prometheus.yml
install -d -m 0755 /etc/prometheus/targets
install -m 0644 /opt/orders/targets/*.json /etc/prometheus/targets/
printf 'ARGS="--web.listen-address=%s --web.enable-remote-write-receiver --enable-feature=native-histograms"\n' "$listen" \
  >/etc/default/prometheus
install -D -m 0644 "$src/grafana/provisioning/datasources/prometheus.yml" \
  /etc/grafana/provisioning/datasources/orders-prometheus.yml
install -D -m 0644 "$src/grafana/provisioning/dashboards/orders.yml" \
  /etc/grafana/provisioning/dashboards/orders.yml
install -D -m 0644 "$src/grafana/dashboards/orders.json" /etc/grafana/dashboards/orders.json
promtool check config /etc/prometheus/prometheus.yml
systemctl restart prometheus grafana-server
curl -fsS --retry 30 --retry-delay 1 --retry-connrefused -o /dev/null "http://$listen/-/ready"
echo "prometheus on $listen (remote write from the load droplets), grafana on the loopback: infra/do/do.sh tunnel"
