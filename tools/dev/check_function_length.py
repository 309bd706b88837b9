#!/usr/bin/env python3
"""Checks that no function of the product is longer than 80 lines (from the
first line of its signature to its closing brace): the C++ sources under
server/, client/, common/, proto/, security/, sim/, task/ and tools/ (tests
are not counted). A long function is split by what its parts do, so that each
can be read, named and tested on its own.

A function is found as a line ending in `) {` (or `) const {`, ...) whose
statement starts at an indentation of at most two spaces and is not a
control statement; its end is the brace that closes it. Lambdas count
towards the function that holds them.

Usage: tools/dev/check_function_length.py [--max=80] [FILE...]
Prints "check_function_length: ok ..." or one "check_function_length: FAIL"
line per function over the limit; exits 1 if any.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIRS = ["server", "client", "common", "proto", "security", "sim", "task", "tools"]
OPENER = re.compile(r"\)\s*(const)?\s*(override)?\s*(noexcept)?\s*(->\s*[\w:<>]+)?\s*\{$")
CONTROL = re.compile(r"\s*(if|for|while|switch|else|do|case|return|catch)\b")
STATEMENT_END = re.compile(r"[;{}]\s*$|^\s*$|^\s*//|^\s*#")


def functions(path):
    """(first line, line count, signature) of each function in `path`."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if not OPENER.search(lines[i]):
            i += 1
            continue
        k = i
        while k > 0 and not STATEMENT_END.search(lines[k - 1]):
            k -= 1
        start = lines[k]
        indent = len(start) - len(start.lstrip())
        head = start.split("(")[0]
        if indent > 2 or CONTROL.match(start) or "=" in head:
            i += 1
            continue
        depth = lines[i].count("{") - lines[i].count("}")
        j = i + 1
        while j < len(lines) and depth > 0:
            depth += lines[j].count("{") - lines[j].count("}")
            j += 1
        yield k + 1, j - k, start.strip()
        i = j


def main(argv):
    limit = 80
    files = []
    for a in argv[1:]:
        if a.startswith("--max="):
            limit = int(a[len("--max="):])
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            files.append(a)
    os.chdir(ROOT)
    if not files:
        files = [f for f in subprocess.check_output(["git", "ls-files"] + DIRS).decode().split()
                 if f.endswith(".cc")]
    long = []
    count = 0
    for f in files:
        for line, n, sig in functions(f):
            count += 1
            if n > limit:
                long.append((n, f, line, sig))
    if not long:
        print(f"check_function_length: ok    {count} functions in {len(files)} files, "
              f"none over {limit} lines")
        return 0
    for n, f, line, sig in sorted(long, reverse=True):
        print(f"check_function_length: FAIL  {f}:{line}: {n} lines (at most {limit}): {sig[:70]}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
