#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Host tests of splat-check.py (make hosttest): which console logs fail a
run, and where the rdma_cm handler_mutex lockdep report is accepted.
testdata/rdma-cm-lockdep.txt is the head and tail of the report the
sample_unplug selftest draws (its middle cut)."""
import contextlib
import importlib.util
import io
import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("splat_check", os.path.join(HERE, "splat-check.py"))
splat_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(splat_check)

with open(os.path.join(HERE, "testdata", "rdma-cm-lockdep.txt")) as _f:
    LOCKDEP = _f.read()
MARKER = "# selftests: iw_cm: sample_unplug.sh"
WARN = "[   12.000000] WARNING: drivers/infiniband/core/verbs.c:2164 at ib_destroy_qp_user\n"


class SplatCheck(unittest.TestCase):
    def run_check(self, text, *opts):
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(text)
        try:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                rc = splat_check.main([*opts, f.name])
        finally:
            os.unlink(f.name)
        return rc, out.getvalue()

    def test_clean_log_passes(self):
        self.assertEqual(self.run_check("[    1.0] booted\nok 1 x\n")[0], 0)

    def test_lockdep_report_fails_without_allowance(self):
        rc, out = self.run_check(LOCKDEP)
        self.assertEqual(rc, 1)
        self.assertIn("possible recursive locking", out)

    def test_lockdep_report_accepted_with_allowance(self):
        rc, out = self.run_check(LOCKDEP, "--allow-rdma-cm-lockdep")
        self.assertEqual(rc, 0)
        self.assertIn("accepted rdma_cm handler_mutex", out)

    def test_other_warning_stays_fatal_with_allowance(self):
        self.assertEqual(self.run_check(LOCKDEP + WARN, "--allow-rdma-cm-lockdep")[0], 1)

    def test_report_below_marker_accepted(self):
        text = "ok 1 kunit\n" + MARKER + "\n" + LOCKDEP
        self.assertEqual(self.run_check(text, "--allow-rdma-cm-lockdep-after", MARKER)[0], 0)

    def test_report_above_marker_fatal(self):
        text = LOCKDEP + MARKER + "\nok 1 sample_unplug\n"
        self.assertEqual(self.run_check(text, "--allow-rdma-cm-lockdep-after", MARKER)[0], 1)

    def test_marker_never_printed_keeps_report_fatal(self):
        self.assertEqual(self.run_check(LOCKDEP, "--allow-rdma-cm-lockdep-after", MARKER)[0], 1)

    def test_marker_option_needs_a_value(self):
        self.assertEqual(splat_check.main(["--allow-rdma-cm-lockdep-after"]), 2)

    def test_lockdep_report_on_another_lock_fatal(self):
        other = LOCKDEP.replace("&id_priv->handler_mutex", "&dev->mutex")
        self.assertEqual(self.run_check(other, "--allow-rdma-cm-lockdep")[0], 1)


if __name__ == "__main__":
    res = unittest.main(exit=False).result
    bad = len(res.failures) + len(res.errors)
    # cargo test's summary line, which tools/check.sh counts.
    print("test result: %s. %d passed; %d failed; %d ignored" %
          ("ok" if bad == 0 else "FAILED", res.testsRun - bad - len(res.skipped), bad, len(res.skipped)))
    sys.exit(1 if bad else 0)
