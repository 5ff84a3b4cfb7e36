#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make bench: the C iw_cm and ours measured in one VM boot, ABBA rounds
# (tools/bench/bench-guest.sh: connection churn with cmtime at 10, 100 and
# 500 connections, ucmatose -c 200, `rdma link delete` with the sample ULP
# at 8, 32 and 64 queues, head-of-line delay behind a handler stalled 5 s,
# slab bytes per cm_id at 5, 101 and 1001 cm_ids, and the scale figures of
# tools/bench/iw_cm_scale/ at 1,000, 10,000 and 65,536 live cm_ids), then,
# in a second boot, the irqsoff group on the trace kernel
# (IWCM_KFLAVOUR=trace: the irqsoff tracer; our modules, siw, the test
# rdma_cm and iw_cm_scale built for it in a copy of the tree by
# tools/ulp-tree.sh), also both iw_cms ABBA.  A boot whose groups are all
# in BENCH_SKIP is left out.  Writes
# results/bench-<time>/report.md (medians, spread, Rust/C ratios) and PNG
# plots (gnuplot), and prints the table.  No pass/fail threshold on the
# figures: a figure that could not be measured, a failed VM run or a kernel
# splat fails the run.
#
#   tools/bench/bench.sh [ROUNDS]        (default 5)
#
# IWCM_BENCH_KERNEL=debian (make bench-distro): the lean boot's groups on
# Debian's own kernel (7.3.4+deb13-amd64, no KASAN, lockdep or kmemleak),
# with our modules, the test siw and iw_cm_scale built for it by
# tools/distro/build.sh, Debian's rdma_cm and its iw_cm.ko as the C iw_cm;
# one vCPU (the hol group turns tracing on and off, and under TCG a second
# vCPU has run the int3 of a finished text patch: see tools/demo.sh); no
# irqsoff group (Debian builds no irqsoff tracer).
#
# Environment: BENCH_ROUNDS, BENCH_CMTIME, BENCH_TEARDOWN, BENCH_MEM,
# BENCH_SCALE, BENCH_SCALE_SAMPLES, BENCH_IRQSOFF_IDS, BENCH_IRQSOFF_READS,
# BENCH_IRQSOFF_SAMPLES, BENCH_SKIP (see bench-guest.sh); BENCH_RESULTS_DIR.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
rounds=${1:-${BENCH_ROUNDS:-5}}
case "$rounds" in
'' | *[!0-9]*) echo "usage: $0 [ROUNDS]" >&2; exit 2 ;;
esac
t_all=$(date +%s)
skip=" ${BENCH_SKIP:-} "
# The groups of the lean boot; irqsoff is the trace boot's.
lean_boot=0
for g in cmtime ucmatose send_lat teardown hol mem scale; do
	[[ "$skip" == *" $g "* ]] || lean_boot=1
done
trace_boot=1
[[ "$skip" != *" irqsoff "* ]] || trace_boot=0
tools/setup-deps.sh >/dev/null || { echo "bench: dependency set-up failed" >&2; exit 2; }
# shellcheck source=../kernel/env.sh
. tools/kernel/env.sh
bench_top=$top
kernel_text="the test VM (QEMU TCG, KASAN, lockdep, kmemleak)"
case "${IWCM_BENCH_KERNEL:-test}" in
test) ;;
debian)
	trace_boot=0
	. tools/distro/env.sh
	distro_lock
	tools/distro/build.sh >/dev/null || { echo "bench: the build for Debian's kernel failed (tools/distro/build.sh)" >&2; exit 2; }
	distro_vm_env "$DISTRO_MODS/bench" || { echo "bench: Debian's kernel not ready for the VM" >&2; exit 2; }
	export IWCM_VM_SMP=1
	bench_top=$DISTRO_MODS/src
	kernel_text="Debian's $DISTRO_KREL in QEMU TCG, one vCPU (Debian's rdma_cm, its iw_cm.ko as the C iw_cm, the test siw)"
	make -s -C "$bench_top/tools/testing/selftests/iw_cm" KSELFTEST_DIR="$KSRC/tools/testing/selftests" >/dev/null ||
		{ echo "bench: selftest helper build failed" >&2; exit 2; }
	lean_boot_built=1
	;;
*) echo "bench: IWCM_BENCH_KERNEL must be test or debian, not '$IWCM_BENCH_KERNEL'" >&2; exit 2 ;;
esac
if [ $lean_boot -eq 1 ] && [ -z "${lean_boot_built:-}" ]; then
	tools/kernel/build-kernel.sh || { echo "bench: test kernel build failed" >&2; exit 2; }
	make -s -C "$top" modules siw rdma_cm >/dev/null || { echo "bench: module build failed" >&2; exit 2; }
	make -s -C tools/testing/selftests/iw_cm KSELFTEST_DIR="$KSRC/tools/testing/selftests" >/dev/null ||
		{ echo "bench: selftest helper build failed" >&2; exit 2; }
	nice -n 19 make -s -C "$KDIR" M="$top/tools/bench/iw_cm_scale" "${KMAKE_ARGS[@]}" modules >/dev/null ||
		{ echo "bench: scale module build failed" >&2; exit 2; }
fi

stamp=$(date +%Y%m%d-%H%M%S)
dir=${BENCH_RESULTS_DIR:-$top/results/bench-$stamp}
mkdir -p "$dir"
out=$dir/vm.out
vmrc=0
: > "$dir/results.txt"
if [ $lean_boot -eq 1 ]; then
	echo "bench: $rounds ABBA rounds in one VM boot; log $out"
	# The teardown figure runs the sample ULP's in-handler removal: rdma_cm's
	# handler_mutex lockdep report (Documentation/iw_cm.rst) is accepted, no
	# other splat.
	IWCM_RESULTS_DIR=$dir "$bench_top/tools/vm/run.sh" --name bench --timeout $((rounds * 2 * 600 + 600)) --allow-rdma-cm-lockdep -- \
		env BENCH_ROUNDS="$rounds" BENCH_CMTIME="${BENCH_CMTIME:-10 100 500}" \
		BENCH_TEARDOWN="${BENCH_TEARDOWN:-8 32 64}" BENCH_MEM="${BENCH_MEM:-2 50 500}" \
		BENCH_SCALE="${BENCH_SCALE:-1000 10000 65536}" BENCH_SCALE_SAMPLES="${BENCH_SCALE_SAMPLES:-1000}" \
		BENCH_SKIP="${BENCH_SKIP:-} irqsoff" "$bench_top/tools/bench/bench-guest.sh" >"$out" 2>&1
	vmrc=$?
	grep -E "^(FAILED|bench:)" "$out"
	grep -E "^RESULT " "$out" >> "$dir/results.txt"
fi
if [ $trace_boot -eq 1 ]; then
	# The trace kernel and everything built for it, in its copy of the tree.
	t=$(date +%s)
	if ! tree=$(IWCM_KFLAVOUR=trace tools/ulp-tree.sh | tail -n1) || ! [ -d "$tree/tools/vm" ]; then
		echo "bench: trace kernel or its modules failed (tools/ulp-tree.sh)" >&2
		exit 2
	fi
	tk=$(IWCM_KFLAVOUR=trace IWCM_TOP=$tree bash -c '. "$1/tools/kernel/env.sh" && echo "$KDIR"' _ "$tree")
	if ! make -s -C "$tree/tools/testing/selftests/iw_cm" KSELFTEST_DIR="$KSRC/tools/testing/selftests" >/dev/null ||
		! nice -n 19 make -s -C "$tk" M="$tree/tools/bench/iw_cm_scale" "${KMAKE_ARGS[@]}" modules >/dev/null; then
		echo "bench: trace kernel's helpers or scale module failed" >&2
		exit 2
	fi
	echo "bench: trace kernel and its modules ready in $(( $(date +%s) - t )) s ($tk)"
	tout=$dir/vm-irqsoff.out
	echo "bench: irqsoff group, $rounds ABBA rounds in one boot of the trace kernel; log $tout"
	env -u IWCM_TOP -u KSRC IWCM_KFLAVOUR=trace IWCM_RESULTS_DIR="$dir" \
		"$tree/tools/vm/run.sh" --name bench-irqsoff --timeout $((rounds * 2 * 900 + 600)) -- \
		env BENCH_ROUNDS="$rounds" BENCH_IRQSOFF_IDS="${BENCH_IRQSOFF_IDS:-65536}" \
		BENCH_IRQSOFF_READS="${BENCH_IRQSOFF_READS:-3}" BENCH_IRQSOFF_SAMPLES="${BENCH_IRQSOFF_SAMPLES:-200}" \
		BENCH_SKIP="cmtime ucmatose send_lat teardown hol mem scale" \
		"$tree/tools/bench/bench-guest.sh" >"$tout" 2>&1
	trc=$?
	[ "$vmrc" -ne 0 ] || vmrc=$trc
	grep -E "^(FAILED|bench:)" "$tout"
	grep -E "^RESULT " "$tout" >> "$dir/results.txt"
fi
BENCH_KERNEL_TEXT=$kernel_text /usr/bin/python3 tools/bench/report.py "$dir" "$rounds" "$vmrc"
rrc=$?
echo "bench: $(( $(date +%s) - t_all )) s in all; report $dir/report.md"
[ "$vmrc" -eq 0 ] && [ "$rrc" -eq 0 ]
