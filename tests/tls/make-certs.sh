#!/usr/bin/env bash
# Makes the certificates of the TLS tests, fresh at every run, with the openssl command:
#   ca.pem / ca.key            a test CA
#   server.pem / server.key    127.0.0.1 and localhost, signed by the CA
#   expired.pem                the same names and key, valid only in January 2020
#   wrong-host.pem             signed by the CA, for wrong.example only (same key)
#   self-signed.pem / .key     127.0.0.1, signed by itself (an unknown CA)
#   client.pem / client.key    a client certificate for mutual TLS, signed by the CA
# usage: make-certs.sh DIR
set -euo pipefail
dir="$1"
rm -rf "$dir"
mkdir -p "$dir/db"
cd "$dir"
: > db/index.txt
echo 1000 > db/serial
cat > ca.cnf <<'CNF'
[ ca ]
default_ca = test_ca
[ test_ca ]
dir = .
database = ./db/index.txt
serial = ./db/serial
new_certs_dir = ./db
default_md = sha256
policy = any
copy_extensions = none
unique_subject = no
[ any ]
commonName = supplied
[ server_ext ]
subjectAltName = IP:127.0.0.1,DNS:localhost
basicConstraints = CA:FALSE
[ wrong_ext ]
subjectAltName = DNS:wrong.example
basicConstraints = CA:FALSE
[ client_ext ]
basicConstraints = CA:FALSE
extendedKeyUsage = clientAuth
CNF
q() { "$@" >/dev/null 2>&1 || { echo "make-certs: failed: $*" >&2; exit 1; }; }
q openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 -subj "/CN=prodsm test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
q openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1"
sign() {  # out ext days|dates...
  local out="$1" ext="$2"; shift 2
  q openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in server.csr -out "$out" -extensions "$ext" -notext "$@"
}
sign server.pem server_ext -days 30
sign expired.pem server_ext -startdate 20200101000000Z -enddate 20200102000000Z
sign wrong-host.pem wrong_ext -days 30
q openssl req -x509 -newkey rsa:2048 -nodes -keyout self-signed.key -out self-signed.pem -days 30 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1,DNS:localhost"
q openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj "/CN=prodsm test client"
q openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in client.csr -out client.pem -extensions client_ext \
  -notext -days 30
echo "$dir"
