#!/usr/bin/env bash
# Builds ROG with `bazel build -c opt` and installs rogd, rogctl, the systemd
# unit, an example flag file, the C++ client SDK (headers, shared library,
# pkg-config file) and the Python SDK (the rog package for Debian's
# python3). See --help, and docs/operations.md "Deployment".
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: deploy/install.sh [OPTIONS]
Builds ROG (bazel build -c opt) and installs it. Run it again to update:
unchanged files are left alone, and an existing flag file is never
overwritten.

Options:
  --prefix=DIR      install under DIR (default /usr/local): DIR/bin, DIR/lib,
                    DIR/include/rog, DIR/lib/pkgconfig, DIR/share/doc/rog,
                    DIR/lib/python3.11/dist-packages/rog
  --sysconfdir=DIR  the flag file goes to DIR/rog/rogd.flags (default /etc)
  --unitdir=DIR     rogd.service goes here (default /etc/systemd/system)
  --no-build        install what `bazel build -c opt` last produced in this
                    tree (e.g. built as yourself, then installed with sudo)
  --uninstall       remove what install.sh installs under these folders; the
                    flag file stays if it was edited, checkpoints always stay
  -h, --help        this text
Environment:
  DESTDIR           stage everything under DESTDIR (packaging): the files
                    say --prefix, the files land in DESTDIR/--prefix

Installed:
  bin/rogd, bin/rogctl, bin/rogctl_torch   the server, the admin CLI and its
                                           LibTorch helper (rogctl finds it
                                           beside itself)
  lib/librog_client.so.VERSION (+ .so.0, .so links)   the client SDK
  include/rog/client/worker.h and the project headers it includes
  lib/pkgconfig/rog-client.pc       g++ app.cc $(pkg-config --cflags --libs rog-client)
  lib/python3.11/dist-packages/rog/ the Python SDK (import rog), for Debian's
                                    python3 and python3-torch; with the
                                    default prefix python3 finds it at once
  share/doc/rog/examples/python/    the Fashion-MNIST robot in Python
  UNITDIR/rogd.service              hardened; runs rogd with the flag file
  SYSCONFDIR/rog/rogd.flags         only if there is none yet
  share/doc/rog/                    README.md, docs/ and the example flag file

Then, on a machine running systemd:
  systemctl daemon-reload && systemctl enable --now rogd
EOF
}

prefix=/usr/local
sysconfdir=/etc
unitdir=/etc/systemd/system
build=1
mode=install
for arg in "$@"; do
  case "$arg" in
    --prefix=*) prefix="${arg#*=}" ;;
    --sysconfdir=*) sysconfdir="${arg#*=}" ;;
    --unitdir=*) unitdir="${arg#*=}" ;;
    --no-build) build=0 ;;
    --uninstall) mode=uninstall ;;
    -h | --help) usage; exit 0 ;;
    *) echo "install: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
for d in "$prefix" "$sysconfdir" "$unitdir"; do
  case "$d" in
    /*) ;;
    *) echo "install: '$d' is not an absolute path; --prefix, --sysconfdir and --unitdir must be" >&2
       exit 2 ;;
  esac
done
prefix="${prefix%/}"; sysconfdir="${sysconfdir%/}"; unitdir="${unitdir%/}"
[ -n "$prefix" ] || prefix=/
DESTDIR="${DESTDIR:-}"
DESTDIR="${DESTDIR%/}"

cd "$(dirname "$0")/.."

bindir="$prefix/bin"
libdir="$prefix/lib"
includedir="$prefix/include"
pkgconfigdir="$libdir/pkgconfig"
docdir="$prefix/share/doc/rog"
# Debian's python3 (3.11) looks in /usr/local/lib/python3.11/dist-packages;
# the native module is built for that Python.
pythondir="$prefix/lib/python3.11/dist-packages"
python_files=(python/rog/*.py)
examples=(python/examples/fmnist_robot.py python/examples/fmnist_task.py)
confdir="$sysconfdir/rog"
flagfile="$confdir/rogd.flags"

# The SDK's version and the library's file names.
version="$(sed -nE 's/.*kRogVersion\[\] = "([0-9.]+)".*/\1/p' proto/convert.h)"
[ -n "$version" ] || { echo "install: cannot read kRogVersion from proto/convert.h" >&2; exit 1; }
soname="librog_client.so.${version%%.*}"
libfile="librog_client.so.$version"

# The public headers: client/worker.h and every project header it includes,
# followed recursively. A header that is not in the source tree (a generated
# one) would have to be installed too: fail rather than ship a broken SDK.
public_headers() {
  local seen=() queue=("client/worker.h") h inc
  while [ "${#queue[@]}" -gt 0 ]; do
    h="${queue[0]}"; queue=("${queue[@]:1}")
    case " ${seen[*]-} " in *" $h "*) continue ;; esac
    [ -f "$h" ] || { echo "install: public header $h is not in the source tree" >&2; return 1; }
    seen+=("$h")
    while read -r inc; do
      case "$inc" in
        absl/*) ;;  # Abseil's, from libabsl-dev (rog-client.pc requires it)
        *) queue+=("$inc") ;;
      esac
    done < <(sed -nE 's/^#include "([^"]+)".*/\1/p' "$h")
  done
  printf '%s\n' "${seen[@]}"
}
headers=()
while read -r h; do headers+=("$h"); done < <(public_headers)

say() { echo "install: $*"; }

# Installs file $1 as $2 (under DESTDIR) with mode $3; leaves an identical
# file alone, so that a second run changes nothing.
put() {
  local src="$1" dest="$DESTDIR$2" mode="$3"
  if [ -f "$dest" ] && [ ! -L "$dest" ] && cmp -s "$src" "$dest" &&
      [ "$(stat -c %a "$dest")" = "${mode#0}" ]; then
    say "unchanged  $2"
    return
  fi
  if ! install -D -m "$mode" "$src" "$dest" 2>/dev/null; then
    echo "install: cannot write $dest: run as root, or choose --prefix=DIR or DESTDIR=DIR" >&2
    exit 1
  fi
  say "installed  $2"
}

# A symbolic link $1 -> $2 (under DESTDIR).
link() {
  local dest="$DESTDIR$1" target="$2"
  if [ -L "$dest" ] && [ "$(readlink "$dest")" = "$target" ]; then
    say "unchanged  $1 -> $target"
    return
  fi
  mkdir -p "$(dirname "$dest")"
  ln -sfn "$target" "$dest"
  say "linked     $1 -> $target"
}

# Removes file $1 (under DESTDIR) and the folders of ROG's own it leaves
# empty (include/rog/..., share/doc/rog, SYSCONFDIR/rog), up to but not
# including $2.
remove() {
  local dest="$DESTDIR$1" stop="$DESTDIR$2" d
  if [ -e "$dest" ] || [ -L "$dest" ]; then
    rm -f "$dest"
    say "removed    $1"
  fi
  d="$(dirname "$dest")"
  while [ "$d" != "$stop" ] && [ "${#d}" -gt "${#stop}" ] && rmdir "$d" 2>/dev/null; do
    d="$(dirname "$d")"
  done
}

# Files generated for this prefix.
gen="$(mktemp -d)"
trap 'rm -rf "$gen"' EXIT

sed -e "s#^ExecStart=/usr/local/bin/rogd #ExecStart=$bindir/rogd #" \
    -e "s#/etc/rog/rogd.flags#$flagfile#g" \
    -e "s#^Documentation=.*#Documentation=file://$docdir/docs/operations.md#" \
    deploy/rogd.service >"$gen/rogd.service"
grep -q "^ExecStart=$bindir/rogd --flagfile=$flagfile " "$gen/rogd.service" ||
  { echo "install: deploy/rogd.service has no ExecStart line install.sh can rewrite" >&2; exit 1; }

cat >"$gen/rog-client.pc" <<EOF
# ROG client SDK: rog::Worker, a training process's end of ROG's protocol.
#   g++ -std=c++17 app.cc \$(pkg-config --cflags --libs rog-client)
#   #include "client/worker.h"
# librog_client.so links gRPC, protobuf, Abseil and spdlog as shared
# libraries itself; the headers use Abseil's Status, StatusOr and Span,
# hence Requires.
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: rog-client
Description: ROG client SDK (rog::Worker): row-level synchronisation with a rogd parameter server
Version: $version
Requires: absl_status absl_statusor absl_span absl_strings
Libs: -L\${libdir} -lrog_client
Cflags: -I\${includedir}/rog
EOF

if [ "$mode" = uninstall ]; then
  say "uninstalling from ${DESTDIR}$prefix"
  [ -n "$DESTDIR" ] || [ ! -d /run/systemd/system ] ||
    say "if rogd runs under systemd, stop it first: systemctl disable --now rogd"
  for f in rogd rogctl rogctl_torch; do remove "$bindir/$f" "$bindir"; done
  # Every version's library, not only this one's.
  for f in "$DESTDIR$libdir"/librog_client.so*; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    remove "${f#"$DESTDIR"}" "$libdir"
  done
  remove "$pkgconfigdir/rog-client.pc" "$pkgconfigdir"
  for f in "$DESTDIR$pythondir"/rog/*; do
    [ -e "$f" ] || continue
    remove "${f#"$DESTDIR"}" "$libdir"
  done
  for f in "${examples[@]}"; do remove "$docdir/examples/python/${f##*/}" "$prefix/share/doc"; done
  for h in "${headers[@]}"; do remove "$includedir/rog/$h" "$includedir"; done
  for f in README.md rogd.flags docs/*.md; do remove "$docdir/$f" "$prefix/share/doc"; done
  remove "$unitdir/rogd.service" "$unitdir"
  if [ -f "$DESTDIR$flagfile" ]; then
    if cmp -s deploy/rogd.flags "$DESTDIR$flagfile"; then
      remove "$flagfile" "$sysconfdir"
    else
      say "kept       $flagfile (edited; remove it yourself if it is no longer wanted)"
    fi
  fi
  if [ -z "$DESTDIR" ] && [ "$(id -u)" -eq 0 ]; then
    case "$libdir" in /usr/lib | /usr/local/lib) ldconfig 2>/dev/null || true ;; esac
    [ ! -d /run/systemd/system ] || systemctl daemon-reload || true
  fi
  say "checkpoints (/var/lib/rog under systemd) are never removed by install.sh"
  say "done"
  exit 0
fi

if [ "$build" -eq 1 ]; then
  command -v bazel >/dev/null 2>&1 ||
    { echo "install: bazel not found; run tools/setup.sh first (Debian packages)" >&2; exit 1; }
  say "bazel build -c opt (rogd, rogctl, rogctl_torch, librog_client.so, rog/_native.so)"
  bazel build -c opt --color=no --curses=no //server:rogd //tools/rogctl:rogctl //tools/rogctl:rogctl_torch \
      //deploy:librog_client.so //python:rog/_native.so
fi
if [ "$build" -eq 1 ]; then
  out="$(bazel info -c opt bazel-bin 2>/dev/null)"
else
  # Without asking Bazel, whose output folder belongs to the user who built
  # (sudo deploy/install.sh --no-build after a build as yourself): the
  # tree's bazel-out link, optimized configuration.
  out=""
  for d in bazel-out/*-opt/bin; do
    [ -f "$d/server/rogd" ] || continue
    if [ -z "$out" ] || [ "$d/server/rogd" -nt "$out/server/rogd" ]; then out="$d"; fi
  done
  [ -n "$out" ] || { echo "install: no -c opt build in this tree; run without --no-build" >&2; exit 1; }
fi
for f in server/rogd tools/rogctl/rogctl tools/rogctl/rogctl_torch deploy/librog_client.so python/rog/_native.so; do
  [ -f "$out/$f" ] ||
    { echo "install: $out/$f is missing; run without --no-build" >&2; exit 1; }
done

say "installing into ${DESTDIR}$prefix (version $version)"
put "$out/server/rogd" "$bindir/rogd" 0755
put "$out/tools/rogctl/rogctl" "$bindir/rogctl" 0755
put "$out/tools/rogctl/rogctl_torch" "$bindir/rogctl_torch" 0755
put "$out/deploy/librog_client.so" "$libdir/$libfile" 0755
link "$libdir/$soname" "$libfile"
link "$libdir/librog_client.so" "$soname"
for h in "${headers[@]}"; do put "$h" "$includedir/rog/$h" 0644; done
put "$gen/rog-client.pc" "$pkgconfigdir/rog-client.pc" 0644
for f in "${python_files[@]}"; do put "$f" "$pythondir/rog/${f##*/}" 0644; done
put "$out/python/rog/_native.so" "$pythondir/rog/_native.so" 0755
put "$gen/rogd.service" "$unitdir/rogd.service" 0644
put README.md "$docdir/README.md" 0644
for f in docs/*.md; do put "$f" "$docdir/$f" 0644; done
put deploy/rogd.flags "$docdir/rogd.flags" 0644
for f in "${examples[@]}"; do put "$f" "$docdir/examples/python/${f##*/}" 0644; done
if [ -e "$DESTDIR$flagfile" ]; then
  if cmp -s deploy/rogd.flags "$DESTDIR$flagfile"; then
    say "unchanged  $flagfile"
  else
    say "kept       $flagfile (yours; the example is $docdir/rogd.flags)"
  fi
else
  put deploy/rogd.flags "$flagfile" 0644
fi

case "$bindir/" in
  /home/* | /root/* | /run/user/*)
    say "warning: rogd.service cannot start $bindir/rogd: ProtectHome=yes hides that folder;" \
        "install with --prefix=/usr/local or /opt/rog for systemd" ;;
esac
if [ -z "$DESTDIR" ]; then
  case "$libdir" in
    /usr/lib | /usr/local/lib)
      if [ "$(id -u)" -eq 0 ] && command -v ldconfig >/dev/null 2>&1; then ldconfig; fi ;;
    *) say "note: $libdir is not on the loader's path: link with -Wl,-rpath,$libdir" \
           "or add it to /etc/ld.so.conf.d/" ;;
  esac
  case "$pkgconfigdir" in
    /usr/lib/pkgconfig | /usr/local/lib/pkgconfig) ;;
    *) say "note: PKG_CONFIG_PATH=$pkgconfigdir lets pkg-config find rog-client" ;;
  esac
  case "$pythondir" in
    /usr/local/lib/python3.11/dist-packages) ;;
    *) say "note: PYTHONPATH=$pythondir lets python3 find rog" ;;
  esac
  case "$unitdir" in
    /etc/systemd/system | /usr/lib/systemd/system | /lib/systemd/system | \
        /usr/local/lib/systemd/system)
      if [ -d /run/systemd/system ] && [ "$(id -u)" -eq 0 ]; then
        systemctl daemon-reload
        say "systemd reloaded; start rogd with: systemctl enable --now rogd"
      else
        say "systemd is not running here; on the target:" \
            "systemctl daemon-reload && systemctl enable --now rogd"
      fi ;;
    *) say "note: systemd does not look for units in $unitdir" ;;
  esac
fi
say "done"
