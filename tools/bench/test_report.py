#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Host tests of report.py (make hosttest): on a committed bench's results
every plot is drawn (a title gnuplot cannot parse once lost the
head-of-line plot: a kernel name or label with an apostrophe), names are
plain text ("iw_cm", not gnuplot's enhanced subscript), and a figure one
iw_cm lacks fails the report."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
RESULTS = os.path.join(TOP, "Documentation", "bench", "2026-12-08-debian", "results.txt")


class ReportTest(unittest.TestCase):
    def run_report(self, results, kernel="Debian's 7.3.4+deb13-amd64 (a test's kernel name)"):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        shutil.copy(results, os.path.join(d, "results.txt"))
        env = dict(os.environ, BENCH_KERNEL_TEXT=kernel)
        p = subprocess.run([sys.executable, os.path.join(HERE, "report.py"), d, "3", "0"],
                           env=env, capture_output=True, text=True)
        return d, p

    def test_every_plot_drawn(self):
        d, p = self.run_report(RESULTS)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("gnuplot failed", p.stderr)
        for name in ("ratio", "teardown", "hol", "memory", "scale"):
            self.assertTrue(os.path.getsize(os.path.join(d, name + ".svg")) > 0, name)

    def test_names_are_plain_text(self):
        d, p = self.run_report(RESULTS)
        with open(os.path.join(d, "hol.svg")) as f:
            self.assertIn("iw_cm", f.read())

    def test_a_figure_one_side_lacks_fails(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        with open(RESULTS) as f:
            lines = [l for l in f if not (l.startswith("RESULT rust ") and " hol_kernel_ms " in l)]
        part = os.path.join(d, "results.txt")
        with open(part, "w") as f:
            f.writelines(lines)
        _, p = self.run_report(part)
        self.assertEqual(p.returncode, 1)
        self.assertIn("hol_kernel_ms", p.stdout)


if __name__ == "__main__":
    res = unittest.main(exit=False).result
    bad = len(res.failures) + len(res.errors)
    print("test result: %s. %d passed; %d failed; %d ignored" %
          ("ok" if bad == 0 else "FAILED", res.testsRun - bad - len(res.skipped), bad, len(res.skipped)))
    sys.exit(1 if bad else 0)
