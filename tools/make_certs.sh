#!/usr/bin/env bash
# Makes what a robot team needs for rogd's TLS, mutual TLS and bearer
# tokens (docs/operations.md "Security"), with openssl alone:
#
#   tools/make_certs.sh DIR server NAME [NAME...]  rogd's certificate, valid for these DNS
#                                                  names and IP addresses (the first one
#                                                  names the files: DIR/NAME.pem, DIR/NAME.key)
#   tools/make_certs.sh DIR client ID [ID...]      a client certificate per robot or rogctl user
#                                                  (DIR/ID.pem, DIR/ID.key)
#   tools/make_certs.sh DIR tokens                 DIR/worker.token and DIR/admin.token
#
# The team's CA (DIR/ca.pem, which every side trusts, and DIR/ca.key, which
# signs) is made on first use and reused after, so robots can be added
# later. Keys are EC P-256, unencrypted, mode 600. Keep ca.key off the
# robots: only rogd's machine needs its own key, and each robot its own.
#
# Options, before DIR: --days=N (validity, default 825), or exact dates
# --start=YYYYMMDDHHMMSSZ --end=YYYYMMDDHHMMSSZ (tests use past dates to
# make an expired certificate). --ca_name=TEXT names a new CA.
set -euo pipefail

days=825
start=""
end=""
ca_name="ROG team CA"
while [ $# -gt 0 ]; do
  case "$1" in
    --days=*) days="${1#*=}" ;;
    --start=*) start="${1#*=}" ;;
    --end=*) end="${1#*=}" ;;
    --ca_name=*) ca_name="${1#*=}" ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "make_certs: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
if [ $# -lt 2 ]; then
  echo "usage: make_certs.sh [--days=N] DIR server NAME... | DIR client ID... | DIR tokens" >&2
  exit 2
fi
dir="$1"
what="$2"
shift 2
command -v openssl >/dev/null || { echo "make_certs: openssl is missing (apt-get install openssl)" >&2; exit 2; }
umask 077
mkdir -p "$dir"

valid_name() { [[ "$1" =~ ^[A-Za-z0-9._:-]+$ ]]; }

new_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# run_ca CSR OUT EXTENSIONS [openssl ca options...]: the team CA signs CSR
# into OUT (mode 644).
run_ca() {
  local csr="$1" out="$2" ext="$3" db="$dir/ca.db"
  shift 3
  mkdir -p "$db"
  [ -f "$db/index.txt" ] || : >"$db/index.txt"
  [ -f "$db/serial" ] || openssl rand -hex 16 >"$db/serial"
  cat >"$db/ca.cnf" <<EOF
[ca]
default_ca = team
[team]
database = $db/index.txt
serial = $db/serial
new_certs_dir = $db
certificate = $dir/ca.pem
private_key = $dir/ca.key
default_md = sha256
default_days = $days
policy = any_name
unique_subject = no
[any_name]
commonName = supplied
EOF
  printf '%s\n' "$ext" >"$db/ext"
  # Valid from an hour ago unless told: a robot whose clock is a little
  # behind this machine's still accepts the certificate.
  local dates=(-startdate "${start:-$(date -u -d '-1 hour' +%Y%m%d%H%M%SZ)}")
  [ -n "$end" ] && dates+=(-enddate "$end")
  if ! openssl ca -batch -config "$db/ca.cnf" -notext "${dates[@]}" -extfile "$db/ext" \
      -in "$csr" -out "$out" "$@" >"$db/log" 2>&1; then
    cat "$db/log" >&2
    exit 1
  fi
  chmod 644 "$out"
}

ensure_ca() {
  [ -f "$dir/ca.key" ] && [ -f "$dir/ca.pem" ] && return 0
  new_key "$dir/ca.key"
  mkdir -p "$dir/ca.db"
  openssl req -new -key "$dir/ca.key" -subj "/CN=$ca_name" -out "$dir/ca.db/ca.csr" 2>/dev/null
  # Self-signed through `openssl ca`, which dates it like the others; the
  # CA outlives the certificates it signs.
  local saved_end="$end" saved_start="$start"
  end="" start=""
  run_ca "$dir/ca.db/ca.csr" "$dir/ca.pem" \
    "$(printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash')" \
    -selfsign -keyfile "$dir/ca.key" -days 3650
  end="$saved_end" start="$saved_start"
  echo "make_certs: new CA $dir/ca.pem (\"$ca_name\"); keep $dir/ca.key secret"
}

# sign NAME EXTENSIONS: DIR/NAME.key and DIR/NAME.pem signed by the CA.
sign() {
  local name="$1"
  new_key "$dir/$name.key"
  openssl req -new -key "$dir/$name.key" -subj "/CN=$name" -out "$dir/ca.db/$name.csr" 2>/dev/null
  run_ca "$dir/ca.db/$name.csr" "$dir/$name.pem" "$2"
  echo "make_certs: $dir/$name.pem and $dir/$name.key ($(openssl x509 -in "$dir/$name.pem" -noout -enddate))"
}

case "$what" in
  server)
    [ $# -ge 1 ] || { echo "make_certs: server needs at least one DNS name or IP address" >&2; exit 2; }
    sans=()
    for n in "$@"; do
      valid_name "$n" || { echo "make_certs: bad name '$n'" >&2; exit 2; }
      if [[ "$n" =~ ^[0-9.]+$ || "$n" == *:* ]]; then sans+=("IP:$n"); else sans+=("DNS:$n"); fi
    done
    ensure_ca
    sign "$1" "$(printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=%s' "$(IFS=,; echo "${sans[*]}")")"
    ;;
  client)
    [ $# -ge 1 ] || { echo "make_certs: client needs at least one id" >&2; exit 2; }
    ensure_ca
    for n in "$@"; do
      valid_name "$n" || { echo "make_certs: bad id '$n'" >&2; exit 2; }
      sign "$n" "$(printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth')"
    done
    ;;
  tokens)
    for t in worker admin; do
      if [ -e "$dir/$t.token" ]; then
        echo "make_certs: $dir/$t.token exists; kept"
      else
        openssl rand -hex 32 >"$dir/$t.token"
        echo "make_certs: $dir/$t.token (mode 600)"
      fi
    done
    ;;
  *)
    echo "make_certs: unknown kind '$what'; use server, client or tokens" >&2
    exit 2
    ;;
esac
