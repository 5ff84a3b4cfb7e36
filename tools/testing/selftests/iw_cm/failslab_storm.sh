#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Connect/disconnect storm under slab fault injection (CONFIG_FAILSLAB).
# rping, ucmatose and cmtime clients run with make-it-fail set (on every
# thread, once started), so that a share of the slab allocations made in
# their context fails:
# rdma_ucm, rdma_cm, iw_cm (cm_id creation, event slots reserved by
# connect), siw and the verbs objects.  Their servers run without it.
# Checks: every client ends (an allocation failure is reported to it as an
# error, never as silence: a client that hangs fails the test), failures
# were really injected, rping works again once injection is off, and the
# usual end checks (no rdma_cm id or iw_cm cm_id left, no splat, the link
# can be deleted).  kmemleak is scanned by the VM runner at the end.
#
# Environment: IWCM_FAILSLAB_PROBABILITY (percent, default 5),
# IWCM_FAILSLAB_ROUNDS (default 5).
. "$(dirname "$0")/lib.sh"

iwcm_init failslab_storm 5 rping ucmatose cmtime
FS=/sys/kernel/debug/failslab
PROB=${IWCM_FAILSLAB_PROBABILITY:-5}
ROUNDS=${IWCM_FAILSLAB_ROUNDS:-5}
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

# flag PID: subject every thread of PID to failslab.  Done once the client
# has started (about 0.5 s after exec): failing the allocations of exec and
# of the dynamic loader would only test 9p and the page cache (a failed
# read of a shared library poisons it for every process of the VM).
flag() {
	local t
	for t in /proc/"$1"/task/*; do
		echo 1 > "$t/make-it-fail" 2>/dev/null
	done
}

dm0=$(dmesg | wc -l)
runs=0 errs=0 oks=0 hung=0 crashed=0
for r in $(seq "$ROUNDS"); do
	# Servers without fault injection; clients with it, in parallel.
	# (each on its own port: ucmatose and cmtime both default to 7471)
	iwcm_spawn rs "$IWCM_TMP/rping-s.log" rping -s -a "$IWCM_ADDR" -p 7174 -C 5
	iwcm_spawn us "$IWCM_TMP/ucm-s.log" ucmatose -b "$IWCM_ADDR" -p 7471 -c 5 -C 5
	iwcm_spawn cs "$IWCM_TMP/cmt-s.log" cmtime -b "$IWCM_ADDR" -p 7472
	for port in 7174 7471 7472; do
		iwcm_wait_listen $port || iwcm_log "round $r: no listener on $port"
	done
	pids=()
	rping -c -a "$IWCM_ADDR" -p 7174 -C 5 >"$IWCM_TMP/rping-$r.log" 2>&1 & pids+=($!)
	ucmatose -s "$IWCM_ADDR" -p 7471 -c 5 -C 5 >"$IWCM_TMP/ucm-$r.log" 2>&1 & pids+=($!)
	cmtime -s "$IWCM_ADDR" -p 7472 -c 20 >"$IWCM_TMP/cmt-$r.log" 2>&1 & pids+=($!)
	sleep 0.5
	for p in "${pids[@]}"; do flag "$p"; done
	line=""
	for p in "${pids[@]}"; do
		iwcm_wait "$p" 60
		rc=$?
		runs=$((runs + 1))
		# 0: all connections made; 1-125: the tool reported an error
		# (what an allocation failure must turn into); 124 from
		# iwcm_wait: still running after 60 s; >= 126: it never ran or
		# died of a signal (a user-space crash in the tool's error path).
		case $rc in
		0) oks=$((oks + 1)) ;;
		124) hung=$((hung + 1)); kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null ;;
		12[6-9]|1[3-9][0-9]|2[0-9][0-9]) crashed=$((crashed + 1)) ;;
		*) errs=$((errs + 1)) ;;
		esac
		line+=" $rc"
	done
	iwcm_log "round $r: client exits (rping ucmatose cmtime):$line"
	iwcm_stop_all
done
failslab_off
injected=$(dmesg | tail -n +"$((dm0 + 1))" | grep -c "FAULT_INJECTION: forcing a failure")
iwcm_log "storm: $runs client runs, $oks ok, $errs ended with an error, $crashed crashed or did not run, $hung hung; $injected slab failures injected"
# Clients that crashed in user space prove nothing either way: at least
# half of the runs must have ended by themselves, with a result.
storm_ok=0
[ $hung -eq 0 ] && [ $((2 * (oks + errs))) -ge "$runs" ] && storm_ok=1
iwcm_check "no client hung under failslab ($runs runs: $oks ok, $errs errors reported, $crashed crashed)" \
	[ $storm_ok -eq 1 ]
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
