#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Every SKIP and XFAIL of a VM job must be declared (make check).

    check_skips.py JOB KTAP [EXPECTED]

KTAP is the kselftest runner's output of one boot (ktap-IMPL.txt): the
top-level results ("ok N selftests: iw_cm: T.sh") and, prefixed with "# ",
each test's own.  A result marked "# SKIP" or "# XFAIL" at either level is
accepted only when a line of EXPECTED (default: expected-skips.txt beside
this script) declares it:

    JOB-REGEX <TAB> TEST-REGEX <TAB> RESULT-REGEX <TAB> why

JOB-REGEX and TEST-REGEX match the job's name (tools/check.sh's suite
name: suite-c-ci, ulp-rust, ...) and the test script (nfs_rdma.sh) whole;
RESULT-REGEX is searched in the result's text (its description and
reason).  Prints each undeclared one and exits 1 if any; prints the
number of declared ones.  A skip a job may produce is a decision, written
down with its reason; one nobody declared is a result nobody looked at.
"""
import os
import re
import sys

TOP = re.compile(r"^(not )?ok \d+ selftests: iw_cm: (\S+)(.*)$")
INNER = re.compile(r"^# (not )?ok \d+ (.*)$")
START = re.compile(r"^# selftests: iw_cm: (\S+)")
MARK = re.compile(r"#\s*(SKIP|XFAIL)\b")


def load(path):
    rules = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 4 or not parts[3].strip():
                raise SystemExit("%s:%d: want JOB<TAB>TEST<TAB>RESULT<TAB>why" % (path, n))
            rules.append((re.compile(parts[0]), re.compile(parts[1]), re.compile(parts[2])))
    return rules


def marked(lines):
    """(test, text) of every SKIP/XFAIL result, top-level or a test's own."""
    test = ""
    for line in lines:
        m = START.match(line)
        if m:
            test = m.group(1)
            continue
        m = TOP.match(line)
        if m:
            if not m.group(1) and MARK.search(m.group(3)):
                yield m.group(2), "(whole test)" + m.group(3)
            continue
        m = INNER.match(line)
        if m and not m.group(1) and MARK.search(m.group(2)):
            yield test, m.group(2)


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    job, ktap = argv[0], argv[1]
    path = argv[2] if len(argv) == 3 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                        "expected-skips.txt")
    rules = load(path)
    with open(ktap, errors="replace") as f:
        lines = f.read().splitlines()
    declared = 0
    bad = 0
    for test, text in marked(lines):
        if any(j.fullmatch(job) and t.fullmatch(test) and r.search(text) for j, t, r in rules):
            declared += 1
        else:
            bad += 1
            print("undeclared: %s: %s" % (test, text))
    print("skips: %d declared, %d undeclared" % (declared, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
