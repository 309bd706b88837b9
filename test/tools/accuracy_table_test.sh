#!/usr/bin/env bash
# tools/sim/accuracy_table.py against the kept fmnist_sim outputs of
# results/2026-11-28-fmnist-sim-49b0262 (C = 1 s, R = 4, 16 seeds): it must
# give the figures that result's README reads from them, its sign test the
# exact binomial values, and clear errors on what is not an fmnist_sim
# output. Ends with "N passed, M failed".
set -uo pipefail
table=tools/sim/accuracy_table.py
points=results/2026-11-28-fmnist-sim-49b0262
passed=0
failed=0
check() {  # check WHAT PATTERN TEXT: TEXT has a line matching PATTERN (grep -E)
  if grep -qE -- "$2" <<<"$3"; then passed=$((passed + 1)); echo "ok    $1"
  else failed=$((failed + 1)); echo "FAIL  $1: no line matches '$2' in:"; echo "$3"; fi
}
out=$(python3 "$table" "$points" c1r4 2>&1)
# The README: replicas 0.5786 (ROG) and 0.5683 (SSP); rogd's model 0.5796 and
# 0.6023; the final sync's change +0.1 (negative in 8) and +3.4 (negative in
# 1); time to BSP's final accuracy 50 s and 43 s; ROG below SSP in 12 of 16.
check "SSP's row" '^\| SSP \| 16 \| [0-9.]+ ± [0-9.]+ \| 56\.8 ± [0-9.]+ \| 60\.2 ± [0-9.]+ \| 3\.4 ± [0-9.]+ \(down in 1\) \| 43\.1 ± [0-9.]+ s \(16 reached\) \|$' "$out"
check "ROG's row" '^\| ROG \| 16 \| [0-9.]+ ± [0-9.]+ \| 57\.9 ± [0-9.]+ \| 58\.0 ± [0-9.]+ \| 0\.1 ± [0-9.]+ \(down in 8\) \| 50\.0 ± [0-9.]+ s \(16 reached\) \|$' "$out"
# 4 above, 12 below: 2 * (1 + 16 + 120 + 560 + 1820) / 65536 = 0.0768.
check "ROG against SSP, paired, with the sign test" "^\| ROG − SSP, rogd's model \| 16 \| -2\.3 ± [0-9.]+ \| 4 / 12 \| 0\.077 \|$" "$out"
check "ROG against SSP, replicas" "^\| ROG − SSP, replicas \| 16 \| 1\.0 ± [0-9.]+ \| 10 / 6 \| 0\.454 \|$" "$out"
# Half way: the evaluation at 60 s of a 120 s run, seed 1 alone.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/one" && cp "$points/c1r4/seed1.txt" "$tmp/one/"
out=$(python3 "$table" "$tmp" 2>&1)
check "half way is the 60 s evaluation (seed 1: SSP 0.5836)" '^\| SSP \| 1 \| 58\.4 \| 58\.7 \| 61\.6 \|' "$out"
# What is not an output is refused with a message, not a traceback.
mkdir -p "$tmp/bad" && head -9 "$points/c1r4/seed1.txt" >"$tmp/bad/seed1.txt"
out=$(python3 "$table" "$tmp" bad 2>&1); rc=$?
check "a cut output is refused (exit $rc)" "^accuracy_table: .*bad/seed1.txt: bsp has no score series.*did the run end" "$out"
out=$(python3 "$table" "$tmp/nowhere" 2>&1)
check "a missing folder is refused" "^accuracy_table: .*nowhere is not a folder" "$out"
# Outputs since 1070c2a: rogd's model at the stop and with the drain
# averaged (results/2026-12-04-accuracy-mechanism-1070c2a's README: ROG
# stopped 58.1, averaged 57.6; SSP's drain carries nothing, 60.9 both).
mech=results/2026-12-04-accuracy-mechanism-1070c2a
out=$(python3 "$table" "$mech/diag-C1-R4" regime-C1-R4 2>&1)
check "stopped and averaged columns" '^\| ROG \| 16 \| .* \| 55\.8 ± [0-9.]+ \| .* \| 58\.1 ± [0-9.]+ \| 57\.6 ± [0-9.]+ \|$' "$out"
check "SSP's drain carries nothing" '^\| SSP \| 16 \| .* \| 60\.9 ± [0-9.]+ \| .* \| 60\.9 ± [0-9.]+ \| 60\.9 ± [0-9.]+ \|$' "$out"
# --ab: a study against itself is zero everywhere; the damping arm gives
# the README's -0.9 +- 2.3 (7 above, 9 below) and an it/s ratio of 1.001.
out=$(python3 "$table" --ab "$mech/diag-C1-R4" "$mech/diag-C1-R4" regime-C1-R4 2>&1)
check "an A/B of a study with itself is zero" "^\| ROG \| rogd's model after the final sync \| 16 \| 0\.0 ± 0\.0 \| 0 / 0 \| 1\.000 \|$" "$out"
out=$(python3 "$table" --ab "$mech/diag-C1-R4" "$mech/arm-damp" regime-C1-R4 2>&1)
check "the damping arm, paired" "^\| ROG \| rogd's model after the final sync \| 16 \| -0\.9 ± 2\.3 \| 7 / 9 \| 0\.804 \|$" "$out"
check "the damping arm's it/s ratio" "^\| ROG \| iterations/s, arm / base \| 16 \| 1\.001 ± 0\.004 \| \| \|$" "$out"
# An arm that ran ROG alone is also paired with the base's SSP (an awk sum
# over the 16 seeds' "after the drain" figures gives -2.77, SE 1.50, 7 / 9).
out=$(python3 "$table" --ab "$mech/diag-C1-R4" "$mech/arm-push_ahead" regime-C1-R4 2>&1)
check "a ROG-only arm against the base's SSP" "^\| ROG \(arm\) − SSP \(base\) \| rogd's model after the final sync \| 16 \| -2\.8 ± 1\.5 \| 7 / 9 \| 0\.804 \|$" "$out"
out=$(python3 "$table" --ab "$mech/diag-C1-R4" "$mech/diag-C1-R4" regime-C1-R4 2>&1)
if grep -q "ROG (arm)" <<<"$out"; then
  failed=$((failed + 1)); echo "FAIL  an arm that ran SSP too has no ROG (arm) row"
else passed=$((passed + 1)); echo "ok    an arm that ran SSP too has no ROG (arm) row"; fi
out=$(python3 "$table" --ab "$mech/diag-C1-R4" 2>&1)
check "--ab with one folder is refused" "^accuracy_table: --ab needs two study folders" "$out"
# --summary: a row per point; the goal is "not met" where even the mean plus
# two standard errors is below -0.5 (-5.1 + 3.2), "unresolved" where it is
# not (49b0262's -2.3 + 3.0).
out=$(python3 "$table" --summary "$mech/diag-C1-R4" 2>&1)
check "the summary's row" "^\| regime-C1-R4 \| 16 \| 1\.19× \| -5\.1 ± 1\.6 \(3 / 13, p 0\.02\) \| -5\.1 ± 1\.6 \| -5\.0 ± 2\.4 \| 39\.4 ± 6\.4 s \(16\) / 38\.1 ± 5\.3 s \(16\) \| not met \| 1\.8 ± [0-9.]+ \([0-9]+ / [0-9]+, p [0-9.]+\) \|$" "$out"
mkdir -p "$tmp/sum" && cp -r "$points/c1r4" "$tmp/sum/"
out=$(python3 "$table" --summary "$tmp/sum" 2>&1)
check "an unresolved goal; no averaged drain in outputs before 1070c2a" "^\| c1r4 \| 16 \| .* \| -2\.3 ± 1\.5 \(4 / 12, p 0\.08\) \| .* \| unresolved \| - \|$" "$out"
out=$(python3 "$table" --summary "$tmp/nowhere" 2>&1)
check "--summary of a missing folder is refused" "^accuracy_table: --summary needs study folders" "$out"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
