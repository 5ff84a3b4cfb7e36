#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# A/B proof: the Rust sample ULP (samples/rdma/rust_rdma_ulp, nvme-rdma
# shaped, DEVICE_REMOVAL handled inside the cm handler as nvme-rdma did in
# 2016) under `rdma link delete`, in every removal variant
#
#   own_queue  first | last      stop (disconnect + drain) the event's own
#                                queue before the others, or after them
#   order      qp | cmid         each other queue's QP before its cm_id, or after
#   context    handler | work    tear the others down in the handler, or in a
#                                controller-delete work item it waits for
#
# with the stock C iw_cm and with ours (the Rust drivers/infiniband/core/
# iw_cm/iw_cm.ko): one VM boot per case (tools/vm/run.sh with the rdma_cm
# handler_mutex lockdep report accepted, tools/ab/ab-guest.sh inside).  A
# delete still blocked after AB_DELETE_TIMEOUT seconds is recorded as
# "deadlocked", with the hung-task detector's reports and the blocked-task
# stacks (sysrq w); the VM is then powered off.  Prints what it observed:
#
#   variant x iw_cm -> completed in X s / deadlocked / splats seen
#
# The table goes to stdout and to results/ab-<time>/table.md.
#
#   tools/ab/ab-unplug.sh [--impl c|rust|both] [--only OWN,ORDER,CONTEXT]...
#
# Environment: AB_DELETE_TIMEOUT (45 s), AB_GUEST_TIMEOUT (guest watchdog,
# 150 s), AB_RESULTS_DIR (default results/ab-<time>; an existing one is
# resumed: cases with a result there are not run again).  About 1 minute
# per case on TCG: 16 cases.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
# shellcheck source=../kernel/env.sh
. tools/kernel/env.sh

impls=(c rust)
only=()
while [ $# -gt 0 ]; do
	case "$1" in
	--impl)
		case "$2" in
		both) impls=(c rust) ;;
		c|rust) impls=("$2") ;;
		*) echo "--impl c|rust|both" >&2; exit 2 ;;
		esac
		shift 2 ;;
	--only) only+=("$2"); shift 2 ;;
	-h|--help) sed -n '3,27p' "$0"; exit 0 ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
done

variants=()
if [ ${#only[@]} -gt 0 ]; then
	variants=("${only[@]}")
else
	for own in first last; do
		for order in qp cmid; do
			for ctx in handler work; do
				variants+=("$own,$order,$ctx")
			done
		done
	done
fi

if [ -n "${IWCM_VM_KERNEL:-}" ]; then
	# Another kernel (make demo on Debian's: tools/distro/env.sh's
	# distro_vm_env): its caller built the modules for it in this tree.
	echo "ab: kernel $IWCM_VM_KERNEL, the modules built for it in $top"
else
	[ -f "$KCACHE/.done" ] || { echo "ab: no test kernel at $KCACHE (make kernel)" >&2; exit 2; }
	echo "ab: building the modules"
	make -s -C "$top" modules siw >/dev/null 2>&1 || make -C "$top" modules siw || exit 2
fi
for ko in samples/rdma/rust_rdma_ulp/rust_rdma_ulp.ko drivers/infiniband/core/iw_cm/iw_cm.ko; do
	[ -f "$ko" ] || { echo "ab: $ko missing" >&2; exit 2; }
done

stamp=$(date +%Y%m%d-%H%M%S)
abdir=${AB_RESULTS_DIR:-$top/results/ab-$stamp}
mkdir -p "$abdir"
export IWCM_RESULTS_DIR=$abdir
export AB_DELETE_TIMEOUT=${AB_DELETE_TIMEOUT:-45}
guest_timeout=${AB_GUEST_TIMEOUT:-150}
t_all=$(date +%s)

# get FILE KEY: the value of KEY=... in an ab-result.txt.
get() { sed -n "s/^$2=//p" "$1" 2>/dev/null | head -n1; }

# splats CONSOLE_LOG: a one-line summary of the kernel reports in a console
# log (tools/ab/splat_summary.py: the rdma_cm handler_mutex lockdep report
# told apart from real splats).
splats() {
	python3 tools/ab/splat_summary.py --summary "$1" 2>&1 | head -n1
}

# stuck_in FILE: the functions of the deadlock chain seen in blocked stacks.
stuck_in() {
	local f=$1 fn seen=""
	[ -f "$f" ] || return 0
	for fn in cma_iw_handler cma_process_remove siw_destroy_qp iw_destroy_cm_id __flush_workqueue \
		__flush_work ib_drain_qp rdma_destroy_id rdma_disconnect; do
		grep -q "\b$fn\b" "$f" && seen="$seen $fn"
	done
	echo "${seen# }"
}

rows=()
n=0
total=$(( ${#variants[@]} * ${#impls[@]} ))
for v in "${variants[@]}"; do
	IFS=, read -r own order ctx <<<"$v"
	for impl in "${impls[@]}"; do
		n=$((n + 1))
		name=ab-$impl-$own-$order-$ctx
		echo "ab: [$n/$total] iw_cm=$impl own_queue=$own order=$order context=$ctx"
		# A case with a result in AB_RESULTS_DIR is reused (resume).
		res=$(grep -lE "^result=(completed|deadlocked)$" "$abdir/$name"-*/ab-result.txt 2>/dev/null |
			tail -n1)
		vmrc=0
		if [ -n "$res" ]; then
			res=$(dirname "$res")
			echo "ab:   (result of an earlier run: ${res#"$top"/})"
		else
			IWCM_IMPL=$impl tools/vm/run.sh --name "$name" --timeout "$guest_timeout" \
				--allow-rdma-cm-lockdep -- tools/ab/ab-guest.sh "$own" "$order" "$ctx" \
				> "$abdir/$name.out" 2>&1
			vmrc=$?
			res=$(ls -d "$abdir/$name"-*/ 2>/dev/null | tail -n1)
			res=${res%/}
		fi
		r=$res/ab-result.txt
		result=$(get "$r" result)
		case "$result" in
		completed)
			cell="completed in $(get "$r" delete_s) s"
			detail="torn down: $(get "$r" torn_down); rmmod: $(get "$r" rmmod)"
			# Only ours counts its live cm_ids (debugfs iw_cm/cm_ids).
			[ "$impl" = rust ] && detail+="; cm_ids $(get "$r" cm_ids_base)->$(get "$r" cm_ids_after)"
			;;
		deadlocked)
			cell="deadlocked (delete blocked > $(get "$r" blocked_after_s) s; hung-task reports: $(get "$r" hung_task_reports))"
			detail="blocked stacks: ${res#"$top"/}/blocked-tasks.txt [$(stuck_in "$res/blocked-tasks.txt")]; torn down at stall: $(get "$r" torn_down_at_stall)"
			;;
		"")
			cell="no result (VM exit $vmrc; see ${abdir#"$top"/}/$name.out)"
			detail=""
			;;
		*)
			cell="$result (VM exit $vmrc)"
			detail=""
			;;
		esac
		sp=$(splats "$res/console.log")
		echo "ab:   -> $cell; splats: $sp"
		rows+=("| $own | $order | $ctx | $impl | $cell | $sp | $detail |")
	done
done

{
	echo "# A/B: rust_rdma_ulp device removal x iw_cm ($(date -u +%Y-%m-%dT%H:%MZ), kernel $(cat "$KDIR/include/config/kernel.release"), TCG)"
	echo
	echo "Observed, not expected: one VM boot per row, \`rdma link delete\` bounded by ${AB_DELETE_TIMEOUT} s."
	echo
	echo "| own_queue | order | context | iw_cm | rdma link delete | splats seen | details |"
	echo "|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
	echo
	echo "total $(( $(date +%s) - t_all )) s; per-case logs in ${abdir#"$top"/}/"
} | tee "$abdir/table.md"
