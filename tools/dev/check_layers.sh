#!/usr/bin/env bash
# Checks the layers the code is built in, from the sources and BUILD files
# (no build needed); tools/test.sh runs it as one test case.
#   1. common/ is pure logic: its sources include only the C++ and C
#      standard headers, Abseil and common/ itself (no gRPC, protobuf,
#      spdlog, LibTorch, OpenSSL, proto/, server/, client/, security/), its
#      BUILD depends on nothing else, and it reads no files.
#   2. The product does not depend on the simulator or the bench harness:
#      server/ and client/ use nothing from tools/ or sim/, and do not use
#      each other.
#   3. The Python SDK's native module links no libtorch (one build works with
#      any torch the user has): python/ includes no torch header and its
#      BUILD's module and package depend on no @system//:torch; they use the
#      SDK (client/), never server/, sim/ or tools/ (its tests run rogd).
#   4. No tool builds on an example program's code: tools/ and sim/ depend
#      on nothing in client/examples/; what the examples and the tools share
#      (the training tasks) lives in task/, which uses neither server/, sim/
#      nor tools/.
#   5. tools/ by product: each package builds only on what its job needs,
#      never on another tools/ package, server/ or an example program:
#        tools/rogctl/ (the CLI): common/, proto/, security/ and client/'s
#                      credentials
#        tools/bench/ (the benchmark's report): common/
#        tools/links/ (the link emulators): common/
#        tools/sim/ (the simulator's command line): common/, sim/, task/
#        tools/scale/ (the scale study's synthetic workers): common/, proto/
#      and tools/'s own BUILD (the traces, make_certs.sh) on nothing. A new
#      tools/ package fails until it has its line here.
#   6. rogd's engine core keeps its state in objects with one owner each
#      (docs/design.md, "Why one engine thread is enough"): a member
#      `name_` declared in a server/engine_*.h is named in no engine file
#      (server/engine_*.h, server/engine_*.cc) but the headers that declare
#      a member of that name and their .cc files. The compiler keeps such
#      members private; this keeps their writes out of the event handlers
#      and out of each other's files, friends included.
# Prints a line per check and ends with "N passed, M failed".
# Usage: tools/dev/check_layers.sh
set -uo pipefail
cd "$(dirname "$0")/../.."

case "${1:-}" in
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  "") ;;
  *) echo "check_layers: unknown argument '$1' (see tools/dev/check_layers.sh --help)" >&2; exit 2 ;;
esac

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "check_layers: ok    $1"; }
bad() { failed=$((failed + 1)); echo "check_layers: FAIL  $1" >&2; }

# 1a. Includes: <name> without a slash (the standard library), "absl/..."
# and "common/...".
found=$(grep -nE '^\s*#\s*include' common/*.h common/*.cc |
  grep -vE '#\s*include\s*(<[a-z_0-9]+(\.h)?>|"absl/[^"]+"|"common/[^"]+")')
if [ -z "$found" ]; then ok "common/ includes only the standard library, Abseil and common/"
else bad "common/ includes what it must not (move that code out of common/): $found"; fi

# 1b. BUILD dependencies: targets of common/ itself and Abseil only.
found=$(grep -oE '"(@[a-z_]+)?//[^"]*"' common/BUILD | grep -vE '^"(@system//:absl|//visibility:[a-z]+)"$|:__(pkg|subpackages)__"$' | sort -u)
if [ -z "$found" ]; then ok "common/BUILD depends on common/ and Abseil only"
else bad "common/BUILD depends on $(echo $found)"; fi

# 1c. No file I/O: callers read files and hand common/ the bytes.
found=$(grep -nE '\b(fopen|freopen|ifstream|ofstream|fstream|opendir|std::filesystem|::open|::read)\b' \
  common/*.h common/*.cc)
if [ -z "$found" ]; then ok "common/ reads and writes no files"
else bad "common/ does file I/O (move it to its caller): $found"; fi

# 2. Product against simulator and harness, server against client.
for pkg in server client; do
  other=$([ "$pkg" = server ] && echo client || echo server)
  found=$(grep -noE '"//(tools|sim|'"$other"')[:/][^"]*"' "$pkg/BUILD" |
    grep -v '^[0-9]*:"//tools:make_certs.sh"$' |
    grep -vE ':__(pkg|subpackages)__"$')  # visibility: who may use it, not a dependency
  if [ -z "$found" ]; then ok "$pkg/ uses neither $other/, tools/ nor the simulator (sim/)"
  else bad "$pkg/BUILD depends on $(echo $found)"; fi
done

# 3. The Python SDK's native module.
found=$(grep -nE '^\s*#\s*include\s*[<"](torch|ATen|c10)/' python/rog/*.cc
  awk '/^sh_test\(/ { exit } { print FILENAME ":" NR ": " $0 }' python/BUILD |
    grep -E '"@system//:torch"|"//(server|sim|tools)[:/]')
if [ -z "$found" ]; then ok "python/ links no libtorch and uses neither server/, sim/ nor tools/"
else bad "python/ must stay free of libtorch and of server/, sim/, tools/: $found"; fi

# 4. Examples, tools and the tasks they share.
found=$(grep -noE '"//client/examples[:/][^"]*"' tools/BUILD tools/*/BUILD sim/BUILD)
if [ -z "$found" ]; then ok "tools/ and sim/ build on no example program (client/examples/)"
else bad "tools/ or sim/ depends on an example program (move what they share to task/): $(echo $found)"; fi
found=$(grep -noE '"//(server|sim|tools)[:/][^"]*"' task/*/BUILD | grep -vE ':__(pkg|subpackages)__"$')
if [ -z "$found" ]; then ok "task/ uses neither server/, sim/ nor tools/"
else bad "task/ depends on $(echo $found)"; fi

# 5. The tools/ packages. Labels in a BUILD file that are not visibility
# (who may use it) are what the package builds on; each must start with
# one of its package's allowed prefixes.
for build in tools/BUILD tools/*/BUILD; do
  pkg=$(dirname "$build")
  case "$pkg" in
    tools) allowed="" ;;
    tools/rogctl) allowed="//common: //proto: //security: //client:credentials" ;;
    tools/bench|tools/links) allowed="//common:" ;;
    tools/sim) allowed="//common: //sim: //task/" ;;
    tools/scale) allowed="//common: //proto:" ;;
    *) bad "$pkg/ has no line in check 5 of tools/dev/check_layers.sh: say what it may build on"
       continue ;;
  esac
  found=$(grep -oE '"//[^"]*"' "$build" | tr -d '"' |
    grep -vE ':__(pkg|subpackages)__$|^//visibility:' | sort -u |
    while read -r label; do
      for a in $allowed; do [[ "$label" == "$a"* ]] && continue 2; done
      echo "$label"
    done)
  what=${allowed// /, }
  if [ -z "$found" ]; then ok "$pkg/ builds ${allowed:+only }on ${what:-nothing}"
  else bad "$pkg/BUILD depends on what its job does not need: $(echo $found)"; fi
done
# 6. The engine's objects and their files. A member is a declaration
# `type name_;` (with an initializer or array bounds) at a line's start.
member='^\s+(?:const\s+)?[\w:<>,*&. ]+?[\s*&]\K[a-z]\w*_(?=\s*(?:=[^;]*|\{.*\}|\[[^\]]*\][^;]*)?;)'
names=$(grep -ohP "$member" server/engine_*.h | sort -u)
found=""
for name in $names; do
  owners=$(for h in server/engine_*.h; do
    grep -oP "$member" "$h" | grep -qx -- "$name" && echo "${h%.h}"
  done)
  for f in $(grep -lw -- "$name" server/engine_*.h server/engine_*.cc); do
    grep -qx -- "${f%.*}" <<<"$owners" || found+=" $name in $f;"
  done
done
if [ -z "$found" ]; then
  ok "the engine's $(wc -w <<<"$names") member names are used only in their owners' files (server/engine_*.h, .cc)"
else
  bad "engine members used outside their owner's files (give the owner a method):$found"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
