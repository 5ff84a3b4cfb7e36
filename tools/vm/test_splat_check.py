#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Host tests of splat-check.py (make hosttest): which console logs fail a
run, and where the rdma_cm handler_mutex lockdep report is accepted.
testdata/rdma-cm-lockdep.txt is the whole report the sample_unplug
selftest draws (make demo, 2026-12-07: 93 lines); upstream-siw-lockdep.txt,
upstream-siw-kmemleak.txt and upstream-siw-flush-uaf.txt the reports of
upstream siw faults that --allow-upstream-siw accepts
(tools/testing/siw/0002, 0006 and 0010: the last from siw_flush.sh with
upstream siw, 2026-12-07)."""
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
with open(os.path.join(HERE, "testdata", "upstream-siw-lockdep.txt")) as _f:
    SIW_LOCKDEP = _f.read()
with open(os.path.join(HERE, "testdata", "upstream-siw-kmemleak.txt")) as _f:
    SIW_KMEMLEAK = _f.read()
with open(os.path.join(HERE, "testdata", "upstream-siw-flush-uaf.txt")) as _f:
    SIW_FLUSH_UAF = _f.read()
# The device's name read by the debug line of an endpoint freed after its
# device (users' world job, the kernel's own siw, 2026-12-08; 0007).
with open(os.path.join(HERE, "testdata", "upstream-siw-cep-device-uaf.txt")) as _f:
    SIW_CEP_DEVICE_UAF = _f.read()
# 0005's fault: upstream siw puts a listening endpoint twice; never accepted.
SIW_UAF = """[  300.100000] ==================================================================
[  300.100000] BUG: KASAN: slab-use-after-free in siw_cep_set_inuse+0x2d/0x1c0 [siw]
[  300.100000] Read of size 4 at addr ffff88810b2c4a34 by task rping/2011
[  300.100000] Call Trace:
[  300.100000]  siw_cep_set_inuse+0x2d/0x1c0 [siw]
[  300.100000]  siw_drop_listeners+0x5c/0x1a0 [siw]
[  300.100000]  siw_destroy_listen+0x23/0x40 [siw]
"""
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

    def test_upstream_siw_lockdep_fails_without_allowance(self):
        rc, out = self.run_check(SIW_LOCKDEP)
        self.assertEqual(rc, 1)
        self.assertIn("SOFTIRQ-safe -> SOFTIRQ-unsafe", out)
        # Nor does the rdma_cm allowance take it.
        self.assertEqual(self.run_check(SIW_LOCKDEP, "--allow-rdma-cm-lockdep")[0], 1)

    def test_upstream_siw_lockdep_accepted_naming_0002(self):
        rc, out = self.run_check(SIW_LOCKDEP, "--allow-upstream-siw")
        self.assertEqual(rc, 0, out)
        self.assertIn("accepted upstream siw report", out)
        self.assertIn("tools/testing/siw/0002-", out)

    def test_upstream_siw_inconsistent_lock_state_accepted(self):
        # lockdep's other form of the same fault.
        other = SIW_LOCKDEP.replace("SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected",
                                    "inconsistent lock state").replace(
            "... which became SOFTIRQ-irq-unsafe at:", "{SOFTIRQ-ON-R} state was registered at:")
        rc, out = self.run_check(other, "--allow-upstream-siw")
        self.assertEqual(rc, 0, out)
        self.assertIn("tools/testing/siw/0002-", out)

    def test_softirq_unsafe_lock_of_another_callback_fatal(self):
        # The same report with another driver's callback as the
        # softirq-unsafe user: not siw's fault.
        other = SIW_LOCKDEP.replace("siw_qp_llp_data_ready+0x3d/0x360 [siw]",
                                    "nvme_tcp_data_ready+0x3d/0x360 [nvme_tcp]")
        self.assertEqual(self.run_check(other, "--allow-upstream-siw")[0], 1)

    def test_softirq_unsafe_report_on_another_lock_fatal(self):
        other = SIW_LOCKDEP.replace("clock-AF_INET", "&dev->lock")
        self.assertEqual(self.run_check(other, "--allow-upstream-siw")[0], 1)

    def test_siw_frame_only_in_the_safe_trace_fatal(self):
        # siw in the report, but not where the lock became softirq-unsafe.
        other = SIW_LOCKDEP.replace("siw_qp_llp_data_ready+0x3d/0x360 [siw]",
                                    "sk_data_ready+0x3d/0x360").replace(
            "tcp_v4_rcv+0x2a4e/0x3b50", "siw_cm_llp_data_ready+0x1e/0x90 [siw]")
        self.assertEqual(self.run_check(other, "--allow-upstream-siw")[0], 1)

    def test_upstream_siw_kmemleak_accepted_naming_0006(self):
        rc, out = self.run_check(SIW_KMEMLEAK, "--allow-upstream-siw")
        self.assertEqual(rc, 0, out)
        self.assertIn("tools/testing/siw/0006-", out)
        self.assertEqual(self.run_check(SIW_KMEMLEAK)[0], 1)

    def test_kmemleak_of_another_allocation_fatal(self):
        other = SIW_KMEMLEAK.replace("siw_cm_alloc_work+0x8a/0x1f0 [siw]",
                                     "iwcm_alloc_work+0x8a/0x1f0 [iw_cm]")
        self.assertEqual(self.run_check(other, "--allow-upstream-siw")[0], 1)

    def test_upstream_siw_use_after_free_stays_fatal(self):
        # 0005's use-after-free in siw_destroy_listen is not accepted: the
        # tests do not run what draws it with upstream siw.
        rc, out = self.run_check(SIW_LOCKDEP + SIW_UAF, "--allow-upstream-siw")
        self.assertEqual(rc, 1)
        self.assertIn("siw_cep_set_inuse", out)

    def test_upstream_siw_flush_uaf_accepted_naming_0010(self):
        rc, out = self.run_check(SIW_FLUSH_UAF, "--allow-upstream-siw")
        self.assertEqual(rc, 0, out)
        self.assertIn("tools/testing/siw/0010-", out)
        self.assertEqual(self.run_check(SIW_FLUSH_UAF)[0], 1)

    def test_use_after_free_in_another_siw_function_fatal(self):
        other = SIW_FLUSH_UAF.replace("in siw_sq_flush_wr+0xee/0x150 [siw]",
                                      "in siw_sq_flush+0xee/0x150 [siw]")
        self.assertEqual(self.run_check(other, "--allow-upstream-siw")[0], 1)

    def test_flush_write_after_free_fatal(self):
        # Only siw's read of the freed WR's next pointer is 0010's.
        other = SIW_FLUSH_UAF.replace("Read of size 8 at", "Write of size 8 at")
        self.assertEqual(self.run_check(other, "--allow-upstream-siw")[0], 1)

    def test_upstream_siw_cep_device_read_accepted_naming_0007(self):
        rc, out = self.run_check(SIW_CEP_DEVICE_UAF, "--allow-upstream-siw")
        self.assertEqual(rc, 0, out)
        self.assertIn("tools/testing/siw/0007-", out)
        self.assertEqual(self.run_check(SIW_CEP_DEVICE_UAF)[0], 1)

    def test_cep_device_read_reused_memory_accepted(self):
        oob = SIW_CEP_DEVICE_UAF.replace("slab-use-after-free in string", "slab-out-of-bounds in string")
        rc, out = self.run_check(oob, "--allow-upstream-siw")
        self.assertEqual(rc, 0, out)
        self.assertIn("tools/testing/siw/0007-", out)

    def test_string_read_from_another_caller_fatal(self):
        # The same read from a debug line that is not an endpoint's put.
        other = SIW_CEP_DEVICE_UAF.replace("siw_cep_put+0x41e/0x460 [siw]", "siw_qp_llp_close+0x41e/0x460 [siw]")
        self.assertNotEqual(other, SIW_CEP_DEVICE_UAF)
        self.assertEqual(self.run_check(other, "--allow-upstream-siw")[0], 1)

    def test_memory_siw_newlink_did_not_allocate_fatal(self):
        # The endpoint's put reaching memory that is not the device's.
        other = SIW_CEP_DEVICE_UAF.replace(" siw_newlink+0x878/0xcf0 [siw]", " siw_cep_alloc+0x878/0xcf0 [siw]")
        self.assertNotEqual(other, SIW_CEP_DEVICE_UAF)
        self.assertEqual(self.run_check(other, "--allow-upstream-siw")[0], 1)

    def test_device_lock_read_by_an_endpoints_put_accepted(self):
        # The device itself freed (its lock, in the C iw_cm's users' world
        # boot): the same rule, another first function.
        lock = SIW_CEP_DEVICE_UAF.replace("slab-use-after-free in string+0x1f7/0x240",
                                          "slab-use-after-free in _raw_spin_lock_irqsave+0x3f/0x60")
        rc, out = self.run_check(lock, "--allow-upstream-siw")
        self.assertEqual(rc, 0, out)
        self.assertIn("tools/testing/siw/0007-", out)
        inside = SIW_CEP_DEVICE_UAF.replace("slab-use-after-free in string+0x1f7/0x240",
                                            "slab-use-after-free in siw_cep_put+0x329/0x460 [siw]")
        self.assertEqual(self.run_check(inside, "--allow-upstream-siw")[0], 0)

    def test_lockdep_off_after_an_accepted_kasan_report(self):
        # KASAN's taint turns lock debugging off: excused after an accepted
        # KASAN report, not without one.
        off = "[  700.000000] Disabling lock debugging due to kernel taint\nVM: debug facility off at the end: lockdep (debug_locks 0)\n"
        rc, out = self.run_check(SIW_CEP_DEVICE_UAF + off, "--allow-upstream-siw")
        self.assertEqual(rc, 0, out)
        self.assertEqual(self.run_check("[    1.000000] all fine\n" + off, "--allow-upstream-siw")[0], 1)

    def test_upstream_siw_rq_flush_uaf_accepted(self):
        rq = SIW_FLUSH_UAF.replace("siw_sq_flush_wr+0xee/0x150", "siw_rq_flush_wr+0x9c/0xe0")
        rc, out = self.run_check(rq, "--allow-upstream-siw")
        self.assertEqual(rc, 0, out)
        self.assertIn("tools/testing/siw/0010-", out)

    QUOTE = ("# # dmesg (upstream siw): [ 80.264367] BUG: KASAN: slab-use-after-free"
             " in siw_sq_flush_wr+0xee/0x150 [siw]\n")

    def test_selftest_quote_of_an_accepted_report(self):
        text = SIW_FLUSH_UAF + self.QUOTE + "# ok 6 teardown (rdma link delete) # XFAIL\n"
        self.assertEqual(self.run_check(text, "--allow-upstream-siw")[0], 0)
        # Without the allowance the quote is a splat like the report.
        self.assertEqual(self.run_check(self.QUOTE)[0], 1)
        # Any other quote of a report stays fatal.
        other = self.QUOTE.replace("dmesg (upstream siw)", "dmesg")
        self.assertEqual(self.run_check(SIW_FLUSH_UAF + other, "--allow-upstream-siw")[0], 1)

    def test_quote_without_its_report_fatal(self):
        self.assertEqual(self.run_check(self.QUOTE, "--allow-upstream-siw")[0], 1)
        # The quote of another report than the one accepted.
        other = self.QUOTE.replace("siw_sq_flush_wr", "siw_rq_flush_wr")
        self.assertEqual(self.run_check(SIW_FLUSH_UAF + other, "--allow-upstream-siw")[0], 1)

    def test_report_after_a_quote_fatal(self):
        text = SIW_FLUSH_UAF + self.QUOTE + WARN
        self.assertEqual(self.run_check(text, "--allow-upstream-siw")[0], 1)

    def test_report_interleaved_with_a_quote_fatal(self):
        # A kernel report printed into the middle of a quote's line on
        # the serial console.
        cut = self.QUOTE.index("in siw_sq")
        text = SIW_FLUSH_UAF + self.QUOTE[:cut] + WARN.strip() + self.QUOTE[cut:]
        self.assertEqual(self.run_check(text, "--allow-upstream-siw")[0], 1)

    def test_other_warning_stays_fatal_with_siw_allowance(self):
        self.assertEqual(self.run_check(SIW_KMEMLEAK + WARN, "--allow-upstream-siw")[0], 1)

    def test_both_allowances_together(self):
        text = SIW_LOCKDEP + MARKER + "\n" + LOCKDEP
        self.assertEqual(self.run_check(text, "--allow-upstream-siw",
                                        "--allow-rdma-cm-lockdep-after", MARKER)[0], 0)

    def test_lockdep_report_read_whole_past_80_lines(self):
        self.assertGreater(len(LOCKDEP.splitlines()), 80)
        rc, out = self.run_check(LOCKDEP, "--allow-rdma-cm-lockdep")
        self.assertEqual(rc, 0, out)

    def test_lockdep_report_held_outside_device_removal_fatal(self):
        other = LOCKDEP.replace("at: cma_process_remove+", "at: cma_iw_handler+", 1)
        self.assertNotEqual(other, LOCKDEP)
        # (Both mentions of the held lock: the report and "locks held".)
        other = other.replace("at: cma_process_remove+0x24f", "at: cma_iw_handler+0x24f")
        self.assertEqual(self.run_check(other, "--allow-rdma-cm-lockdep")[0], 1)

    def test_lockdep_report_without_the_removal_chain_fatal(self):
        cut = "\n".join(l for l in LOCKDEP.splitlines() if " cma_remove_one+" not in l) + "\n"
        self.assertNotEqual(cut, LOCKDEP)
        self.assertEqual(self.run_check(cut, "--allow-rdma-cm-lockdep")[0], 1)

    LOCKDEP_OFF = "VM: debug facility off at the end: lockdep (debug_locks 0)\n"
    KMEMLEAK_OFF = "VM: debug facility off at the end: kmemleak\n"

    def test_lockdep_off_at_the_end_fails(self):
        self.assertEqual(self.run_check("ok 1 x\n" + self.LOCKDEP_OFF)[0], 1)

    def test_kmemleak_off_at_the_end_fails(self):
        self.assertEqual(self.run_check("ok 1 x\n" + self.KMEMLEAK_OFF)[0], 1)

    def test_lockdep_off_after_an_accepted_lockdep_report_passes(self):
        rc, out = self.run_check(LOCKDEP + self.LOCKDEP_OFF, "--allow-rdma-cm-lockdep")
        self.assertEqual(rc, 0, out)
        self.assertEqual(self.run_check(SIW_LOCKDEP + self.LOCKDEP_OFF, "--allow-upstream-siw")[0], 0)

    def test_kmemleak_off_after_an_accepted_lockdep_report_fails(self):
        self.assertEqual(self.run_check(LOCKDEP + self.KMEMLEAK_OFF, "--allow-rdma-cm-lockdep")[0], 1)

    def test_lockdep_off_after_an_accepted_kmemleak_report_fails(self):
        self.assertEqual(self.run_check(SIW_KMEMLEAK + self.LOCKDEP_OFF, "--allow-upstream-siw")[0], 1)


if __name__ == "__main__":
    res = unittest.main(exit=False).result
    bad = len(res.failures) + len(res.errors)
    # cargo test's summary line, which tools/check.sh counts.
    print("test result: %s. %d passed; %d failed; %d ignored" %
          ("ok" if bad == 0 else "FAILED", res.testsRun - bad - len(res.skipped), bad, len(res.skipped)))
    sys.exit(1 if bad else 0)
