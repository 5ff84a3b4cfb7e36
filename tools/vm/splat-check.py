#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Fail (exit 1) when a kernel console log holds a splat; print each one.

A splat is a WARNING, BUG, Oops, panic, lockdep report, hung task, KASAN,
UBSAN, kmemleak leak, soft/hard lockup, RCU stall or workqueue lockup.

--allow-rdma-cm-lockdep accepts exactly one kind of report: lockdep's
"possible recursive locking" / "possible circular locking dependency" whose
every lock is rdma_cm's &id_priv->handler_mutex, the one already held taken
in rdma_cm's device removal (cma_process_remove), and whose whole backtrace
(read to its </TASK>, past the 80 lines of a block) is that removal's chain:
rdma_destroy_id called from a handler under cma_process_remove, under
cma_remove_one (Documentation/iw_cm.rst, "rdma_cm's handler_mutex lockdep
report": every rdma_cm id shares one lock class).
--allow-rdma-cm-lockdep-after MARKER accepts it only below the first line
that contains MARKER (a boot whose last test is the one that draws it: the
tests before it keep the report fatal).

--allow-upstream-siw (the boot that runs the selftests against the kernel's
own, unpatched siw: IWCM_SIW=stock) accepts the reports of upstream siw
faults that the test siw fixes, each matched by its own signature, and
nothing else (and a selftest's "dmesg (upstream siw): " quote of the first
line of a report accepted in the same log):
  tools/testing/siw/0002  lockdep's "SOFTIRQ-safe -> SOFTIRQ-unsafe lock
      order detected" (or "inconsistent lock state") about sk_callback_lock
      (clock-AF_INET), made softirq-unsafe by a siw socket callback
      (siw_*_llp_*), reported when a listener with unaccepted children is
      closed;
  tools/testing/siw/0006  kmemleak's unreferenced siw endpoint (siw_cep) or
      its work elements, allocated by siw_cep_alloc / siw_cm_alloc_work;
  tools/testing/siw/0007  KASAN's use-after-free (or, the memory reused,
      out-of-bounds) access by an endpoint that outlived its device
      (the first siw frame siw_cep_put or __siw_cep_dealloc) to memory
      siw_newlink allocated: the device (its lock, its endpoint list) or
      its name (the endpoint's debug line); a remote peer's connection
      held across the delete (the users' world job: check-all part 7);
  tools/testing/siw/0010  KASAN's slab-use-after-free read of 8 bytes (the
      freed WR's next pointer) in siw_sq_flush_wr / siw_rq_flush_wr, the
      WR freed by the completion handler siw called (siw_flush.sh).

A debugging facility that turned itself off before the end of the boot
(guest-init.sh's "VM: debug facility off at the end: ..." line) fails the
run too: nothing after it was checked.  lockdep's is excused only when a
lockdep report was accepted in the same log (lockdep switches itself off
after its first report), or a KASAN report (its taint turns lock debugging
off).
"""
import re
import sys

HEADERS = [
    r"WARNING: ",
    r"BUG: ",
    r"Oops: ",
    r"Kernel panic - not syncing",
    r"general protection fault",
    r"INFO: task .* blocked for more than",
    r"INFO: possible ",
    r"INFO: rcu.* detected stall",
    r"rcu: INFO: .* detected stalls",
    r"watchdog: BUG: soft lockup",
    r"Watchdog detected hard LOCKUP",
    r"BUG: workqueue lockup",
    r"UBSAN: ",
    r"KASAN: ",
    r"unreferenced object 0x",
    r"kernel BUG at",
    r"Unable to handle kernel",
    r"\[ cut here \]",
]
HDR = re.compile("|".join("(?:%s)" % h for h in HEADERS))
# Strip "[   12.345678] " timestamps.
TS = re.compile(r"^\[\s*\d+\.\d+\]\s?")
SIW_0002 = "tools/testing/siw/0002-RDMA-siw-take-sk_callback_lock-with-BH-disabled-in-the-socket-callbacks.patch"
SIW_0006 = "tools/testing/siw/0006-RDMA-siw-free-a-passive-endpoint-whose-MPA-request-never-came.patch"
SIW_0007 = "tools/testing/siw/0007-RDMA-siw-an-endpoint-keeps-its-devices-memory.patch"
SIW_0010 = "tools/testing/siw/0010-RDMA-siw-read-a-WRs-next-before-flushing-its-completion.patch"
SIW_FLUSH_UAF = re.compile(r"^BUG: KASAN: slab-use-after-free in siw_(sq|rq)_flush_wr\+0x[0-9a-f]+/0x[0-9a-f]+ \[siw\]$")
SIW_FLUSH_READ = re.compile(r"^Read of size 8 at addr [0-9a-f]+ by task ")
# (Not anchored: the serial console can put a line of the guest's own
# output in front of a report's first lines.)
SIW_CEP_DEVICE_KASAN = re.compile(r"BUG: KASAN: slab-(use-after-free|out-of-bounds) in \S+( \[\w+\])?$")
SIW_CEP_PUT = re.compile(r"^ +(siw_cep_put|__siw_cep_dealloc)\+0x[0-9a-f]+/0x[0-9a-f]+ \[siw\]$")
SIW_LOCKDEP_HDR = re.compile(
    r"WARNING: (SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected|inconsistent lock state)")
SIW_CALLBACK = re.compile(r"\bsiw_(qp|cm)_llp_(data_ready|state_change|write_space)\+0x[0-9a-f]+/0x[0-9a-f]+ \[siw\]")
SIW_KMEMLEAK_ALLOC = re.compile(r"\bsiw_(cep_alloc|cm_alloc_work)\+0x[0-9a-f]+/0x[0-9a-f]+ \[siw\]")
# A selftest's quote of a report that it found to be upstream siw's alone,
# by asking this script (lib.sh iwcm_upstream_siw_splats, iwcm_finish):
# "# # dmesg (upstream siw): [ts] HEADER".  Skipped only when HEADER is,
# word for word, the first line of a report accepted in the same log (the
# report itself judged there); anything else on the line keeps it fatal.
SIW_QUOTE = re.compile(r"^\s*# # dmesg \(upstream siw\): (?:\[\s*\d+\.\d+\]\s?)?(.*)$")
FACILITY_OFF = re.compile(r"^VM: debug facility off at the end: (\w+)")
LOCKDEP_ANY = re.compile(r"WARNING: (possible |inconsistent lock state|.*lock order detected)")
LOCKDEP_ALLOWED = re.compile(
    r"WARNING: possible (recursive locking detected|circular locking dependency detected)")


def reports(lines):
    """Yield (first_line_index, lines) per splat; a report runs until the
    next header, an end-of-trace marker or 80 lines."""
    for i, block, _ in reports_with_rest(lines):
        yield i, block


def reports_with_rest(lines):
    """reports(), and with each block the lines after it up to the next
    header (at most 200)."""
    i = 0
    n = len(lines)
    while i < n:
        line = TS.sub("", lines[i])
        if HDR.search(line) and not line.startswith("VM: "):
            j = i + 1
            while j < n and j - i < 80:
                nxt = TS.sub("", lines[j])
                if HDR.search(nxt) or nxt.startswith("VM: "):
                    break
                j += 1
                if "---[ end trace" in nxt:
                    break
            k = j
            while k < n and k - j < 200 and not HDR.search(TS.sub("", lines[k])):
                k += 1
            yield i, [TS.sub("", x) for x in lines[i:j]], [TS.sub("", x) for x in lines[j:k]]
            i = j
        else:
            i += 1


def upstream_siw_report(block, rest):
    """The tools/testing/siw patch whose upstream fault BLOCK reports, or
    None.  REST: the lines after the block up to the next header (a
    lockdep report runs past the 80 lines of a block)."""
    head = block[:2]
    if any(SIW_LOCKDEP_HDR.search(l) for l in head):
        text = block + rest
        # The lock the report is about is sk_callback_lock (lockdep's
        # class clock-AF_INET) and its softirq-unsafe use is siw's.
        if not any("(clock-AF_INET)" in l for l in text):
            return None
        unsafe = next((i for i, l in enumerate(text)
                       if re.search(r"which became SOFTIRQ-irq-unsafe at:|"
                                    r"\{SOFTIRQ-ON-[RW]\} state was registered at:", l)), None)
        if unsafe is None or not any(SIW_CALLBACK.search(l) for l in text[unsafe:unsafe + 40]):
            return None
        return SIW_0002
    if SIW_FLUSH_UAF.search(block[0]) and len(block) > 1 and SIW_FLUSH_READ.search(block[1]):
        # The WR's next pointer read after its completion, whose handler
        # freed it.
        return SIW_0010
    if SIW_CEP_DEVICE_KASAN.search(block[0]):
        # An endpoint freed after its device: the first frame of siw in
        # the call trace is the endpoint's put or dealloc, and the memory
        # it reached is the device's, allocated by siw_newlink (the
        # device itself, freed after the link's delete, or its name, read
        # for the endpoint's debug line).
        trace = next((i for i, l in enumerate(block) if l.strip() == "<TASK>"), None)
        if trace is None or len(block) < 2 or not re.search(r"(Read|Write) of size \d+ at addr", block[1]):
            return None
        frames = [l for l in block[trace + 1:trace + 40] if not l.lstrip().startswith("?")]
        siw = next((i for i, l in enumerate(frames) if l.rstrip().endswith("[siw]")), None)
        if siw is None or not SIW_CEP_PUT.search(frames[siw]):
            return None
        text = block + rest[:80]
        alloc = next((i for i, l in enumerate(text) if l.startswith("Allocated by task")), None)
        if alloc is None or not any(re.search(r"^ +siw_newlink\+0x", l) for l in text[alloc:alloc + 25]):
            return None
        return SIW_0007
    if block[0].startswith("unreferenced object 0x"):
        # kmemleak: the allocation's own backtrace (after "backtrace"),
        # siw's endpoint or one of its work elements.
        bt = next((i for i, l in enumerate(block) if "backtrace" in l), None)
        if bt is not None and any(SIW_KMEMLEAK_ALLOC.search(l) for l in block[bt:bt + 12]):
            return SIW_0006
    return None


# The device removal chain the allowance excuses, in the report's backtrace
# (innermost first): the ULP's destroy of another id, from its handler,
# under rdma_cm's removal of the device.
REMOVAL_CHAIN = ("rdma_destroy_id", "cma_process_remove", "cma_remove_one")


def whole_report(block, rest):
    """BLOCK and the lines after it up to the end of its backtrace."""
    text = list(block)
    if any("</TASK>" in l for l in block):
        return text
    for l in rest:
        text.append(l)
        if "</TASK>" in l:
            break
    return text


def removal_chain(text):
    """The backtrace's frames include REMOVAL_CHAIN in order, in rdma_cm."""
    start = next((i for i, l in enumerate(text) if "stack backtrace:" in l or "Call Trace:" in l), None)
    if start is None:
        return False
    want = list(REMOVAL_CHAIN)
    for l in text[start:]:
        m = re.match(r"\s*([A-Za-z0-9_.]+)\+0x[0-9a-f]+/0x[0-9a-f]+ \[rdma_cm\]\s*$", l)
        if m and want and m.group(1) == want[0]:
            want.pop(0)
    return not want


def rdma_cm_handler_mutex_report(block, rest=()):
    if not LOCKDEP_ALLOWED.search(block[0]) and not (
            len(block) > 1 and LOCKDEP_ALLOWED.search(block[1])):
        return False
    # The locks the report is about: the one being acquired, the one
    # already held, and (circular) every link of the dependency chain.
    # The "locks held by" list that follows names unrelated held locks.
    about = []
    for i, line in enumerate(block):
        if re.search(r"is trying to acquire lock:|already holding lock:", line) and i + 1 < len(block):
            about.append(block[i + 1])
        elif re.match(r"\s*-> #\d+ \(", line):
            about.append(line)
    locks = set()
    for line in about:
        locks.update(re.findall(r"\(([^()]*?)\)\{[^}]*\}", line))
    if not locks or any("handler_mutex" not in l for l in locks):
        return False
    # The lock already held (recursive) was taken by rdma_cm's removal.
    held = [block[i + 1] for i, l in enumerate(block)
            if "already holding lock:" in l and i + 1 < len(block)]
    if held and not all(re.search(r"at: cma_process_remove\+", l) for l in held):
        return False
    return removal_chain(whole_report(block, rest))


def quoted_accepted_report(line, accepted):
    """Is LINE a selftest's quote of a report whose first line is one of
    ACCEPTED (and nothing more)?"""
    m = SIW_QUOTE.search(line)
    if not m:
        return False
    return m.group(1).strip() in accepted


def main(argv):
    allow = False
    allow_siw = False
    marker = None
    paths = []
    args = iter(argv)
    for a in args:
        if a == "--allow-rdma-cm-lockdep":
            allow = True
        elif a == "--allow-upstream-siw":
            allow_siw = True
        elif a == "--allow-rdma-cm-lockdep-after":
            allow = True
            marker = next(args, None)
            if not marker:
                print("splat-check: --allow-rdma-cm-lockdep-after needs a MARKER")
                return 2
        else:
            paths.append(a)
    bad = 0
    allowed = 0
    for p in paths:
        with open(p, errors="replace") as f:
            lines = f.read().splitlines()
        # Reports at or above this line index stay fatal.
        allow_from = 0
        if marker is not None:
            allow_from = next((i for i, l in enumerate(lines) if marker in l), len(lines))
        # The first lines of the upstream siw reports accepted in this
        # log, which a selftest may quote.
        siw_accepted = set()
        if allow_siw:
            siw_accepted = {block[0].strip() for _, block, rest in reports_with_rest(lines)
                            if upstream_siw_report(block, rest)}
        lockdep_accepted = False
        for idx, block, rest in reports_with_rest(lines):
            # "[ cut here ]" is followed by the real header: report once.
            if block[0].startswith("------------[ cut here ]") and len(block) == 1:
                continue
            if allow and idx > allow_from and rdma_cm_handler_mutex_report(block, rest):
                allowed += 1
                lockdep_accepted = True
                print("splat-check: accepted rdma_cm handler_mutex lockdep report at line %d" % (idx + 1))
                continue
            if allow_siw and quoted_accepted_report(block[0], siw_accepted):
                continue
            fix = upstream_siw_report(block, rest) if allow_siw else None
            if fix:
                allowed += 1
                # (A KASAN report taints the kernel, which turns lock
                # debugging off: "Disabling lock debugging due to kernel
                # taint".)
                lockdep_accepted |= any(LOCKDEP_ANY.search(l) or "BUG: KASAN: " in l for l in block[:2])
                print("splat-check: accepted upstream siw report at line %d: %s (fixed by %s)" %
                      (idx + 1, block[0].strip(), fix))
                continue
            bad += 1
            print("splat-check: %s:%d:" % (p, idx + 1))
            for l in block[:60]:
                print("    " + l)
        for idx, line in enumerate(lines):
            m = FACILITY_OFF.search(TS.sub("", line))
            if not m:
                continue
            if m.group(1) == "lockdep" and lockdep_accepted:
                print("splat-check: lockdep off at the end after the report accepted above")
                continue
            bad += 1
            print("splat-check: %s:%d: %s" % (p, idx + 1, line.strip()))
    if bad:
        print("splat-check: %d splat(s)" % bad)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
