#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Connect/disconnect storm under slab fault injection (CONFIG_FAILSLAB).
# rping, ucmatose and cmtime clients run with /proc/self/make-it-fail set,
# so that a share of the slab allocations made in their context fails:
# rdma_ucm, rdma_cm, iw_cm (cm_id creation, event slots reserved by
# connect), siw and the verbs objects.  Their servers run without it.
# Checks: every client ends (an allocation failure is reported to it as an
# error, never as silence: a client that hangs fails the test), failures
# were really injected, rping works again once injection is off, and the
# usual end checks (no rdma_cm id or iw_cm cm_id left, no splat, the link
# can be deleted).  kmemleak is scanned by the VM runner at the end.
#
# Environment: IWCM_FAILSLAB_PROBABILITY (percent, default 5),
# IWCM_FAILSLAB_ROUNDS (default 6).
. "$(dirname "$0")/lib.sh"

iwcm_init failslab_storm 5 rping ucmatose cmtime
FS=/sys/kernel/debug/failslab
PROB=${IWCM_FAILSLAB_PROBABILITY:-5}
ROUNDS=${IWCM_FAILSLAB_ROUNDS:-6}
iwcm_setup_or_bail

failslab_off() {
	[ -w "$FS/probability" ] && echo 0 > "$FS/probability"
}
trap failslab_off EXIT

armed=0
if [ -w "$FS/probability" ]; then
	echo Y > "$FS/task-filter"
	echo N > "$FS/ignore-gfp-wait"
	echo 1 > "$FS/interval"
	echo -1 > "$FS/times"
	echo 0 > "$FS/space"
	echo 1 > "$FS/verbose"
	echo "$PROB" > "$FS/probability"
	armed=1
fi
iwcm_check "failslab armed: ${PROB}% of the slab allocations of flagged tasks fail" [ $armed -eq 1 ]

# faulty CMD...: run CMD with this task's allocations subject to failslab.
faulty() {
	bash -c 'echo 1 > /proc/self/make-it-fail && exec "$@"' _ "$@"
}

dm0=$(dmesg | wc -l)
runs=0 errs=0 oks=0 hung=0
for r in $(seq "$ROUNDS"); do
	# Servers without fault injection; clients with it, in parallel.
	iwcm_spawn rs "$IWCM_TMP/rping-s.log" rping -s -a "$IWCM_ADDR" -C 5
	iwcm_spawn us "$IWCM_TMP/ucm-s.log" ucmatose -b "$IWCM_ADDR" -c 5 -C 5
	iwcm_spawn cs "$IWCM_TMP/cmt-s.log" cmtime -b "$IWCM_ADDR"
	iwcm_wait_listen 7471 || iwcm_log "round $r: a server did not listen"
	pids=()
	faulty timeout -k 5 90 rping -c -a "$IWCM_ADDR" -C 5 >"$IWCM_TMP/rping-$r.log" 2>&1 & pids+=($!)
	faulty timeout -k 5 90 ucmatose -s "$IWCM_ADDR" -c 5 -C 5 >"$IWCM_TMP/ucm-$r.log" 2>&1 & pids+=($!)
	faulty timeout -k 5 90 cmtime -s "$IWCM_ADDR" -c 20 >"$IWCM_TMP/cmt-$r.log" 2>&1 & pids+=($!)
	line=""
	for p in "${pids[@]}"; do
		wait "$p"
		rc=$?
		runs=$((runs + 1))
		case $rc in
		0) oks=$((oks + 1)) ;;
		124|137) hung=$((hung + 1)) ;;
		*) errs=$((errs + 1)) ;;
		esac
		line+=" $rc"
	done
	iwcm_log "round $r: client exits (rping ucmatose cmtime):$line"
	iwcm_stop_all
done
failslab_off
injected=$(dmesg | tail -n +"$((dm0 + 1))" | grep -c "FAULT_INJECTION: forcing a failure")
iwcm_log "storm: $runs client runs, $oks ok, $errs ended with an error, $hung hung; $injected slab failures injected"
iwcm_check "no client hung under failslab ($runs runs: $oks ok, $errs errors reported)" [ $hung -eq 0 ]
iwcm_check "slab failures were injected ($injected)" [ "$injected" -gt 0 ]

# Nothing broken once injection is off.
iwcm_spawn rs "$IWCM_TMP/rping-after-s.log" rping -s -a "$IWCM_ADDR" -C 10
sleep 0.5
timeout -k 5 60 rping -c -a "$IWCM_ADDR" -C 10 >"$IWCM_TMP/rping-after.log" 2>&1
arc=$?
iwcm_wait "$rs" 30
iwcm_check "rping -C 10 after the storm (client exit $arc)" [ "$arc" -eq 0 ]
iwcm_stop_all

iwcm_finish
