#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Host test of `make demo`'s table cells (tools/demo-cells.sh) on recorded
# results (make hosttest): each cell says "completed" or "deadlocked" only
# when every check behind the word holds, and prints what failed otherwise;
# the head-of-line cell is the traced figure or "not measured".
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/tools/demo-cells.sh"
failed=0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
abdir=$t/ab
holdir=$t/hol
DEMO_CMTIME=100

expect() {	# expect NAME GOT PATTERN (an extended regex the whole of GOT matches)
	if [[ "$2" =~ ^$3$ ]]; then
		echo "ok: $1"
	else
		echo "FAILED: $1: got '$2', want /$3/"
		failed=$((failed + 1))
	fi
}

# ab_case IMPL VM_STATUS KEY=VALUE...: one recorded side-by-side boot.
ab_case() {
	local impl=$1 vm=$2 d
	shift 2
	rm -rf "$abdir"
	d=$abdir/ab-$impl-first-qp-handler-20261207-000000
	mkdir -p "$d"
	printf '%s\n' "$@" > "$d/ab-result.txt"
	echo "VM: finished in 100.0s with status $vm" > "$abdir/ab-$impl-first-qp-handler.out"
	echo "$d"
}
good_rust=(result=completed delete_s=1.23 delete_status=0 "torn_down=host 9/9, target 9/9"
	"rmmod=status 0" cm_ids_base=0 cm_ids_after=0)

ab_case rust 0 "${good_rust[@]}" >/dev/null
expect "ours, every check holds" "$(cell rust)" "completed in 1.23 s \(torn down: host 9/9, target 9/9; no cm_id left; no splat\)"
ab_case rust 0 "${good_rust[@]/cm_ids_after=0/cm_ids_after=2}" >/dev/null
expect "ours, a cm_id left" "$(cell rust)" "delete returned in 1.23 s, but cm_ids 0 -> 2"
ab_case rust 1 "${good_rust[@]}" >/dev/null
expect "ours, a splat in the boot" "$(cell rust)" "delete returned in 1.23 s, but VM status 1 .*"
ab_case rust 0 "${good_rust[@]/target 9\/9/target 7\/9}" >/dev/null
expect "ours, queues not torn down" "$(cell rust)" "delete returned in 1.23 s, but torn down: host 9/9, target 7/9"
ab_case rust 0 "${good_rust[@]/delete_status=0/delete_status=1}" >/dev/null
expect "ours, the delete failed" "$(cell rust)" "delete returned in 1.23 s, but delete status 1"

d=$(ab_case c 124 result=deadlocked blocked_after_s=45.1 hung_task_reports=2)
printf '%s\n' "task:rdma state:D" " cma_process_remove+0x24f/0x990 [rdma_cm]" " siw_destroy_qp+0x1a/0x90 [siw]" > "$d/blocked-tasks.txt"
expect "C, the seed deadlock" "$(cell c)" "deadlocked \(delete blocked > 45.1 s, 2 hung-task reports, stuck in cma_process_remove -> siw_destroy_qp\)"
d=$(ab_case c 124 result=deadlocked blocked_after_s=45.1 hung_task_reports=0)
printf '%s\n' " cma_process_remove+0x24f/0x990 [rdma_cm]" " siw_destroy_qp+0x1a/0x90 [siw]" > "$d/blocked-tasks.txt"
expect "C, blocked but no hung-task report" "$(cell c)" "blocked > 45.1 s, but no hung-task report"
d=$(ab_case c 124 result=deadlocked blocked_after_s=45.1 hung_task_reports=1)
printf '%s\n' " schedule+0x1/0x2" > "$d/blocked-tasks.txt"
expect "C, blocked elsewhere" "$(cell c)" "blocked > 45.1 s, but the blocked stacks lack the seed chain .*"
rm -rf "$abdir"
expect "no boot at all" "$(cell rust)" "no result .*"

mkdir -p "$holdir"
printf '%s\n' "RESULT c 1 hol_ms 4600" "RESULT c 1 hol_kernel_ms 4987.12" "RESULT c 1 hol_rping_stalled_ms 6600" \
	"RESULT c 1 hol_rping_alone_ms 2000" "RESULT rust 1 hol_ms 12" "RESULT rust 1 hol_rping_stalled_ms 2012" \
	"RESULT rust 1 hol_rping_alone_ms 2000" "FAILED rust 1 hol_kernel_ms no trace" \
	"RESULT c 1 cmtime100_wall_s 10.5" "RESULT rust 1 cmtime100_wall_s 10.1" > "$holdir/vm.out"
expect "head-of-line, traced" "$(hol c)" "4987.12 ms traced \(rping pair 6600 ms during the stall, 2000 ms without\)"
expect "head-of-line, no trace: not measured (not the rping difference)" "$(hol rust)" "not measured"
expect "churn" "$(churn rust)" "10.1"
DEMO_CMTIME=500
expect "churn of another size: not measured" "$(churn rust)" "not measured"

echo "test_demo_cells: $failed failed"
[ "$failed" -eq 0 ]
