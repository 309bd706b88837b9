#!/usr/bin/env bash
# Checks that the documentation says what the code does and stays inside
# the repository; tools/test.sh runs it as one test case.
#   1. README.md stays under 200 lines.
#   2. Every relative link in README.md, docs/, results/ and the READMEs of
#      tools/ names a file that exists, and every #anchor a heading of that
#      file.
#   3. No tracked file names a path outside the repository (../shared) or
#      a machine's absolute path (/work/..., /home/...).
#   4. docs/flags.md is what tools/dev/flags_doc.py generates from the sources,
#      and every flag of rogd and rogctl is explained in docs/reference.md
#      or docs/operations.md.
#   5. The README's rogd and rogctl commands, run against a real rogd on
#      loopback, print what the README says they print.
#   6. The rogctl output shown in docs/reference.md, design.md and
#      operations.md looks as rogctl prints it for the worked example's
#      team (rogd and two linreg_workers on loopback), a rogd shown
#      refusing to start and the make_certs.sh and install.sh samples print
#      exactly that, and the metric table lists exactly the metrics of a
#      real scrape (tools/dev/check_doc_samples.py; a block it cannot run is
#      marked with the reason).
#   7. The worked example in docs/design.md, run as it says (two
#      linreg_workers of 200 iterations, then SIGTERM to rogd): its two
#      output blocks have the shape of what the robots and rogd printed
#      (tools/dev/check_doc_output.py). The other output blocks are checked
#      where they are produced: tools/test.sh checks docs/testing.md's
#      install_test and kill -9 blocks and docs/benchmarking.md's run.sh
#      block against the runs it makes; and every output block in
#      README.md and docs/ is one of those, a rogctl/rogd sample (6), or
#      says why no check compares it (tools/dev/check_doc_output.py --inventory).
# Prints a line per failed check and ends with "N passed, M failed".
# Usage: tools/dev/check_docs.sh [--no_build] (--no_build: use bazel-bin as is)
set -uo pipefail
cd "$(dirname "$0")/../.."

build=1
for a in "$@"; do
  case "$a" in
    --no_build) build=0 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "check_docs: unknown argument '$a' (see tools/dev/check_docs.sh --help)" >&2; exit 2 ;;
  esac
done

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "check_docs: ok    $1"; }
bad() { failed=$((failed + 1)); echo "check_docs: FAIL  $1" >&2; }

# 1. The README's length.
lines=$(wc -l < README.md)
if [ "$lines" -lt 200 ]; then ok "README.md has $lines lines (under 200)"
else bad "README.md has $lines lines; keep it under 200 and move detail to docs/"; fi

# 2. Links. GitHub's anchors: the heading in lower case, without what is
# not a letter, digit, space, '-' or '_', spaces as '-'.
anchors() {  # FILE -> one anchor per line
  awk '/^```/ { code = !code; next } !code && /^#+ / { sub(/^#+ +/, ""); print }' "$1" |
    LC_ALL=C sed -E 's/[A-Z]/\L&/g; s/[^a-z0-9 _-]//g; s/ /-/g'
}
docs=(README.md docs/*.md results/README.md results/INDEX.md tools/README.md tools/*/README.md)
[ -d docs ] || docs=(README.md)
broken=0
for f in "${docs[@]}"; do
  [ -f "$f" ] || continue
  dir=$(dirname "$f")
  # Markdown links outside code blocks and inline code: ](target)
  while read -r target; do
    case "$target" in http://*|https://*|mailto:*) continue ;; esac
    path=${target%%#*}
    anchor=""
    [ "$target" != "$path" ] && anchor=${target#*#}
    if [ -z "$path" ]; then file=$f; else file="$dir/$path"; fi
    if [ ! -e "$file" ]; then
      echo "check_docs: $f links to $target: no such file" >&2; broken=$((broken + 1)); continue
    fi
    if [ -n "$anchor" ] && [ -f "$file" ] && [[ "$file" == *.md ]] &&
        ! anchors "$file" | grep -qxF -- "$anchor"; then
      echo "check_docs: $f links to $target: $file has no heading with that anchor" >&2
      broken=$((broken + 1))
    fi
  done < <(awk '/^```/ { code = !code; next } !code { gsub(/`[^`]*`/, ""); print }' "$f" |
           grep -oE '\]\([^) ]+\)' | sed -E 's/^\]\(//; s/\)$//')
done
if [ "$broken" -eq 0 ]; then ok "every relative link and anchor in ${#docs[@]} documents resolves"
else bad "$broken broken links (above)"; fi

# 3. Paths outside the repository. This script names them to look for them.
if git rev-parse --git-dir > /dev/null 2>&1; then
  outside=$(git ls-files -z | grep -zv '^tools/dev/check_docs.sh$' |
    xargs -0 grep -IlE '\.\./shared|/work/|/home/[a-z]' 2>/dev/null)
  if [ -z "$outside" ]; then ok "no tracked file names a path outside the repository"
  else bad "these tracked files name a path outside the repository (../shared, /work/, /home/): $(echo $outside)"; fi
else
  bad "not a git work tree: cannot list the tracked files for check 3"
fi

# 4. Flags: docs/flags.md is generated from the sources and must be current;
# rogd's and rogctl's flags are also explained in the operations guide or
# the reference.
if python3 tools/dev/flags_doc.py --check; then ok "docs/flags.md is what the sources declare"
else bad "docs/flags.md is stale: run tools/dev/flags_doc.py and commit docs/flags.md"; fi
undocumented=()
for src in server/rogd_main.cc tools/rogctl/rogctl.cc; do
  for fl in $(grep -ohE 'ABSL_FLAG\([^,]+, *[a-z_0-9]+' "$src" | sed -E 's/.*, *//'); do
    grep -qE -- "--$fl\b" docs/reference.md docs/operations.md 2>/dev/null ||
      undocumented+=("$src --$fl")
  done
done
if [ "${#undocumented[@]}" -eq 0 ]; then ok "every rogd and rogctl flag is explained in docs/reference.md or docs/operations.md"
else bad "flags not explained in docs/reference.md or docs/operations.md: ${undocumented[*]}"; fi

# 5 and 6 need rogd, rogctl (with its export helper) and a worker.
targets=(//server:rogd //tools/rogctl:rogctl //tools/rogctl:rogctl_torch //client/examples:linreg_worker)
# The install sample (docs/operations.md) installs what -c opt built.
opt_targets=(//server:rogd //tools/rogctl:rogctl //tools/rogctl:rogctl_torch //deploy:librog_client.so
  //python:rog/_native.so)
if [ "$build" -eq 1 ] &&
    ! bazel build -c opt --color=no --curses=no "${opt_targets[@]}" > /dev/null 2>&1; then
  bad "bazel build -c opt ${opt_targets[*]} failed; run it to see why"
  echo "$passed passed, $failed failed"; exit 1
fi
if [ "$build" -eq 1 ] && ! bazel build --color=no --curses=no "${targets[@]}" > /dev/null 2>&1; then
  bad "bazel build ${targets[*]} failed; run it to see why"
  echo "$passed passed, $failed failed"; exit 1
fi
bin="$(bazel info bazel-bin 2>/dev/null)"
rogd="$bin/server/rogd" rogctl="$bin/tools/rogctl/rogctl"

# 5. The README's commands against a real rogd on loopback.
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/ckpt"
"$rogd" --workers=4 --checkpoint_dir="$tmp/ckpt" --listen=127.0.0.1:0 --port_file="$tmp/port" \
  > "$tmp/rogd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
if [ ! -s "$tmp/port" ]; then
  bad "rogd did not start within 10 s: $(tail -3 "$tmp/rogd.log")"
else
  server="127.0.0.1:$(cat "$tmp/port")"
  expect() {  # WHAT CODE PATTERN -- COMMAND...
    local what=$1 code=$2 pat=$3; shift 4
    local out rc
    out=$(timeout 20 "$@" 2>&1); rc=$?
    if { [ "$code" = any ] || [ "$rc" -eq "$code" ]; } && grep -qE -- "$pat" <<<"$out"; then ok "$what"
    else bad "$what: exit $rc (expected $code), output did not match /$pat/: $(head -5 <<<"$out")"; fi
  }
  expect "rogctl status shows the policy, the model, the team and the checkpoint" 0 \
    'sync.*rog' -- "$rogctl" --server="$server" status
  out=$(timeout 20 "$rogctl" --server="$server" status 2>&1)
  for w in model workers 'last checkpoint'; do
    grep -q "$w" <<<"$out" || bad "rogctl status shows no '$w' line"
  done
  expect "rogctl workers before any worker says none has connected" 0 \
    'no workers have connected yet' -- "$rogctl" --server="$server" workers
  expect "rogctl staleness before any worker says there is no model yet (exit 4)" 4 \
    'no model yet' -- "$rogctl" --server="$server" staleness --top=10
  expect "rogd --helpfull lists --checkpoint_dir" any \
    '--checkpoint_dir' -- "$rogd" --helpfull
  expect "tools/run.sh --help lists --quick" 0 '--quick' -- tools/run.sh --help
fi

# 6. The worked example's team: rogd --workers=2 and two linreg_workers,
# robot2 5 ms slower per iteration; the samples are taken once both have
# trained a while. The rogd of 5, which no worker joins, answers the
# samples shown from before the first worker.
mport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/team"
"$rogd" --workers=2 --checkpoint_dir="$tmp/team" --listen=127.0.0.1:0 --port_file="$tmp/team/port" \
  --metrics_listen="127.0.0.1:$mport" > "$tmp/team/rogd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/team/port" ] && break; sleep 0.1; done
if [ ! -s "$tmp/team/port" ] || [ ! -s "$tmp/port" ]; then
  bad "the worked example's rogd did not start within 10 s: $(tail -3 "$tmp/team/rogd.log")"
else
  team="127.0.0.1:$(cat "$tmp/team/port")"
  linreg="$bin/client/examples/linreg_worker"
  "$linreg" --server="$team" --id=robot1 --iterations=100000000 > "$tmp/team/robot1.log" 2>&1 &
  pids+=($!)
  "$linreg" --server="$team" --id=robot2 --shard=1 --compute_ms=5 --iterations=100000000 \
    > "$tmp/team/robot2.log" 2>&1 &
  pids+=($!)
  # Both robots past iteration 200 (a second or two), at most 60 s.
  trained=0
  for _ in $(seq 300); do
    if timeout 10 "$rogctl" --server="$team" --json workers 2>/dev/null |
        python3 -c 'import json, sys; w = json.load(sys.stdin)["workers"]; sys.exit(0 if len(w) == 2 and min(x["iteration"] for x in w) >= 200 else 1)' 2>/dev/null; then
      trained=1; break
    fi
    sleep 0.2
  done
  if [ "$trained" -eq 0 ]; then
    bad "the worked example's robots did not reach iteration 200 within 60 s: $(tail -2 "$tmp/team/robot1.log" "$tmp/team/robot2.log")"
  elif ! timeout 20 "$rogctl" --server="$team" checkpoint > /dev/null 2>&1; then
    bad "rogctl checkpoint failed on the worked example's rogd"
  else
    out=$(python3 tools/dev/check_doc_samples.py --rogctl="$rogctl" --rogd="$rogd" --server="$team" \
      --empty_server="127.0.0.1:$(cat "$tmp/port")" --metrics="http://127.0.0.1:$mport/metrics" 2>&1)
    while IFS= read -r line; do
      case "$line" in
        "check_doc_samples: ok    "*) ok "${line#check_doc_samples: ok    }" ;;
        "check_doc_samples: FAIL  "*) bad "${line#check_doc_samples: FAIL  }" ;;
        "check_doc_samples: skip  "*) echo "check_docs: skip  ${line#check_doc_samples: skip  }" ;;
        *" passed, "*" failed") ;;
        *) bad "check_doc_samples: $line" ;;
      esac
    done <<<"$out"
    if ! python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
        "http://127.0.0.1:$mport/metrics" > "$tmp/team/scrape.txt" 2>&1; then
      bad "the worked example's metrics scrape failed: $(head -2 "$tmp/team/scrape.txt")"
    elif line=$(python3 tools/dev/check_doc_output.py docs/reference.md metrics-scrape "$tmp/team/scrape.txt"); then
      ok "${line#check_doc_output: ok    }"
    else
      bad "$(tr '\n' ' ' <<<"${line#check_doc_output: FAIL  }")"
    fi
  fi
fi

# 7. The worked example as docs/design.md runs it (rogd --workers=2
# --checkpoint_dir=rog-demo, two linreg_workers of 200 iterations, then
# SIGTERM), and its two output blocks against what they printed
# (tools/dev/check_doc_output.py: numbers and paths aside).
demo="$tmp/demo"
mkdir -p "$demo/rog-demo"
(cd "$demo" && exec "$rogd" --workers=2 --checkpoint_dir=rog-demo --listen=127.0.0.1:0 \
  --port_file=port) > "$demo/rogd.log" 2>&1 &
dpid=$!
pids+=($dpid)
for _ in $(seq 100); do [ -s "$demo/port" ] && break; sleep 0.1; done
if [ ! -s "$demo/port" ]; then
  bad "the worked example's rogd did not start within 10 s: $(tail -3 "$demo/rogd.log")"
else
  at="127.0.0.1:$(cat "$demo/port")"
  timeout 60 "$bin/client/examples/linreg_worker" --server="$at" --id=robot1 \
    > "$demo/robot1.out" 2> "$demo/robot1.err" &
  r1=$!
  timeout 60 "$bin/client/examples/linreg_worker" --server="$at" --id=robot2 --shard=1 \
    --compute_ms=5 > "$demo/robot2.out" 2> "$demo/robot2.err"
  r2=$?
  wait "$r1"; r1=$?
  kill -TERM "$dpid"; wait "$dpid"
  if [ "$r1" -ne 0 ] || [ "$r2" -ne 0 ]; then
    bad "the worked example's linreg_workers failed (exit $r1, $r2): $(tail -2 "$demo/robot1.err" "$demo/robot2.err")"
  else
    cat "$demo/robot1.out" "$demo/robot2.out" > "$demo/robots.out"
    for pair in "worked-example-robots $demo/robots.out" "worked-example-rogd $demo/rogd.log"; do
      set -- $pair
      if line=$(python3 tools/dev/check_doc_output.py docs/design.md "$1" "$2"); then
        ok "${line#check_doc_output: ok    }"
      else
        bad "$(tr '\n' ' ' <<<"${line#check_doc_output: FAIL  }")"
      fi
    done
  fi
fi

if line=$(python3 tools/dev/check_doc_output.py --inventory README.md docs/*.md); then
  ok "${line#check_doc_output: ok    }"
else
  bad "${line#check_doc_output: FAIL  }"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
