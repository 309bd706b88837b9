#!/usr/bin/env python3
"""Checks the rogctl output that docs/reference.md and docs/design.md show,
and the metric table, against a real rogd with a real team:
tools/dev/check_docs.sh starts them (the worked example's two linreg_workers)
and calls this. For every `$ rogctl ... COMMAND` line in a ``` block it
runs the same command, in a scratch folder, against the real rogd (or,
when the line before the block is `<!-- samples: empty -->`, against one
no worker has joined; `<!-- samples: skip: WHY -->` skips a block and
says why) and compares what does not depend on the moment:

  status      the same row labels, in the same order
  workers     the same columns
  staleness   the same first line (numbers aside), columns (worker ids
              aside) and heat-map legend
  mta         exactly the same output (it is a pure function)
  checkpoint  "checkpoint written: PATH (SIZE in SECONDSs)"
  export      exactly the same message; for a written model, the same
              lines with the numbers aside
A `$ tools/make_certs.sh ...` or `$ [VAR=...] deploy/install.sh ...` line
runs that script from the repository's root with its /tmp/ folders moved
into a scratch folder, and compares its output exactly (certificate
dates aside).
A `$ rogd FLAGS   # exit N` line is a rogd that refuses to start: it runs
rogd with those flags and compares its message exactly, and the exit
status (every sample's `# exit N`, 0 when absent, is checked).

For every ```json block after a paragraph that starts with a command's
name in backquotes (`status`, `workers`, ...) it runs that command with
--json and checks that the keys the doc shows come in rogctl's order.

and the metric table under "## Metrics" must list exactly the rog_*
metrics of a real scrape, each with its type.

Usage: tools/dev/check_doc_samples.py --rogctl=PATH --rogd=PATH --server=HOST:PORT
           --empty_server=HOST:PORT --metrics=URL|FILE [--doc=FILE ...]
       the same with --show and without --metrics: prints the real output
           of every command the docs show, to paste when a sample changes
Prints "check_doc_samples: ok ..." or "check_doc_samples: FAIL ..." per
check; exits 1 if any failed.
"""
import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def columns(line):
    """A table line's cells: text separated by two or more spaces."""
    return [c for c in re.split(r"\s{2,}", line.strip()) if c]


def doc_commands(text):
    """(target, args, shown lines, line number) for each `$ rogctl` line in
    a ``` block. The target is "team" unless the last line before the
    block's fence is `<!-- samples: empty -->` (run against a rogd no
    worker has joined) or `<!-- samples: skip: WHY -->`."""
    out = []
    in_block = False
    current = None
    target = "team"
    previous = ""
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if not in_block:
                m = re.match(r"<!-- samples: (empty|skip: .*?) -->$", previous.strip())
                target = m.group(1) if m else "team"
            in_block = not in_block
            if current:
                out.append(current)
                current = None
            continue
        if line.strip():
            previous = line
        if not in_block:
            continue
        if line.startswith("$ "):
            if current:
                out.append(current)
                current = None
            command, _, comment = line[2:].partition("#")
            words = shlex.split(command)
            env = {}
            while words and re.match(r"^[A-Z_]+=", words[0]):
                key, _, value = words.pop(0).partition("=")
                env[key] = value
            if words and words[0] in SCRIPTS:
                current = (target, ["script", env] + words, [], number, 0)
                continue
            if words and words[0] in ("rogctl", "rogd"):
                args = [w for w in words[1:] if not w.startswith("--server")]
                if words[0] == "rogd":
                    args = ["rogd"] + words[1:]
                # "# exit N" after a command: the exit status the doc promises.
                m = re.search(r"\bexit (\d+)", comment)
                current = (target, args, [], number, int(m.group(1)) if m else 0)
            continue
        if current is not None:
            current[2].append(line)
    if current:
        out.append(current)
    return out


# Scripts of the repository whose output the docs show: run from the
# repository's root, with every /tmp/NAME path moved into the scratch
# folder, and compared with dates and the scratch path written back.
SCRIPTS = ("tools/make_certs.sh", "deploy/install.sh")


def run_script(env, words, scratch):
    """Runs a documented script; returns (exit status, output as the doc
    would show it)."""
    def into(text):
        return re.sub(r"/tmp/([A-Za-z0-9._-]+)", lambda m: os.path.join(scratch, m.group(1)), text)

    full_env = dict(os.environ)
    full_env.update({k: into(v) for k, v in env.items()})
    run = subprocess.run([words[0]] + [into(w) for w in words[1:]], cwd=ROOT, env=full_env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=300)
    out = run.stdout.replace(scratch + "/", "/tmp/")
    return run.returncode, out


def differences(shown, real):
    """The lines that differ, on one line: '-' the doc's, '+' the real ones."""
    diff = [l for l in difflib.unified_diff(shown, real, lineterm="", n=0)
            if l[:1] in "+-" and not l.startswith(("---", "+++"))]
    return " | ".join(diff[:8]) + (" | ..." if len(diff) > 8 else "")


def dates_aside(lines):
    return [re.sub(r"notAfter=[^)]*", "notAfter=DATE", l) for l in lines]


# The command whose --json output a ```json block shows, by the first
# words of the paragraph before it.
JSON_COMMANDS = [("`status`", ["status"]), ("`workers`", ["workers"]),
                 ("`staleness`", ["staleness"]), ("`checkpoint`", ["checkpoint"]),
                 ("`export`", ["export", "--out=model.pt"]),
                 ("`mta`", ["mta", "--staleness=2..8"])]


def json_blocks(text):
    """(args, block text, line number) for each ```json block whose
    paragraph before names a rogctl command."""
    out = []
    paragraph = ""
    blank = True
    block = None
    for number, line in enumerate(text.splitlines(), 1):
        if block is not None:
            if line.startswith("```"):
                out.append(block)
                block = None
            else:
                block[1].append(line)
            continue
        if line.startswith("```json"):
            for start, args in JSON_COMMANDS:
                if paragraph.startswith(start):
                    block = (args, [], number)
            continue
        if not line.strip():
            blank = True
        elif blank:
            paragraph = line
            blank = False
    return out


def key_order(text):
    """The keys of a JSON text in the order they first appear."""
    seen = []
    for key in re.findall(r'"([A-Za-z0-9_]+)":', text):
        if key not in seen:
            seen.append(key)
    return seen


def strip_blank(lines):
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def compare(args, shown, real):
    """None when `shown` is faithful to `real`, else what differs."""
    shown = strip_blank(shown)
    real = strip_blank(real)
    kind = args[0] if args else ""
    if not shown:
        return "the doc shows no output for it"
    if not real:
        return "rogctl printed nothing"
    if kind == "status":
        # "..." in the doc leaves rows out; the rest keep their order.
        a = [columns(l)[0] for l in shown if l.strip() and l.strip() != "..."]
        b = [columns(l)[0] for l in real if l.strip()]
        elided = any(l.strip() == "..." for l in shown)
        rest = iter(b)
        fits = all(label in rest for label in a) if elided else a == b
        return None if fits else "row labels %s, rogctl prints %s" % (a, b)
    if kind == "workers":
        a, b = columns(shown[0]), columns(real[0])
        return None if a == b else "columns %s, rogctl prints %s" % (a, b)
    if kind == "staleness":
        if len(shown) < 2 or len(real) < 2:
            return differences(shown, real)

        def first(lines):
            return re.sub(r"\d+", "N", lines[0])

        def head(lines):
            c = columns(lines[1])
            # tensor, index, one column per worker, oldest unpushed, age
            return c[:2] + c[-2:]

        if first(shown) != first(real):
            return "first line '%s', rogctl prints '%s'" % (shown[0], real[0])
        if head(shown) != head(real):
            return "columns %s, rogctl prints %s" % (head(shown), head(real))
        legend = [l for l in shown if l.startswith("heat map")]
        real_legend = [l for l in real if l.startswith("heat map")]
        if legend and legend != real_legend:
            return "heat map legend '%s', rogctl prints '%s'" % (legend[0], real_legend)
        return None
    if kind == "rogd":
        return None if shown == real else differences(shown, real)
    if kind == "mta":
        return None if shown == real else differences(shown, real)
    if kind == "export":
        # Sizes and counts aside for a written model; messages exactly.
        def norm(lines):
            return [re.sub(r"\d+(\.\d+)?", "N", l) for l in lines]

        if shown and shown[0].startswith("model exported:"):
            return None if norm(shown) == norm(real) else differences(shown, real)
        return None if shown == real else differences(shown, real)
    if kind == "checkpoint":
        pat = r"checkpoint written: \S+ \([\d.]+ (B|KiB|MiB|GiB) in [\d.]+s\)$"
        if not re.match(pat, shown[0]):
            return "'%s' is not of the form rogctl prints" % shown[0]
        if not re.match(pat, real[0]):
            return "rogctl now prints '%s'" % real[0]
        return None
    return "no rule to compare `rogctl %s`; add one to tools/dev/check_doc_samples.py" % " ".join(args)


def metric_table(text):
    """{name: type} from the table under "## Metrics"."""
    section = text.split("\n## Metrics", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        if not line.startswith("| `rog_"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        for name in re.findall(r"`(rog_[a-z_]+)`", cells[0]):
            table[name] = cells[1]
    return table


def scraped(metrics_text):
    return dict(re.findall(r"^# TYPE (rog_[a-z_]+) (\w+)$", metrics_text, re.M))


def main(argv):
    opts = {}
    docs = []
    show = False
    for a in argv:
        if a == "--show":
            show = True
        elif a.startswith("--doc="):
            docs.append(a[len("--doc="):])
        elif a.startswith("--") and "=" in a and a[2:a.index("=")] in (
                "rogctl", "rogd", "server", "empty_server", "metrics"):
            opts[a[2:a.index("=")]] = a[a.index("=") + 1:]
        else:
            print("check_doc_samples: unknown argument '%s' (see --help in the source's first lines)"
                  % a, file=sys.stderr)
            return 2
    docs = docs or [os.path.join(ROOT, "docs", d)
                    for d in ("reference.md", "design.md", "operations.md")]
    for need in ("rogctl", "rogd", "server", "empty_server") + (() if show else ("metrics",)):
        if need not in opts:
            print("check_doc_samples: --%s is required" % need, file=sys.stderr)
            return 2
    opts["scratch"] = tempfile.mkdtemp(prefix="rog-doc-samples.")
    try:
        return check(opts, docs, show)
    finally:
        shutil.rmtree(opts["scratch"], ignore_errors=True)


def check(opts, docs, show):
    passed = failed = 0
    reference = None
    for doc in docs:
        text = open(doc).read()
        if "\n## Metrics" in text:
            reference = (doc, text)
        name = os.path.relpath(doc, ROOT)
        for target, args, shown, number, code in doc_commands(text):
            where = "%s:%d" % (name, number)
            if args[0] == "script":
                label = " ".join(["%s=%s" % kv for kv in args[1].items()] + args[2:])
            else:
                label = " ".join(args) if args[0] == "rogd" else "rogctl " + " ".join(args)
            if target.startswith("skip"):
                print("check_doc_samples: skip  %s (%s): %s" % (label, where, target[6:]))
                continue
            if args[0] == "script":
                try:
                    code_run, out = run_script(args[1], args[2:], opts["scratch"])
                except subprocess.TimeoutExpired:
                    code_run, out = -1, "(no exit within 300 s)"
                if show:
                    print("$ %s    # %s, exit %d" % (label, where, code_run))
                    print(out, end="")
                    continue
                shown_lines = dates_aside(strip_blank(shown))
                real_lines = dates_aside(strip_blank(out.splitlines()))
                if shown_lines == real_lines and code_run == code:
                    passed += 1
                    print("check_doc_samples: ok    %s (%s) prints what the doc shows" % (label, where))
                else:
                    failed += 1
                    print("check_doc_samples: FAIL  %s (%s): exit %d (the doc says %d); %s"
                          % (label, where, code_run, code, differences(shown_lines, real_lines)))
                continue
            server = opts["empty_server" if target == "empty" else "server"]
            cmd = [opts["rogctl"], "--server=" + server] + args
            if args[0] == "rogd":
                # A rogd that refuses to start: its message, exactly.
                if not re.search(r"exit [1-9]", text.splitlines()[number - 1]):
                    failed += 1
                    print("check_doc_samples: FAIL  %s (%s): a rogd sample must end with "
                          "'# exit N' (a refusal) or sit in a skipped block" % (label, where))
                    continue
                cmd = [opts["rogd"]] + args[1:]
            # In a scratch folder: export writes and reads files named in the doc.
            try:
                run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     universal_newlines=True, timeout=60, cwd=opts["scratch"])
            except subprocess.TimeoutExpired:
                failed += 1
                print("check_doc_samples: FAIL  %s (%s): no answer within 60 s" % (label, where))
                continue
            real = run.stdout.splitlines()
            if show:
                print("$ %s    # %s, exit %d" % (label, where, run.returncode))
                print(run.stdout, end="")
                continue
            why = compare(args, shown, real)
            if why is None and run.returncode != code:
                why = "exit %d, the doc says %d" % (run.returncode, code)
            if why is None:
                passed += 1
                print("check_doc_samples: ok    %s (%s) prints what the doc shows" % (label, where))
            else:
                failed += 1
                print("check_doc_samples: FAIL  %s (%s): %s" % (label, where, why))
        for args, block, number in json_blocks(text):
            where = "%s:%d" % (name, number)
            try:
                run = subprocess.run([opts["rogctl"], "--server=" + opts["server"], "--json"] + args,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     universal_newlines=True, timeout=60, cwd=opts["scratch"])
            except subprocess.TimeoutExpired:
                failed += 1
                print("check_doc_samples: FAIL  rogctl --json %s (%s): no answer within 60 s"
                      % (" ".join(args), where))
                continue
            if show:
                print("$ rogctl --json %s    # %s, exit %d" % (" ".join(args), where, run.returncode))
                print(run.stdout, end="")
                continue
            # Keys in the order they first appear: the doc's must be where
            # rogctl prints them (a sample may stop early, e.g. one worker).
            shown, real = key_order("\n".join(block)), key_order(run.stdout)
            if run.returncode == 0 and shown == real[:len(shown)]:
                passed += 1
                print("check_doc_samples: ok    rogctl --json %s (%s) has the doc's keys in its order"
                      % (" ".join(args), where))
            else:
                failed += 1
                print("check_doc_samples: FAIL  rogctl --json %s (%s): keys %s, rogctl prints %s (exit %d)"
                      % (" ".join(args), where, shown, real, run.returncode))
    if show:
        return 0
    if reference is None:
        print("check_doc_samples: FAIL  no doc with a \"## Metrics\" section among %s" % docs)
        return 1
    table = metric_table(reference[1])
    if opts["metrics"].startswith("http://"):
        with urllib.request.urlopen(opts["metrics"], timeout=20) as response:
            real = scraped(response.read().decode())
    else:
        real = scraped(open(opts["metrics"]).read())
    problems = []
    for name in sorted(set(table) | set(real)):
        if name not in real:
            problems.append("%s is in the table but not in a real scrape" % name)
        elif name not in table:
            problems.append("%s (%s) is scraped but not in the table" % (name, real[name]))
        elif table[name] != real[name]:
            problems.append("%s is a %s, the table says %s" % (name, real[name], table[name]))
    if problems:
        failed += 1
        print("check_doc_samples: FAIL  the metric table in %s: %s"
              % (os.path.relpath(reference[0], ROOT), "; ".join(problems)))
    else:
        passed += 1
        print("check_doc_samples: ok    the metric table lists the %d rog_* metrics of a real scrape"
              % len(real))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
