# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The cells of `make demo`'s table, from the results its boots wrote
# (sourced by tools/demo.sh; tools/test_demo_cells.sh runs them on
# recorded results in make hosttest).  Each reads:
#   top     the repository (paths are shown relative to it)
#   abdir   tools/ab/ab-unplug.sh's results (the side-by-side step)
#   holdir  the head-of-line boot's results (vm.out: bench-guest.sh's
#           RESULT and FAILED lines)
#   DEMO_CMTIME  the churn cell's cmtime -c

get() { sed -n "s/^$2=//p" "$1" 2>/dev/null | head -n1; }
# cell IMPL: the delete's outcome in one boot of its own, each word the
# outcome of a check.  "completed" only when the delete returned 0, every
# queue of both sides was torn down, the sample unloaded, (ours) no cm_id
# was left and the boot had no splat; "deadlocked" only when the delete
# was still blocked, the hung-task detector reported it and the blocked
# stacks hold the seed chain (rdma_cm's device removal waiting in the
# ULP's teardown for a QP or cm_id that iw_cm holds).  Anything else is
# printed as what it is.
cell() {
	local d r vm torn why=
	d=$(ls -d "$abdir"/ab-"$1"-first-qp-handler-*/ 2>/dev/null | tail -n1)
	r=${d}ab-result.txt
	vm=$(sed -n 's/^VM: finished in .* with status \([0-9]*\)$/\1/p' "$abdir/ab-$1-first-qp-handler.out" 2>/dev/null | tail -n1)
	case "$(get "$r" result)" in
	completed)
		torn=$(get "$r" torn_down)
		[ "$(get "$r" delete_status)" = 0 ] || why+=", delete status $(get "$r" delete_status)"
		awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\/[0-9]+,?$/) { split($i, a, "/"); if (a[1] + 0 != a[2] + 0 || a[2] + 0 == 0) bad = 1; n++ } }
			END { exit !(n == 2 && !bad) }' <<<"$torn" || why+=", torn down: $torn"
		[ "$(get "$r" rmmod)" = "status 0" ] || why+=", rmmod: $(get "$r" rmmod)"
		[ "$1" = c ] || [ "$(get "$r" cm_ids_after)" = "$(get "$r" cm_ids_base)" ] ||
			why+=", cm_ids $(get "$r" cm_ids_base) -> $(get "$r" cm_ids_after)"
		[ "$vm" = 0 ] || why+=", VM status ${vm:-none} (a splat or a failed check: ${abdir#"$top"/}/ab-$1-first-qp-handler.out)"
		if [ -z "$why" ]; then
			echo "completed in $(get "$r" delete_s) s (torn down: $torn$([ "$1" = c ] || echo "; no cm_id left"); no splat)"
		else
			echo "delete returned in $(get "$r" delete_s) s, but${why#,}"
		fi ;;
	deadlocked)
		[ "$(get "$r" hung_task_reports)" -gt 0 ] 2>/dev/null || why+=", no hung-task report"
		grep -q '\bcma_process_remove\b' "${d}blocked-tasks.txt" 2>/dev/null &&
			grep -qE '\b(siw_destroy_qp|iw_destroy_cm_id|__flush_workqueue)\b' "${d}blocked-tasks.txt" 2>/dev/null ||
			why+=", the blocked stacks lack the seed chain (${d#"$top"/}blocked-tasks.txt)"
		if [ -z "$why" ]; then
			echo "deadlocked (delete blocked > $(get "$r" blocked_after_s) s, $(get "$r" hung_task_reports) hung-task reports, stuck in cma_process_remove -> $(grep -oE '\b(siw_destroy_qp|iw_destroy_cm_id|__flush_workqueue)\b' "${d}blocked-tasks.txt" | sort -u | tr '\n' ' ' | sed 's/ $//'))"
		else
			echo "blocked > $(get "$r" blocked_after_s) s, but${why#,}"
		fi ;;
	*) echo "no result (see ${abdir#"$top"/})" ;;
	esac
}
hol() {	# hol IMPL: the traced delay, with the rping pair's times as context
	awk -v i="$1" '$1 == "RESULT" && $2 == i { v[$4] = $5 }
		END { if ("hol_kernel_ms" in v) printf "%s ms traced (rping pair %s ms during the stall, %s ms without)\n", v["hol_kernel_ms"], v["hol_rping_stalled_ms"], v["hol_rping_alone_ms"]
		      else print "not measured" }' "$holdir/vm.out"
}
churn() {	# churn IMPL: the wall time in s, or "not measured"
	awk -v i="$1" -v m="cmtime${DEMO_CMTIME}_wall_s" '$1 == "RESULT" && $2 == i && $4 == m { v = $5 }
		END { if (v != "") print v; else print "not measured" }' "$holdir/vm.out"
}
