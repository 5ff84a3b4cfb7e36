#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""make bench's report: medians, spread and Rust/C ratios of the figures
tools/bench/bench-guest.sh printed, as DIR/report.md, and SVG plots drawn
by gnuplot (ratio per figure, teardown time against queue count,
head-of-line delay on a log scale, slab bytes per cm_id, and the scale
figures' cost per operation against live cm_ids).

    report.py DIR ROUNDS VM_EXIT

BENCH_KERNEL_TEXT names the kernel and VM in the report (bench.sh).

Reads DIR/results.txt ("RESULT impl round metric value" lines).  Exits 1
when a figure has no value for one of the two iw_cms or the VM run failed.
"""
import os
import re
import statistics
import subprocess
import sys

# (metric, label, unit, lower is better)
ORDER = [
    ("cmtime10_connect_us", "cmtime -c 10: connect", "us/conn"),
    ("cmtime10_disconnect_us", "cmtime -c 10: disconnect", "us/conn"),
    ("cmtime10_destroy_us", "cmtime -c 10: destroy", "us/conn"),
    ("cmtime10_wall_s", "cmtime -c 10: client wall time", "s"),
    ("cmtime100_connect_us", "cmtime -c 100: connect", "us/conn"),
    ("cmtime100_disconnect_us", "cmtime -c 100: disconnect", "us/conn"),
    ("cmtime100_destroy_us", "cmtime -c 100: destroy", "us/conn"),
    ("cmtime100_wall_s", "cmtime -c 100: client wall time", "s"),
    ("cmtime500_connect_us", "cmtime -c 500: connect", "us/conn"),
    ("cmtime500_disconnect_us", "cmtime -c 500: disconnect", "us/conn"),
    ("cmtime500_destroy_us", "cmtime -c 500: destroy", "us/conn"),
    ("cmtime500_wall_s", "cmtime -c 500: client wall time", "s"),
    ("ucmatose200_s", "ucmatose -c 200 (concurrent connects)", "s"),
    ("ib_send_lat_s", "ib_send_lat -R -n 200, client 3 s after the server", "s"),
    ("teardown8_s", "rdma link delete, sample ULP 8 queues", "s"),
    ("teardown32_s", "rdma link delete, sample ULP 32 queues", "s"),
    ("teardown64_s", "rdma link delete, sample ULP 64 queues", "s"),
    ("hol_kernel_ms", "head-of-line: another id's CONNECT_REQUEST, iw_cm upcall to handler (traced)", "ms"),
    ("hol_ms", "head-of-line: other ids' delay behind a 5 s handler (rping pair difference)", "ms"),
    ("hol_rping_stalled_ms", "head-of-line: rping pair during the stall", "ms"),
    ("hol_rping_alone_ms", "head-of-line: rping pair without stall", "ms"),
    ("mem2_bytes_per_id", "slab bytes per cm_id, 5 cm_ids", "B"),
    ("mem50_bytes_per_id", "slab bytes per cm_id, 101 cm_ids", "B"),
    ("mem500_bytes_per_id", "slab bytes per cm_id, 1001 cm_ids", "B"),
]
LABEL = {m: (label, unit) for m, label, unit in ORDER}
# The kernel and VM the figures come from (bench.sh: the test kernel or
# Debian's).
KERNEL_TEXT = os.environ.get("BENCH_KERNEL_TEXT", "the test VM (QEMU TCG, KASAN, lockdep, kmemleak)")

# The scale figures (tools/bench/iw_cm_scale/): scale<N>_<op>_{med,p99}_ns,
# scale<N>_bytes_per_id, scale<N>_build_ms.
SCALE_OPS = [
    ("create", "create (iw_create_cm_id)"),
    ("connect", "connect to ESTABLISHED (CONNECT_REPLY)"),
    ("request", "CONNECT_REQUEST to ESTABLISHED (accept)"),
    ("disconnect", "disconnect to CLOSE"),
    ("destroy", "destroy (iw_destroy_cm_id)"),
    ("listen", "listen (iw_cm_listen, backlog 128)"),
]
SCALE_RE = re.compile(r"^scale(\d+)_(.+)$")

# The irqsoff group (trace kernel, second boot): irqsoff_<case>_us and
# irqsoff_<case>_iwcm; (case, label, impls that must have it).
IRQSOFF_CASES = [
    ("table", "reading iw_cm/cm_ids in full (ours only: the C iw_cm has no table)", ("rust",)),
    ("slabinfo", "reading /proc/slabinfo (the counterpart for both)", ("c", "rust")),
    ("churn", "iw_cm_scale's create/connect/request/disconnect/destroy/listen churn", ("c", "rust")),
]
IRQSOFF_RE = re.compile(r"^irq(soff|task)_")


def load(path):
    vals = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) != 5 or p[0] != "RESULT":
                continue
            try:
                v = float(p[4])
            except ValueError:
                continue
            vals.setdefault((p[3], p[1]), []).append(v)
    return vals


def fmt(v):
    if v is None:
        return "n/a"
    if abs(v) >= 100:
        return "%.0f" % v
    if abs(v) >= 10:
        return "%.1f" % v
    return "%.3g" % v


def main():
    d, rounds, vmrc = sys.argv[1], sys.argv[2], int(sys.argv[3])
    vals = load(os.path.join(d, "results.txt"))
    metrics = [m for m, _, _ in ORDER if (m, "c") in vals or (m, "rust") in vals]
    metrics += sorted({m for m, _ in vals if not SCALE_RE.match(m) and not IRQSOFF_RE.match(m)} - set(metrics))
    rows = []
    missing = []
    for m in metrics:
        c = vals.get((m, "c"), [])
        r = vals.get((m, "rust"), [])
        if not c or not r:
            missing.append(m)
        mc = statistics.median(c) if c else None
        mr = statistics.median(r) if r else None
        ratio = mr / mc if (mc and mr is not None) else None
        rows.append((m, c, r, mc, mr, ratio))
    label = lambda m: LABEL.get(m, (m, ""))
    lines = [
        "# iw_cm benchmark: Rust against C, one VM boot",
        "",
        "%s ABBA rounds per iw_cm in one boot of %s;"
        " the same kernel, rdma_cm, test siw and sample ULP for both; only iw_cm.ko differs."
        % (rounds, KERNEL_TEXT),
        "Median of the rounds, spread as min-max; ratio = Rust median / C median"
        " (below 1: ours is faster or smaller).",
        "",
    ]
    if rows:
        lines += [
            "| figure | unit | C median (min-max) | Rust median (min-max) | Rust/C | rounds C, Rust |",
            "|---|---|---|---|---|---|",
        ]
    for m, c, r, mc, mr, ratio in rows:
        name, unit = label(m)
        spread = lambda v: "%s (%s-%s)" % (fmt(statistics.median(v)), fmt(min(v)), fmt(max(v))) if v else "n/a"
        lines.append("| %s | %s | %s | %s | %s | %d, %d |" % (
            name, unit, spread(c), spread(r), "%.2f" % ratio if ratio is not None else "n/a",
            len(c), len(r)))
    lines += ["", "How the figures are taken: tools/bench/bench-guest.sh (top of the file)."
              " Memory: slab bytes in use (/proc/slabinfo, every cache shrunk first, which"
              " empties KASAN's quarantine) before and after the sample ULP connected"
              " Q queues on each side, divided by the 2Q + 1 cm_ids it holds; everything"
              " but iw_cm.ko is the same in both columns, so the difference per cm_id is"
              " iw_cm's (with kmemleak's metadata: one object per allocation).",
              ""]
    scale_lines, scale_missing = scale_table(vals)
    lines += scale_lines
    missing += scale_missing
    irq_lines, irq_missing = irqsoff_table(vals)
    lines += irq_lines
    missing += irq_missing
    plots = draw(d, rows)
    s = draw_scale(d, vals)
    if s:
        plots.append(s)
    if plots:
        lines.append("Plots: " + ", ".join(plots))
        lines.append("")
        for p in plots:
            lines.append("![%s](%s)" % (p, p))
        lines.append("")
    if missing:
        lines.append("Not measured for both: " + ", ".join(missing))
    lines.append("VM exit status %d." % vmrc)
    text = "\n".join(lines) + "\n"
    with open(os.path.join(d, "report.md"), "w") as f:
        f.write(text)
    print(text)
    return 1 if (missing or vmrc != 0) else 0


def med(v):
    return statistics.median(v) if v else None


def scale_sizes(vals):
    return sorted({int(SCALE_RE.match(m).group(1)) for m, _ in vals if SCALE_RE.match(m)})


def scale_table(vals):
    """The scale table: per operation and size, each iw_cm's median and
    p99 (median over the rounds of each round's figure), Rust/C of the
    medians, and the growth ratio (median at this size / median at the
    smallest); slab bytes per live cm_id last."""
    sizes = scale_sizes(vals)
    if not sizes:
        return [], []
    missing = []
    g = lambda n, what, impl: med(vals.get(("scale%d_%s" % (n, what), impl), []))
    ratio = lambda a, b: "%.2f" % (a / b) if (a is not None and b) else "n/a"
    lines = [
        "## Scale: cost per operation against live cm_ids",
        "",
        "tools/bench/iw_cm_scale/: a fake iWARP provider and ULP drive the loaded iw_cm through"
        " its exported functions and the provider upcall, with N cm_ids alive (one listener,"
        " established connections, half active, half passive); each operation one at a time,"
        " ns per operation (ktime). Growth = median at N / median at %d (the target:"
        " at most 1.2 at 65,536)." % sizes[0],
        "",
        "| operation | cm_ids | C median | C p99 | Rust median | Rust p99 | Rust/C | growth C | growth Rust |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for op, label in SCALE_OPS:
        base_c, base_r = g(sizes[0], op + "_med_ns", "c"), g(sizes[0], op + "_med_ns", "rust")
        for n in sizes:
            mc, mr = g(n, op + "_med_ns", "c"), g(n, op + "_med_ns", "rust")
            pc, pr = g(n, op + "_p99_ns", "c"), g(n, op + "_p99_ns", "rust")
            if mc is None or mr is None:
                missing.append("scale%d_%s" % (n, op))
            lines.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                label, n, fmt(mc), fmt(pc), fmt(mr), fmt(pr), ratio(mr, mc),
                ratio(mc, base_c), ratio(mr, base_r)))
    for n in sizes:
        bc, br = g(n, "bytes_per_id", "c"), g(n, "bytes_per_id", "rust")
        if bc is None or br is None:
            missing.append("scale%d_bytes_per_id" % n)
        lines.append("| slab bytes per live cm_id (B) | %d | %s | | %s | | %s | | |" % (
            n, fmt(bc), fmt(br), ratio(br, bc)))
    builds = ", ".join("%d: C %s ms, Rust %s ms" % (n, fmt(g(n, "build_ms", "c")), fmt(g(n, "build_ms", "rust")))
                       for n in sizes)
    lines += ["", "Time to grow the population to N (batches of 64 connections): " + builds + ".", ""]
    return lines, missing


def irqsoff_table(vals):
    """The irqsoff table: the longest interrupts-off section (irqsoff
    tracer, tracing_max_latency, us) per case and iw_cm, median and max of
    the rounds, and in how many rounds an iw_cm function was in it."""
    if not any(IRQSOFF_RE.match(m) for m, _ in vals):
        return [], []
    missing = []
    lines = [
        "## Longest interrupts-off section (irqsoff tracer, trace kernel)",
        "",
        "A second boot of the trace kernel (the lean kernel plus CONFIG_IRQSOFF_TRACER), both"
        " iw_cms ABBA, with the population of tools/bench/iw_cm_scale/ alive (BENCH_IRQSOFF_IDS,"
        " 65,536 by default); tracing_max_latency reset before each case, the tracer's"
        " function-trace option off. Under TCG every figure is stretched (emulation,"
        " KASAN, lockdep) and includes the timer and 9p interrupts' own irqs-off time:"
        " compare the columns, not the absolute values with real hardware. Target for the"
        " table: at most 50 us. \"iw_cm in it\": rounds whose max section began, ended or"
        " had its stack in an iw_cm function / rounds.",
        "",
        "| case | C max irqs-off us: median (max) | Rust max irqs-off us: median (max) | Rust/C | iw_cm in it: C, Rust |",
        "|---|---|---|---|---|",
    ]
    for case, label, need in IRQSOFF_CASES:
        us = {i: vals.get(("irqsoff_%s_us" % case, i), []) for i in ("c", "rust")}
        inn = {i: vals.get(("irqsoff_%s_iwcm" % case, i), []) for i in ("c", "rust")}
        for i in need:
            if not us[i]:
                missing.append("irqsoff_%s_us (%s)" % (case, i))
        cell = lambda v: "%s (%s)" % (fmt(med(v)), fmt(max(v))) if v else "n/a"
        frac = lambda v: "%d/%d" % (sum(1 for x in v if x), len(v)) if v else "n/a"
        ratio = "%.2f" % (med(us["rust"]) / med(us["c"])) if (us["rust"] and us["c"] and med(us["c"])) else "n/a"
        lines.append("| %s | %s | %s | %s | %s, %s |" % (
            label, cell(us["c"]), cell(us["rust"]), ratio, frac(inn["c"]), frac(inn["rust"])))
    lines += ["", "The max sections' ends and stacks: the \"bench: irqsoff\" lines of vm-irqsoff.out;"
              " the traces: irqsoff-<impl>-<round>-<case>.trace in the boot's results folder.", ""]
    lines += irqtask_table(vals, missing)
    return lines, missing


def irqtask_table(vals, missing):
    """The longest interrupts-off section of the task that drives each
    case (irq_disable/irq_enable events filtered to its pid), interrupt
    entries apart: what the reader or the churn itself causes."""
    if not any(m.startswith("irqtask_") for m, _ in vals):
        return []
    lines = [
        "### The driving task's own sections (irq_disable/irq_enable events, set_event_pid)",
        "",
        "The same boot and population: the preemptirq trace events (the irqsoff tracer's hooks)"
        " of the one task that reads iw_cm/cm_ids once, or writes iw_cm_scale's measure, paired"
        " per CPU. Sections an interrupt's entry began are the interrupt's and are counted apart;"
        " context switches (begun in __schedule) are left out. Under TCG a section also lasts"
        " while the host deschedules the vCPU's thread, which is what the tail shows in every row:"
        " read the percentiles beside /proc/slabinfo's. Target for the table: at most 50 us.",
        "",
        "| case | C task sections us: p50 / p99 / p99.9 / max (> 50 us) | Rust task sections us: p50 / p99 / p99.9 / max (> 50 us) | Rust/C p99 | interrupts' max us: C, Rust | task sections: C, Rust |",
        "|---|---|---|---|---|---|",
    ]
    get = lambda m, i: vals.get(("irqtask_%s" % m, i), [])
    for case, label, need in IRQSOFF_CASES:
        for i in need:
            if not get(case + "_us", i):
                missing.append("irqtask_%s_us (%s)" % (case, i))

        def cell(i):
            parts = [get(case + k, i) for k in ("_p50_us", "_p99_us", "_p999_us", "_us", "_over50")]
            if not all(parts):
                return "n/a"
            return "%s / %s / %s / %s (%s)" % tuple(fmt(max(v)) for v in parts)
        one = lambda v: fmt(max(v)) if v else "n/a"
        p99 = {i: get(case + "_p99_us", i) for i in ("c", "rust")}
        ratio = "%.2f" % (med(p99["rust"]) / med(p99["c"])) if (p99["rust"] and p99["c"] and med(p99["c"])) else "n/a"
        lines.append("| %s | %s | %s | %s | %s, %s | %s, %s |" % (
            label, cell("c"), cell("rust"), ratio, one(get(case + "_irq_us", "c")), one(get(case + "_irq_us", "rust")),
            one(get(case + "_n", "c")), one(get(case + "_n", "rust"))))
    lines += ["", "Each one's ends: the \"bench: irqtask\" lines of vm-irqsoff.out; the events:"
              " irqtask-<impl>-<round>-<case>.trace.gz in the boot's results folder.", ""]
    return lines


def draw_scale(d, vals):
    """Median ns per operation against live cm_ids, one panel per
    operation, both iw_cms, log x; slab bytes per cm_id in the last."""
    sizes = scale_sizes(vals)
    if not sizes:
        return None
    g = lambda n, what, impl: med(vals.get(("scale%d_%s" % (n, what), impl), []))
    # (label, metric, unit, divisor)
    panels = [(label, op + "_med_ns", "us", 1000.0) for op, label in SCALE_OPS]
    panels.append(("slab bytes per live cm_id", "bytes_per_id", "B", 1.0))
    data, block = "", 0
    script = ("set termoption noenhanced\n"
              "set multiplot layout 2,4 title 'iw_cm scale: median cost against live cm_ids (%s)'\n"
              "set logscale x 10\nset xrange [%g:%g]\nset format y '%%g'\n"
              "set xlabel 'live cm_ids' font ',8'\nset key below horizontal font ',8'\n"
              % (KERNEL_TEXT.replace("'", "''"), sizes[0] / 2.0, sizes[-1] * 2.0))
    for label, what, unit, div in panels:
        rows = ""
        for n in sizes:
            c, r = g(n, what, "c"), g(n, what, "rust")
            if c is not None and r is not None:
                rows += "%d\t%.3f\t%.3f\n" % (n, c / div, r / div)
        if not rows:
            continue
        data += rows + "\n\n"
        script += ("set title '%s' font ',9'\nset ylabel '%s' font ',8'\nset yrange [0:*]\n"
                   "plot DATA index %d using 1:2 with linespoints title 'C', "
                   "DATA index %d using 1:3 with linespoints title 'Rust'\n"
                   % (label, unit, block, block))
        block += 1
    if not block:
        return None
    script += "unset multiplot\n"
    return gnuplot(d, "scale", script, data, size="1400,700")


def gnuplot(d, name, script, data, size="800,480"):
    """DATA in SCRIPT names the data file.  Plain text (noenhanced):
    gnuplot's enhanced mode would set the "_c" of "iw_cm" as a
    subscript."""
    dat = os.path.join(d, name + ".dat")
    with open(dat, "w") as f:
        f.write(data)
    svg = name + ".svg"
    full = ("set terminal svg size %s dynamic noenhanced font 'sans,11'\n"
            "set termoption noenhanced\n"
            "set output '%s'\nset datafile separator '\\t'\n" % (size, os.path.join(d, svg))) + \
        script.replace("DATA", "'%s'" % dat)
    try:
        subprocess.run(["gnuplot"], input=full, text=True, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except (OSError, subprocess.CalledProcessError) as e:
        print("report: gnuplot failed for %s: %s" % (svg, getattr(e, "stderr", e)), file=sys.stderr)
        return None
    return svg


def spread(v):
    """Median, min and max of the rounds."""
    return statistics.median(v), min(v), max(v)


def ratio_spread(c, r):
    """Rust/C per round (ABBA: the rounds pair up in order) as median, min
    and max; with unequal counts, the medians' ratio and the extremes."""
    if len(c) == len(r) and all(c):
        per = [y / x for x, y in zip(c, r)]
        return statistics.median(per), min(per), max(per)
    mc, mr = statistics.median(c), statistics.median(r)
    return mr / mc, min(r) / max(c), max(r) / min(c)


def short_label(m):
    """The table's label, short enough for an axis."""
    name, unit = LABEL.get(m, (m, ""))
    name = name.replace("head-of-line: another id's CONNECT_REQUEST, iw_cm upcall to handler (traced)",
                        "head-of-line, traced")
    name = name.replace("head-of-line: other ids' delay behind a 5 s handler (rping pair difference)",
                        "head-of-line, rping difference")
    name = name.replace("ib_send_lat -R -n 200, client 3 s after the server", "ib_send_lat -R -n 200")
    name = name.replace("ucmatose -c 200 (concurrent connects)", "ucmatose -c 200")
    name = name.replace("rdma link delete, sample ULP ", "unplug, ")
    name = name.replace("slab bytes per cm_id, ", "bytes/cm_id, ")
    return name


def draw(d, rows):
    """One plot per kind of figure; every point or bar with the min-max of
    its rounds."""
    by = {m: (c, r) for m, c, r, _, _, _ in rows if c and r}
    out = []
    # Rust/C per figure, with the spread of the per-round ratios.  (The
    # rping pair times are the head-of-line figures' context, not figures
    # of their own.)
    data = ""
    for m, c, r, _, _, ratio in rows:
        if ratio is None or not c or not r or m.startswith("hol_rping_") or not all(c):
            continue
        mid, lo, hi = ratio_spread(c, r)
        if mid <= 0 or lo <= 0:
            continue
        data += "%s\t%.4f\t%.4f\t%.4f\n" % (short_label(m), mid, lo, hi)
    if data:
        n = data.count("\n")
        s = gnuplot(d, "ratio", "set title 'Rust / C per figure: median of the rounds, bar: min-max (below 1: ours faster or smaller)'\n"
                    "set style fill solid 0.5\nset boxwidth 0.7\nset bmargin 14\nset rmargin 18\n"
                    "set xtics rotate by -50 left font ',8'\nset logscale y 2\n"
                    "set xrange [-0.7:%f]\n"
                    "set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2\n"
                    "plot DATA using 0:2:xtic(1) with boxes title 'Rust/C (median)', "
                    "DATA using 0:2:3:4 with yerrorbars lc rgb 'black' pt -1 title 'min-max of the rounds'\n"
                    % (n - 0.3), data, size="1100,620")
        out += [s] if s else []
    # Teardown against queue count.
    data = ""
    for q in (8, 32, 64):
        if "teardown%d_s" % q in by:
            c, r = by["teardown%d_s" % q]
            data += "%d\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\n" % ((q,) + spread(c) + spread(r))
    if data:
        s = gnuplot(d, "teardown", "set title 'rdma link delete with the sample ULP connected (own queue last)'\n"
                    "set xlabel 'queues (each side)'\nset ylabel 's'\nset key left\nset yrange [0:*]\n"
                    "set xrange [0:72]\n"
                    "plot DATA using 1:2:3:4 with yerrorlines title 'C iw_cm (median, min-max)', "
                    "DATA using 1:5:6:7 with yerrorlines title 'Rust iw_cm (median, min-max)'\n", data)
        out += [s] if s else []
    # (The traced figure when there is one: the rping pair's difference
    # cannot resolve below a few hundred ms.)
    hol = "hol_kernel_ms" if "hol_kernel_ms" in by else "hol_ms"
    if hol in by:
        c, r = by[hol]
        floor = lambda t: tuple(max(x, 0.01) for x in t)
        data = "C iw_cm\t%.3f\t%.3f\t%.3f\nRust iw_cm\t%.3f\t%.3f\t%.3f\n" % (floor(spread(c)) + floor(spread(r)))
        s = gnuplot(d, "hol", "set title 'Delay of another id''s CONNECT_REQUEST behind a handler stalled 5 s%s'\n"
                    % (": iw_cm''s upcall to rdma_cm''s handler, traced" if hol == "hol_kernel_ms" else ": rping pair difference") +
                    "set style fill solid 0.5\nset boxwidth 0.6\nset xrange [-0.6:1.6]\n"
                    "set logscale y 10\nset ylabel 'ms (log)'\nset yrange [0.01:20000]\n"
                    "plot DATA using 0:2:xtic(1) with boxes title 'median', "
                    "DATA using 0:2:3:4 with yerrorbars lc rgb 'black' pt -1 title 'min-max of the rounds'\n", data)
        out += [s] if s else []
    data = ""
    for q in (2, 50, 500):
        if "mem%d_bytes_per_id" % q in by:
            c, r = by["mem%d_bytes_per_id" % q]
            data += "%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\n" % ((2 * q + 1,) + spread(c) + spread(r))
    if data:
        s = gnuplot(d, "memory", "set title 'Slab bytes per cm_id (sample ULP connected, idle)'\n"
                    "set xlabel 'cm_ids (2 x queues + the listener)'\nset ylabel 'bytes'\nset logscale x 10\n"
                    "set xrange [3:2000]\nset key right\nset yrange [0:*]\n"
                    "plot DATA using 1:2:3:4 with yerrorlines title 'C iw_cm (median, min-max)', "
                    "DATA using 1:5:6:7 with yerrorlines title 'Rust iw_cm (median, min-max)'\n", data)
        out += [s] if s else []
    return out


if __name__ == "__main__":
    sys.exit(main())
