#!/usr/bin/env bash
# The deployment end to end, outside Bazel (it runs Bazel itself, so it is
# not a `bazel test` target; tools/test.sh runs it as one test case):
#
#  - deploy/install.sh builds and installs into a temporary prefix; a second
#    run changes nothing; an edited flag file is kept;
#  - systemd-analyze verifies the installed unit (no output at all) and
#    scores it (`security --offline`, exposure at most 2.0);
#  - a tiny consumer (test/deploy/consumer) is built against the installed
#    SDK with plain g++ and `pkg-config rog-client`, and again with CMake's
#    pkg_check_modules; both run with its Python twin (the installed rog
#    package, Debian's python3) as a team of three against the installed
#    rogd on loopback (started with the installed example flag file), and
#    each checks that the others' updates reached it exactly;
#  - the installed rogctl asks that rogd for its status and exports the
#    model (which runs the installed rogctl_torch);
#  - SIGTERM: rogd writes its final checkpoint and exits 0;
#  - rogd ran under strace: every system call, socket family and memory
#    mapping it used is one the unit's sandbox allows;
#  - DESTDIR staging writes only below DESTDIR with the final paths inside
#    the files; --uninstall removes everything but an edited flag file.
#
# Every step is bounded in time; every process it starts is stopped on the
# way out. Prints one line per check and exits non-zero if one failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

T="$(mktemp -d "${TMPDIR:-/tmp}/rog-install-test.XXXXXX")"
pids=()
cleanup() {
  local p
  for p in "${pids[@]-}"; do
    [ -n "$p" ] && kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  done
  rm -rf "$T"
}
trap cleanup EXIT
trap 'echo "install_test: interrupted" >&2; exit 143' TERM INT

passed=0
failed=0
ok() { echo "install_test: ok    $1"; passed=$((passed + 1)); }
fail() {
  echo "install_test: FAIL  $1" >&2
  [ $# -lt 2 ] || [ ! -f "$2" ] || tail -n 25 "$2" | sed 's/^/    /' >&2
  failed=$((failed + 1))
}
check() {  # check NAME LOG COMMAND...: ok when the command succeeds
  local name="$1" log="$2"
  shift 2
  if "$@" >"$log" 2>&1; then ok "$name"; else fail "$name" "$log"; fi
}

P="$T/usr"                 # --prefix
E="$T/etc"                 # --sysconfdir
U="$T/usr/lib/systemd/system"  # --unitdir
inst() { deploy/install.sh --prefix="$P" --sysconfdir="$E" --unitdir="$U" "$@"; }
expected_files=(
  bin/rogd bin/rogctl bin/rogctl_torch
  lib/librog_client.so lib/librog_client.so.0 lib/pkgconfig/rog-client.pc
  include/rog/client/worker.h include/rog/common/clock.h include/rog/common/layout.h
  share/doc/rog/README.md share/doc/rog/docs/operations.md share/doc/rog/rogd.flags lib/systemd/system/rogd.service
  lib/python3.11/dist-packages/rog/__init__.py lib/python3.11/dist-packages/rog/_native.so
  share/doc/rog/examples/python/fmnist_robot.py
)

# --- install.sh --------------------------------------------------------------
check "install.sh --help" "$T/help.log" \
  bash -c 'deploy/install.sh --help | grep -q -- "--prefix=DIR" && deploy/install.sh --help | grep -q DESTDIR'

echo "install_test: deploy/install.sh --prefix=$P (bazel build -c opt; minutes when cold)"
if timeout 3600 deploy/install.sh --prefix="$P" --sysconfdir="$E" --unitdir="$U" \
    >"$T/install1.log" 2>&1; then
  missing=""
  for f in "${expected_files[@]}"; do [ -e "$P/$f" ] || missing+=" $f"; done
  [ -f "$E/rog/rogd.flags" ] || missing+=" etc/rog/rogd.flags"
  if [ -z "$missing" ] && [ -x "$P/bin/rogd" ] && [ -x "$P/bin/rogctl" ]; then
    ok "install.sh installs into a fresh prefix"
  else
    fail "install.sh installs into a fresh prefix: missing$missing" "$T/install1.log"
  fi
else
  fail "install.sh installs into a fresh prefix (exit status $?)" "$T/install1.log"
  echo "install_test: nothing else can be checked without an installation"
  exit 1
fi

find "$P" "$E" -type f -printf '%p %T@\n' | sort >"$T/before.lst"
if inst --no-build >"$T/install2.log" 2>&1 &&
    ! grep -qE '^install: (installed|linked) ' "$T/install2.log" &&
    find "$P" "$E" -type f -printf '%p %T@\n' | sort | cmp -s - "$T/before.lst"; then
  ok "a second install.sh changes nothing"
else
  fail "a second install.sh changes nothing" "$T/install2.log"
fi

echo "# edited by install_test" >>"$E/rog/rogd.flags"
cp "$E/rog/rogd.flags" "$T/flags.edited"
if inst --no-build >"$T/install3.log" 2>&1 && grep -q "^install: kept .*rogd.flags" "$T/install3.log" &&
    cmp -s "$E/rog/rogd.flags" "$T/flags.edited"; then
  ok "install.sh keeps an edited flag file"
else
  fail "install.sh keeps an edited flag file" "$T/install3.log"
fi

# --- the unit ----------------------------------------------------------------
unit="$U/rogd.service"
if grep -qx "ExecStart=$P/bin/rogd --flagfile=$E/rog/rogd.flags --checkpoint_dir=/var/lib/rog" "$unit" &&
    grep -qx "AssertPathExists=$E/rog/rogd.flags" "$unit"; then
  ok "the installed unit runs the installed rogd with the installed flag file"
else
  fail "the installed unit runs the installed rogd with the installed flag file" "$unit"
fi

# verify prints warnings (an unknown key, say) yet exits 0: require silence.
timeout 60 systemd-analyze verify --man=no "$unit" >"$T/verify.log" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && [ ! -s "$T/verify.log" ]; then
  ok "systemd-analyze verify: no complaint"
else
  fail "systemd-analyze verify (exit status $rc, output below)" "$T/verify.log"
fi

timeout 60 systemd-analyze security --offline=true --threshold=20 "$unit" >"$T/security.log" 2>&1
rc=$?
score="$(grep -oE 'Overall exposure level for rogd.service: .*' "$T/security.log")"
if [ "$rc" -eq 0 ] && [ -n "$score" ]; then
  ok "systemd-analyze security: ${score#Overall exposure level for }"
else
  fail "systemd-analyze security --threshold=20 (exit status $rc) $score" "$T/security.log"
fi
check "docs/operations.md lists what systemd-analyze security counts against the unit" \
  "$T/security-doc.log" python3 tools/dev/check_doc_output.py docs/operations.md systemd-security \
  "$T/security.log" '^(✗|→) '

# --- consumers outside Bazel -------------------------------------------------
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
libdir="$(pkg-config --variable=libdir rog-client 2>/dev/null)"
# shellcheck disable=SC2046
check "g++ builds a consumer from pkg-config rog-client" "$T/gxx.log" \
  timeout 300 g++ -std=c++17 -O1 -Wall -Werror test/deploy/consumer/rog_consumer.cc \
    -o "$T/consumer-gxx" $(pkg-config --cflags --libs rog-client 2>/dev/null) -Wl,-rpath,"$libdir"
check "CMake builds a consumer with pkg_check_modules(rog-client)" "$T/cmake.log" \
  bash -c "timeout 300 cmake -S test/deploy/consumer -B '$T/cmake' -DCMAKE_BUILD_TYPE=Release &&
           timeout 300 cmake --build '$T/cmake'"

# --- the installed rogd, live ------------------------------------------------
mkdir -p "$T/state" "$T/barrier"
tracer=()
if command -v strace >/dev/null 2>&1 && strace -f -qq -o /dev/null true 2>/dev/null; then
  tracer=(strace -f -qq -o "$T/strace.out")
fi
# The example flag file as installed; what a test must change comes after it.
"${tracer[@]}" "$P/bin/rogd" --flagfile="$E/rog/rogd.flags" --listen=127.0.0.1:0 \
  --port_file="$T/port" --checkpoint_dir="$T/state" --workers=3 >"$T/rogd.log" 2>&1 &
top=$!
pids+=("$top")
for _ in $(seq 200); do [ -s "$T/port" ] || ! kill -0 "$top" 2>/dev/null && break; sleep 0.1; done
rogd_pid="$top"
if [ "${#tracer[@]}" -gt 0 ]; then rogd_pid="$(pgrep -P "$top" -x rogd | head -1)"; fi
pids+=("$rogd_pid")
if [ -s "$T/port" ] && [ -n "$rogd_pid" ]; then
  port="$(cat "$T/port")"
  ok "the installed rogd serves with the installed flag file (port $port)"
  a=()
  [ -x "$T/consumer-gxx" ] && a=("$T/consumer-gxx")
  b=()
  [ -x "$T/cmake/rog_consumer" ] && b=("$T/cmake/rog_consumer")
  if [ "${#a[@]}" -gt 0 ] && [ "${#b[@]}" -gt 0 ]; then
    # robot-gxx adds 1 per iteration, robot-cmake 2, robot-python 4: after
    # 20 iterations each, every parameter is 1 + 20 * (1 + 2 + 4) = 141 on
    # all three. The Python one imports the installed package with
    # Debian's python3 (the prefix is not on its path: PYTHONPATH).
    timeout 120 "${a[@]}" "127.0.0.1:$port" robot-gxx 1 20 141 "$T/barrier" 3 >"$T/gxx-run.log" 2>&1 &
    pa=$!
    pids+=("$pa")
    PYTHONPATH="$P/lib/python3.11/dist-packages" timeout 120 /usr/bin/python3 \
      test/deploy/consumer/rog_consumer.py "127.0.0.1:$port" robot-python 4 20 141 "$T/barrier" 3 \
      >"$T/python-run.log" 2>&1 &
    pp=$!
    pids+=("$pp")
    timeout 120 "${b[@]}" "127.0.0.1:$port" robot-cmake 2 20 141 "$T/barrier" 3 >"$T/cmake-run.log" 2>&1
    rb=$?
    wait "$pa"
    ra=$?
    wait "$pp"
    rp=$?
    if [ "$ra" -eq 0 ] && grep -q "is 141 as expected" "$T/gxx-run.log"; then
      ok "g++ consumer: 20 iterations in a team of 3, the others' updates arrived exactly"
    else
      fail "g++ consumer (exit status $ra)" "$T/gxx-run.log"
    fi
    if [ "$rb" -eq 0 ] && grep -q "is 141 as expected" "$T/cmake-run.log"; then
      ok "CMake consumer: 20 iterations in a team of 3, the others' updates arrived exactly"
    else
      fail "CMake consumer (exit status $rb)" "$T/cmake-run.log"
    fi
    if [ "$rp" -eq 0 ] && grep -q "is 141 as expected (rog .* from $P/lib/python3.11/dist-packages/rog)" \
        "$T/python-run.log"; then
      ok "Python consumer (the installed rog): 20 iterations in a team of 3, the others' updates arrived exactly"
    else
      fail "Python consumer (exit status $rp)" "$T/python-run.log"
    fi
  else
    fail "consumers: not built, so not run"
  fi
  check "installed rogctl: status" "$T/rogctl-status.log" \
    timeout 30 "$P/bin/rogctl" --server="127.0.0.1:$port" status
  check "installed rogctl: export (runs the installed rogctl_torch)" "$T/rogctl-export.log" \
    timeout 120 "$P/bin/rogctl" --server="127.0.0.1:$port" export --out="$T/model.pt"

  kill -TERM "$rogd_pid"
  rc=124
  for _ in $(seq 300); do kill -0 "$top" 2>/dev/null || break; sleep 0.1; done
  if ! kill -0 "$top" 2>/dev/null; then wait "$top"; rc=$?; fi
  if [ "$rc" -eq 0 ] && [ -s "$T/state/rogd.ckpt" ] && grep -q "checkpoint written" "$T/rogd.log" &&
      grep -q "\] stopped" "$T/rogd.log"; then
    ok "SIGTERM: final checkpoint written, rogd exited 0"
  else
    fail "SIGTERM: final checkpoint written, rogd exited 0 (exit status $rc)" "$T/rogd.log"
  fi
else
  fail "the installed rogd serves with the installed flag file" "$T/rogd.log"
fi
# Nothing this test started may survive it.
sleep 0.2
left=""
for p in "${pids[@]}"; do [ -n "$p" ] && kill -0 "$p" 2>/dev/null && left+=" $p"; done
if [ -z "$left" ]; then ok "no process left behind"; else fail "processes left behind:$left"; fi

# --- rogd inside the unit's sandbox ------------------------------------------
# Every system call rogd made must pass the unit's SystemCallFilter (allow
# lists minus ~deny lists, groups expanded by systemd-analyze), every socket
# family must be in RestrictAddressFamilies, and no mapping may be writable
# and executable at once (MemoryDenyWriteExecute).
expand() {
  local x
  for x in "$@"; do
    case "$x" in
      @*) systemd-analyze syscall-filter "$x" | sed -n '2,$p' | grep -vE '^\s*(#|$)' |
            sed -E 's/^\s+//' | while read -r s; do expand "$s"; done ;;
      *) echo "$x" ;;
    esac
  done
}
if [ -s "$T/strace.out" ]; then
  : >"$T/allow"; : >"$T/deny"
  while read -r line; do
    v="${line#SystemCallFilter=}"
    case "$v" in
      "~"*) read -ra groups <<<"${v#\~}"; expand "${groups[@]}" >>"$T/deny" ;;
      *) read -ra groups <<<"$v"; expand "${groups[@]}" >>"$T/allow" ;;
    esac
  done < <(grep '^SystemCallFilter=' "$unit")
  sort -u "$T/allow" -o "$T/allow"; sort -u "$T/deny" -o "$T/deny"
  comm -23 "$T/allow" "$T/deny" >"$T/allowed"
  grep -oE '^[0-9]+ +[a-z_0-9]+\(' "$T/strace.out" | sed -E 's/^[0-9]+ +//; s/\($//' |
    sort -u >"$T/used"
  outside="$(comm -23 "$T/used" "$T/allowed" | tr '\n' ' ')"
  if [ -s "$T/allowed" ] && [ -z "$outside" ]; then
    ok "all $(wc -l <"$T/used") system calls rogd made pass the unit's SystemCallFilter"
  else
    fail "system calls outside the unit's SystemCallFilter: ${outside:-(the filter expanded to nothing)}"
  fi
  families="$(grep -oE '(socket|socketpair)\(AF_[A-Z0-9]+' "$T/strace.out" | sed 's/.*(//' |
    sort -u | tr '\n' ' ')"
  allowed_families=" $(sed -n 's/^RestrictAddressFamilies=//p' "$unit" | tr '\n' ' ') "
  bad=""
  for f in $families; do case "$allowed_families" in *" $f "*) ;; *) bad+=" $f" ;; esac; done
  if [ -z "$bad" ]; then
    ok "socket families rogd used (${families% }) are in RestrictAddressFamilies"
  else
    fail "socket families outside RestrictAddressFamilies:$bad"
  fi
  if ! grep -E '(mmap|mprotect|pkey_mprotect)\(' "$T/strace.out" | grep -E 'PROT_WRITE' |
      grep -q 'PROT_EXEC'; then
    ok "no writable and executable mapping (MemoryDenyWriteExecute)"
  else
    fail "rogd mapped memory writable and executable" "$T/strace.out"
  fi
else
  echo "install_test: skip  system call check (strace is missing or cannot trace here)"
fi

# --- DESTDIR staging and --uninstall -------------------------------------------
S="$T/stage"
stage_ok=1
if DESTDIR="$S" deploy/install.sh --no-build >"$T/stage.log" 2>&1; then
  for f in "${expected_files[@]}"; do
    case "$f" in
      lib/systemd/system/rogd.service) f="$S/etc/systemd/system/rogd.service" ;;
      *) f="$S/usr/local/$f" ;;
    esac
    [ -e "$f" ] || { stage_ok=0; echo "missing $f" >>"$T/stage.log"; }
  done
  [ -f "$S/etc/rog/rogd.flags" ] || stage_ok=0
  grep -qx "prefix=/usr/local" "$S/usr/local/lib/pkgconfig/rog-client.pc" || stage_ok=0
  grep -qx "ExecStart=/usr/local/bin/rogd --flagfile=/etc/rog/rogd.flags --checkpoint_dir=/var/lib/rog" \
    "$S/etc/systemd/system/rogd.service" || stage_ok=0
  grep -q "^install: installing into $S/usr/local" "$T/stage.log" || stage_ok=0
else
  stage_ok=0
fi
if [ "$stage_ok" -eq 1 ]; then
  ok "DESTDIR stages under DESTDIR, the files name /usr/local and /etc"
else
  fail "DESTDIR stages under DESTDIR, the files name /usr/local and /etc" "$T/stage.log"
fi
if DESTDIR="$S" deploy/install.sh --uninstall >"$T/unstage.log" 2>&1 &&
    [ -z "$(find "$S" ! -type d)" ]; then
  ok "--uninstall with DESTDIR leaves no file in the stage"
else
  find "$S" ! -type d >>"$T/unstage.log"
  fail "--uninstall with DESTDIR leaves no file in the stage" "$T/unstage.log"
fi

if inst --uninstall >"$T/uninstall.log" 2>&1 && [ -z "$(find "$P" ! -type d)" ] &&
    cmp -s "$E/rog/rogd.flags" "$T/flags.edited" && grep -q "^install: kept .*rogd.flags" "$T/uninstall.log"; then
  ok "--uninstall removes every installed file and keeps the edited flag file"
else
  find "$P" ! -type d >>"$T/uninstall.log"
  fail "--uninstall removes every installed file and keeps the edited flag file" "$T/uninstall.log"
fi

if [ "$failed" -eq 0 ]; then
  echo "install_test: all $passed checks passed"
else
  echo "install_test: $failed of $((passed + failed)) checks failed"
fi
[ "$failed" -eq 0 ]
