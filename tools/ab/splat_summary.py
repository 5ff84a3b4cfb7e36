#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Kernel reports in a console log or dmesg, with rdma_cm's handler_mutex
lockdep report told apart.

    splat_summary.py --summary LOG   one line: what was seen ("none", ...)
    splat_summary.py --check LOG     print every report; exit 1 when one is
                                     not the accepted rdma_cm report

Reports are cut out by tools/vm/splat-check.py's reports().  The accepted
one (Documentation/iw_cm.rst, issue 4): lockdep's "possible recursive locking"
or "possible circular locking dependency" where the lock being acquired or
the lock already held is rdma_cm's &id_priv->handler_mutex and the trace
runs through rdma_cm.  Every rdma_cm id shares that lock class, so a ULP
that destroys other ids inside its cm handler (or in work that handler
waits for) draws it with any iw_cm.  Everything else (hung task, KASAN,
kmemleak, WARNING, other lockdep reports) is a splat.
"""
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "splat_check", os.path.join(HERE, "..", "vm", "splat-check.py"))
splat_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(splat_check)

LOCKDEP = re.compile(
    r"WARNING: possible (recursive locking detected|circular locking dependency detected)")


def lock_after(block, marker):
    """The lock named on the line after MARKER, or ''."""
    for i, line in enumerate(block[:-1]):
        if marker in line:
            m = re.search(r"\(([^{]*)\)\{", block[i + 1])
            return m.group(1) if m else ""
    return ""


def classify(block):
    """(accepted, short description) of one report."""
    head = block[0] if not block[0].startswith("------------[ cut here") or len(block) < 2 \
        else block[1]
    m = LOCKDEP.search(head) or (len(block) > 1 and LOCKDEP.search(block[1]))
    if m:
        kind = "recursive" if m.group(1).startswith("recursive") else "circular"
        acq = lock_after(block, "is trying to acquire lock:")
        held = lock_after(block, "already holding lock:")
        text = "\n".join(block)
        if ("handler_mutex" in acq or "handler_mutex" in held) and "[rdma_cm]" in text:
            return True, "rdma_cm handler_mutex lockdep (%s, accepted)" % kind
        return False, "lockdep %s: %s / %s" % (kind, acq or "?", held or "?")
    m = re.search(r"INFO: task (.*):\d+ blocked for more than", head)
    if m:
        return False, "hung task (%s)" % m.group(1)
    return False, re.sub(r"\s+", " ", head.strip())[:70]


def scan(path):
    with open(path, errors="replace") as f:
        # The tests' own echo of kernel lines ("# ...") is not a report.
        lines = [l for l in f.read().splitlines()
                 if not splat_check.TS.sub("", l).startswith(("#", "ab: "))]
    out = []
    for idx, block in splat_check.reports(lines):
        if block[0].startswith("------------[ cut here ]") and len(block) == 1:
            continue
        if block[0].startswith("Kernel panic - not syncing: Attempted to kill init!") and \
                any("sysrq: Power Off" in l for l in lines[max(0, idx - 5):idx]):
            # tools/vm/guest-init.sh exiting while the power-off it asked
            # for is under way: the harness, not the test.
            out.append((idx, block, False, "harness: init exited during power-off"))
            continue
        out.append((idx, block) + classify(block))
    return out


def main(argv):
    if len(argv) != 2 or argv[0] not in ("--summary", "--check"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    mode, path = argv
    if not os.path.exists(path):
        print("no log" if mode == "--summary" else "splat_summary: %s missing" % path)
        return 0 if mode == "--summary" else 1
    found = scan(path)
    if mode == "--summary":
        counts = {}
        for _, _, _, desc in found:
            counts[desc] = counts.get(desc, 0) + 1
        print("; ".join("%s x%d" % (d, n) if n > 1 else d for d, n in counts.items()) or "none")
        return 0
    bad = 0
    for idx, block, accepted, desc in found:
        if accepted:
            print("splat_summary: accepted at line %d: %s" % (idx + 1, desc))
            continue
        bad += 1
        print("splat_summary: line %d: %s" % (idx + 1, desc))
        for line in block[:40]:
            print("    " + line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
