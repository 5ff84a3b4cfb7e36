#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Host tests of check_skips.py (make hosttest): an undeclared SKIP or
XFAIL, inside a passing test or of a whole test, fails the job; a declared
one is counted; the committed expected-skips.txt parses."""
import contextlib
import importlib.util
import io
import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("check_skips", os.path.join(HERE, "check_skips.py"))
check_skips = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_skips)

RULES = ("suite-c.*\t.*\tnot with the C iw_cm\tC cannot meet it\n"
         "kunit-.*\tkunit\\.sh\tno stress_peak\tnot asked for\n")
KTAP = """# selftests: iw_cm: remote_peer.sh
# ok 1 nvmet: target
# ok 2 nvmet: peer rtr_fin # SKIP not with the C iw_cm (BUG)
ok 1 selftests: iw_cm: remote_peer.sh
"""


class CheckSkips(unittest.TestCase):
    def run_check(self, job, ktap, rules=RULES):
        with tempfile.TemporaryDirectory() as d:
            k = os.path.join(d, "ktap.txt")
            r = os.path.join(d, "rules.txt")
            with open(k, "w") as f:
                f.write(ktap)
            with open(r, "w") as f:
                f.write(rules)
            with contextlib.redirect_stdout(io.StringIO()) as out:
                rc = check_skips.main([job, k, r])
        return rc, out.getvalue()

    def test_declared_skip_passes(self):
        rc, out = self.run_check("suite-c-ci", KTAP)
        self.assertEqual(rc, 0, out)
        self.assertIn("1 declared, 0 undeclared", out)

    def test_same_skip_in_another_job_fails(self):
        rc, out = self.run_check("suite-rust-ci", KTAP)
        self.assertEqual(rc, 1)
        self.assertIn("undeclared: remote_peer.sh: nvmet: peer rtr_fin", out)

    def test_undeclared_skip_inside_a_passing_test_fails(self):
        rc, _ = self.run_check("suite-c-ci", KTAP.replace("not with the C iw_cm", "no debugfs"))
        self.assertEqual(rc, 1)

    def test_xfail_is_judged_like_a_skip(self):
        rc, _ = self.run_check("suite-c-ci", KTAP.replace("# SKIP", "# XFAIL"))
        self.assertEqual(rc, 0)
        rc, _ = self.run_check("suite-c-ci", KTAP.replace("# SKIP not with", "# XFAIL with"))
        self.assertEqual(rc, 1)

    def test_whole_test_skipped_must_be_declared(self):
        ktap = "ok 1 selftests: iw_cm: kunit.sh # SKIP no stress_peak\n"
        self.assertEqual(self.run_check("kunit-x", ktap)[0], 0)
        self.assertEqual(self.run_check("kunit-x", ktap.replace("kunit.sh", "rping.sh"))[0], 1)

    def test_failed_results_are_not_skips(self):
        ktap = "# selftests: iw_cm: x.sh\n# not ok 1 y # SKIP z\nnot ok 1 selftests: iw_cm: x.sh\n"
        self.assertEqual(self.run_check("suite-rust-ci", ktap)[0], 0)

    def test_a_rule_without_a_reason_is_refused(self):
        with self.assertRaises(SystemExit):
            self.run_check("suite-c-ci", KTAP, "suite-c.*\t.*\tx\t\n")

    def test_committed_rules_parse(self):
        self.assertTrue(check_skips.load(os.path.join(HERE, "expected-skips.txt")))


if __name__ == "__main__":
    res = unittest.main(exit=False).result
    bad = len(res.failures) + len(res.errors)
    print("test result: %s. %d passed; %d failed; %d ignored" %
          ("ok" if bad == 0 else "FAILED", res.testsRun - bad - len(res.skipped), bad, len(res.skipped)))
    sys.exit(1 if bad else 0)
