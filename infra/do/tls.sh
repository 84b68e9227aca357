# shellcheck shell=bash
# TLS between the services and their databases on droplets (docs/security.md, "On droplets"): a CA
# made by `up` on the operator's machine (STATE_DIR/tls/, 0700; its key 0600, never sent anywhere),
# and for every database droplet a key and a certificate that CA signs for the names the services
# and the load droplets use: the droplet's VPC address (and 127.0.0.1, for the droplet's own local
# clients that must speak TLS too: mongod's requireTLS has no plaintext loopback). A database
# droplet gets its own key and certificate and the CA's certificate; an app or load droplet the
# CA's certificate alone. openssl prints no key; its output goes nowhere, so nothing reaches a log.

TLS_CA_DAYS=${TLS_CA_DAYS:-825}
# Where the droplets keep the CA's certificate (the services' sslrootcert= / tlsCAFile=).
# shellcheck disable=SC2034 # read by cmd-up.sh (do.sh sources both)
TLS_REMOTE_CA=/etc/orders/tls/ca.crt

tls_dir() { printf '%s/tls' "$STATE_DIR"; }

# tls_run COMMAND...: openssl quietly; on failure its messages (openssl never prints a key).
tls_run() {
  local out
  out=$("$@" 2>&1) || die "openssl failed ($1 $2): $out"
}

# The deployment's CA, made once (a later `up` keeps it, so the droplets' certificates stay valid).
tls_ca() {
  local dir
  dir=$(tls_dir)
  command -v openssl >/dev/null || die "openssl not found: up makes the databases' CA with it (apt install openssl, brew install openssl)"
  (umask 077 && mkdir -p "$dir")
  chmod 0700 "$dir"
  [ -s "$dir/ca.key" ] && [ -s "$dir/ca.crt" ] && return 0
  (
    umask 077
    tls_run openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$TLS_CA_DAYS" -sha256 \
      -subj "/CN=$TAG databases CA" -addext basicConstraints=critical,CA:TRUE \
      -addext keyUsage=critical,keyCertSign,cRLSign -keyout "$dir/ca.key" -out "$dir/ca.crt"
  )
  chmod 0644 "$dir/ca.crt"
}

# tls_server_cert ROLE IP: ROLE.key and ROLE.crt for a database droplet, for IP (its VPC address)
# and 127.0.0.1; made again when the address changed (a recreated droplet). serverAuth and
# clientAuth: a replica set's members present it to each other too.
tls_server_cert() {
  local role=$1 ip=$2 dir names
  dir=$(tls_dir)
  names="IP:$ip,IP:127.0.0.1,DNS:localhost"
  if [ -s "$dir/$role.crt" ] && [ -s "$dir/$role.key" ] && [ "$(cat "$dir/$role.names" 2>/dev/null)" = "$names" ]; then
    return 0
  fi
  (
    umask 077
    printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n' \
      "$names" >"$dir/$role.ext"
    tls_run openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$TAG-$role" \
      -keyout "$dir/$role.key" -out "$dir/$role.csr"
    tls_run openssl x509 -req -in "$dir/$role.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
      -days "$TLS_CA_DAYS" -sha256 -extfile "$dir/$role.ext" -out "$dir/$role.crt"
    rm -f "$dir/$role.csr" "$dir/$role.ext" "$dir/ca.srl"
    printf '%s\n' "$names" >"$dir/$role.names"
  )
}

# tls_render: the CA, and a certificate for every database droplet (members of a replicated
# database each their own), for its VPC address. Under DRY_RUN nothing is made.
tls_render() {
  local role
  dry && return 0
  tls_ca
  for role in $(roles); do
    case $(role_base "$role") in *-db) tls_server_cert "$role" "$(need_ip "$role" private)" ;; esac
  done
}

# tls_files ROLE: the local files a database droplet gets (sent into /opt/orders/incoming): its key
# and certificate as server.key, server.crt (copies under those names), and the CA's certificate.
tls_files() {
  local dir out
  dir=$(tls_dir)
  out=$dir/out/$1
  if ! dry; then
    (umask 077 && mkdir -p "$out")
    cp "$dir/$1.key" "$out/server.key"
    cp "$dir/$1.crt" "$out/server.crt"
    cp "$dir/ca.crt" "$out/ca.crt"
  fi
  printf '%s\n' "$out/server.key" "$out/server.crt" "$out/ca.crt"
}
