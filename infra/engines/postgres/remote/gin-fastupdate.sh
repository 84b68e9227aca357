#!/usr/bin/env bash
# Runs on the postgres-db droplet (do.sh toggle PG_GIN_FASTUPDATE=on|off): what orders-pg runs for
# its PG_GIN_FASTUPDATE setting (services/orders-pg/src/migrate.rs, set_gin_fastupdate), as the
# role that owns the index, orders_owner, in a session of its own. ALTER INDEX and
# gin_clean_pending_list are the owner's rights, which the service's own role does not have on
# droplets (docs/security.md), so there the toggle is applied here rather than in the service's
# environment. It takes effect at once, with no restart, and survives reseeding (the seeder
# rebuilds the index with the options it had).
# usage: gin-fastupdate.sh on|off
set -euo pipefail
case ${1:-} in
  on | off) setting=$1 ;;
  *) echo "usage: gin-fastupdate.sh on|off" >&2; exit 2 ;;
esac
# shellcheck source=/dev/null
. /etc/orders/pg-cluster.env
cd /
# orders_owner's own session (setup.sh gives the postgres system user that login), not SET ROLE in
# the superuser's: nothing the owner or orders_loader made can run with more than the owner's rights.
psql_as_owner() { runuser -u postgres -- "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h /var/run/postgresql -U orders_owner -d orders "$@"; }
{
  printf 'ALTER INDEX orders_items SET (fastupdate = %s);\n' "$setting"
  # `off` also flushes the pending list into the index, as the service does.
  if [ "$setting" = off ]; then printf "SELECT gin_clean_pending_list('orders_items'::regclass) AS flushed_pages \\\\gset\n"; fi
} | psql_as_owner
echo "orders_items: $(psql_as_owner -At -c "SELECT array_to_string(reloptions, ', ') FROM pg_class WHERE oid = 'orders_items'::regclass"), set as orders_owner"
