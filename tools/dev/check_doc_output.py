#!/usr/bin/env python3
"""Checks an output block the docs show against the real output of the
program that printed it, in the run that just printed it.

A block is the ```text block after a line `<!-- output: NAME -->`; with
`<!-- output: NAME; lines left out -->` the docs show only some of the
lines. Lines are compared by their shape: numbers (with their signs,
decimals and units' digits), paths starting with / and runs of spaces are
made equal, so that the figures of one run match those of another while
a line that was renamed, reworded, added or dropped does not. A line that
is only "…" or "..." stands for lines left out.

  every line the docs show must have the shape of a line of the output;
  without "lines left out", every line of the output (that SELECT
  selects) must have the shape of a line the docs show.

Usage: tools/dev/check_doc_output.py DOC NAME OUTPUT [SELECT]
  SELECT: a regex; only the output's lines it matches count (e.g. the
  program's own lines among a build's). Default: every line.
       tools/dev/check_doc_output.py --inventory FILE...
  Checks that every ```text or unlabelled block in FILEs is accounted for:
  it holds `$ rogctl`, `$ rogd`, `$ tools/make_certs.sh` or
  `$ deploy/install.sh` lines (tools/dev/check_doc_samples.py runs them), or
  the line before it is `<!-- output: NAME... -->` (checked as above by
  whoever produces the output), `<!-- samples: ... -->`, or
  `<!-- not output: WHY -->` (a diagram, or a copy of a kept result).
Prints "check_doc_output: ok ..." or "check_doc_output: FAIL ..." and the
lines that differ; exits 1 when they differ or the block is missing.
"""
import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")
PATH = re.compile(r"(?<![\w.])/[\w.+@%-]+(/[\w.+@%-]*)*")
NUMBER = re.compile(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?")


def shape(line):
    line = ANSI.sub("", line)
    line = PATH.sub("PATH", line)
    line = NUMBER.sub("#", line)
    return " ".join(line.split())


def doc_block(doc, name):
    """(lines, lines_left_out) of the block named `name`, or None."""
    lines = open(doc, encoding="utf-8").read().split("\n")
    marker = re.compile(r"<!-- output: " + re.escape(name) + r"(; lines left out)? -->")
    for i, line in enumerate(lines):
        m = marker.fullmatch(line.strip())
        if not m:
            continue
        j = i + 1
        if j >= len(lines) or not lines[j].startswith("```"):
            return None
        block = []
        for k in range(j + 1, len(lines)):
            if lines[k].startswith("```"):
                return block, bool(m.group(1))
            block.append(lines[k])
    return None


# The command lines tools/dev/check_doc_samples.py runs.
SAMPLE = re.compile(r"\$ (rogctl|rogd|tools/make_certs\.sh|([A-Z_]+=\S+ )*deploy/install\.sh) ")


def inventory(files):
    unaccounted = []
    for path in files:
        lines = open(path, encoding="utf-8").read().split("\n")
        i = 0
        while i < len(lines):
            if not lines[i].startswith("```"):
                i += 1
                continue
            lang = lines[i][3:].strip()
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            before = lines[i - 1].strip() if i > 0 else ""
            body = lines[i + 1:j]
            if lang in ("", "text") and not any(SAMPLE.match(l) for l in body) and not re.match(
                    r"<!-- (output|samples|not output): .+ -->$", before):
                unaccounted.append(f"{path}:{i + 1}: {body[0][:60] if body else ''}")
            i = j + 1
    if not unaccounted:
        print(f"check_doc_output: ok    every output block of {len(files)} files is checked "
              "or says why not")
        return 0
    print(f"check_doc_output: FAIL  {len(unaccounted)} output blocks no check compares; "
          "annotate each (tools/dev/check_doc_output.py --help): " + "; ".join(unaccounted))
    return 1


def main(argv):
    if len(argv) >= 2 and argv[1] == "--inventory":
        return inventory(argv[2:])
    if len(argv) not in (4, 5):
        sys.stderr.write(__doc__)
        return 2
    doc, name, output = argv[1], argv[2], argv[3]
    found = doc_block(doc, name)
    if found is None:
        print(f"check_doc_output: FAIL  {doc}: no ```text block after <!-- output: {name} -->")
        return 1
    shown, left_out = found
    out = open(output, encoding="utf-8", errors="replace").read().split("\n")
    if len(argv) == 5:
        out = [l for l in out if re.search(argv[4], l)]
    real = {shape(l) for l in out if l.strip()}
    shown = [l for l in shown if l.strip() and l.strip() not in ("…", "...")]
    doc_shapes = {shape(l) for l in shown}
    stale = [l for l in shown if shape(l) not in real]
    missing = [] if left_out else [l for l in out if l.strip() and shape(l) not in doc_shapes]
    if not stale and not missing:
        print(f"check_doc_output: ok    {doc} \"{name}\": {len(shown)} lines match the output"
              f"{' (lines left out)' if left_out else ''}")
        return 0
    print(f"check_doc_output: FAIL  {doc} \"{name}\" differs from the output "
          f"({len(stale)} lines shown that the output has not, {len(missing)} lines of the "
          f"output not shown); paste the output into the block")
    for l in stale:
        print(f"  shown, not printed: {l.strip()}")
    for l in missing[:20]:
        print(f"  printed, not shown: {l.strip()}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
