#!/usr/bin/env bash
# Runs on the monitor droplet (do.sh up) after infra/monitoring and the rendered scrape targets
# were copied to /opt/orders and Grafana's settings (its admin password) to the root-only
# /opt/orders/incoming: put them where Prometheus and Grafana read them, restart both.
set -euo pipefail
install -m 0600 /opt/orders/incoming/grafana.env /etc/orders/grafana.env
rm -rf /opt/orders/incoming
src=/opt/orders/monitoring
install -D -m 0644 "$src/prometheus.yml" /etc/prometheus/prometheus.yml
install -d -m 0755 /etc/prometheus/targets
install -m 0644 /opt/orders/targets/*.json /etc/prometheus/targets/
install -D -m 0644 "$src/grafana/provisioning/datasources/prometheus.yml" \
  /etc/grafana/provisioning/datasources/orders-prometheus.yml
install -D -m 0644 "$src/grafana/provisioning/dashboards/orders.yml" \
  /etc/grafana/provisioning/dashboards/orders.yml
install -D -m 0644 "$src/grafana/dashboards/orders.json" /etc/grafana/dashboards/orders.json
promtool check config /etc/prometheus/prometheus.yml
systemctl restart prometheus grafana-server
echo "prometheus and grafana restarted, on the loopback: infra/do/do.sh tunnel"
