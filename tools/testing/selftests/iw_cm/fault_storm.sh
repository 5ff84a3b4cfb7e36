#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Connect/disconnect storm under fault injection (CONFIG_FAULT_INJECTION):
# the Rust iw_cm's own fault points, /sys/kernel/debug/fail_iw_cm (the
# kernel's fault_attr and should_fail(), as fail_make_request and friends),
# fail a share of its allocations: cm_id creation (by rdma_cm for every
# id, and by iw_cm for each CONNECT_REQUEST's child, in the provider's
# upcall) and the event slots reserved by listen, connect and each
# CONNECT_REQUEST.  Each failure
# reaches the caller as -ENOMEM, which rdma_cm turns into an error event
# (ADDR/ROUTE_ERROR, REJECTED, UNREACHABLE or a failed rdma_connect /
# rdma_listen) for the ULP, or the provider times the peer out.
#
# Why not failslab: with its task filter, the flagged clients' own page
# faults on the VM's 9p root fail too, and a failed read of a shared
# library poisons it for every process of the VM; without the filter every
# allocation of the kernel fails.  fail_iw_cm touches nothing outside the
# RDMA stack.
#
# The storm, per round: three ucmatose and one cmtime client (servers
# started before injection is armed, so listening works) and the Rust
# sample ULP
# loaded with role=both (a listener and 1 admin + 4 I/O queues, connected
# from module init).  Checks: every client ends by itself (a failure
# reported as an error exit, never a hang), failures were injected, the
# sample either connects every queue or fails its insmod with an error and
# leaves no module behind, rping works once injection is off, and the usual
# end checks (no rdma_cm id or iw_cm cm_id left, no splat, the link can be
# deleted); kmemleak is scanned by the VM runner at the end.
#
# rping is not a storm client: when rdma_connect fails, its error path
# joins its CQ thread, which waits for a completion that never comes
# (rping.c, rping_run_client: err3), so it hangs after reporting the
# error, with either iw_cm.  It checks the link after the storm instead.
# ucmatose runs one connection per client and server: with several, a
# connection that fails on the client side leaves its server waiting for
# it and the client waiting for the server's disconnects (cmatose.c:
# connect_events, disconnect_events), again with either iw_cm.
#
# The stock C iw_cm has no fault points: the test is skipped with it.
#
# Environment: IWCM_FAULT_PROBABILITY (percent, default 10),
# IWCM_FAULT_SAMPLE_PROBABILITY (percent for the sample's load in even
# rounds, default 2), IWCM_FAULT_ROUNDS (default 6; 4 under IWCM_QUICK=1).
. "$(dirname "$0")/lib.sh"
# The siw endpoint gate (lib.sh) is on: every CONNECT_REQUEST iw_cm
# accepted into a listener's queue carries a child cm_id allocated in the
# upcall, so a request is delivered, or rejected when nobody will see it,
# without allocating then; a request whose child cannot be allocated is
# refused in the upcall and siw drops it.  (With the child allocated at
# delivery, as iwcm.c does, an injected -ENOMEM left the request with siw
# for good: 8 endpoints left in one storm, and once siw's endpoint held
# its device's memory (tools/testing/siw/0007), kmemleak found the siw
# device, its GID table and the rest unreferenced at the end of the boot.)

FI=/sys/kernel/debug/fail_iw_cm
PROB=${IWCM_FAULT_PROBABILITY:-10}
SAMPLE_PROB=${IWCM_FAULT_SAMPLE_PROBABILITY:-2}
SAMPLE_KO=${SAMPLE_KO:-$IWCM_TOP/samples/rdma/rust_rdma_ulp/rust_rdma_ulp.ko}
SAMPLE_DBG=/sys/kernel/debug/rust_rdma_ulp

[ "$IWCM_IMPL" = rust ] ||
	iwcm_skip_all "fault_storm: the C iw_cm has no fault points (fail_iw_cm is the Rust iw_cm's)"

iwcm_init fault_storm 6 rping ucmatose cmtime insmod rmmod modinfo
# Ours on a kernel with fault-injection debugfs (the test kernel) must
# have its fault points, and the sample must be built (make modules):
# either missing is a failure, not a reason to skip.
if [ ! -f "$SAMPLE_KO" ]; then
	ktap_test_fail "fault_storm: no sample module at $SAMPLE_KO (make modules builds it)"
	ktap_finished
fi
# IWCM_QUICK=1 (make check): 4 rounds, two of them with the sample's load
# under injection (make check-all: 6).
[ -n "${IWCM_FAULT_ROUNDS:-}" ] && ROUNDS=$IWCM_FAULT_ROUNDS || iwcm_quick ROUNDS 6 4 "rounds:"
iwcm_setup_or_bail
iwcm_load_deps "$SAMPLE_KO"
if [ ! -d "$FI" ]; then
	# failslab is the kernel's own attribute under the same option.
	[ -d /sys/kernel/debug/failslab ] ||
		iwcm_skip_all "fault_storm: a kernel without CONFIG_FAULT_INJECTION_DEBUG_FS has no $FI"
	ktap_test_fail "fault_storm: the Rust iw_cm made no $FI on a kernel with fault-injection debugfs"
	ktap_finished
fi

pfs=
fault_off() { [ -w "$FI/probability" ] && echo 0 > "$FI/probability"; }
trap 'fault_off; restore_pfs' EXIT

fault_arm() {
	echo N > "$FI/task-filter" &&
	echo 1 > "$FI/interval" &&
	echo -1 > "$FI/times" &&
	echo 0 > "$FI/space" &&
	echo 2 > "$FI/verbose" &&
	echo "$PROB" > "$FI/probability"
}

# storm_hang_report PID ROUND: what a client still running after 60 s
# waits for: its output, its threads' kernel stacks, the rdma_cm ids.
storm_hang_report() {
	local p=$1 r=$2 t f
	iwcm_log "round $r: $(cat "/proc/$p/comm" 2>/dev/null) (pid $p) still runs after 60 s"
	iwcm_log "  $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null)"
	# This round's clients and servers.
	for f in "$IWCM_TMP"/*-"$r".log; do
		iwcm_show_log "$f" 12
	done
	for t in /proc/"$p"/task/*; do
		iwcm_log "  thread ${t##*/}: $(cat "$t/wchan" 2>/dev/null)"
		timeout 5 sed 's/^/    /' "$t/stack" 2>/dev/null |
			while IFS= read -r l; do iwcm_log "$l"; done
	done
	iwcm_rdma_query resource show cm_id | while IFS= read -r l; do iwcm_log "  $l"; done
}

# Crashes: the kernel reports every core-dumping fatal signal (SIGSEGV,
# SIGABRT, SIGBUS, ...) of any process while this is set.
pfs=$(cat /proc/sys/kernel/print-fatal-signals 2>/dev/null)
echo 1 > /proc/sys/kernel/print-fatal-signals
restore_pfs() { [ -n "$pfs" ] && echo "$pfs" > /proc/sys/kernel/print-fatal-signals; }

dm0=$(dmesg | wc -l)
runs=0 errs=0 oks=0 hung=0 crashed=0 armed=1
s_ok=0 s_err=0 s_bad=0
for r in $(seq "$ROUNDS"); do
	fault_off
	# Servers first, without injection (each on its own port: ucmatose
	# and cmtime both default to 7471).
	for port in 7471 7473 7475; do
		iwcm_spawn us "$IWCM_TMP/ucm$port-s-$r.log" ucmatose -b "$IWCM_ADDR" -p $port -c 1 -C 5
	done
	iwcm_spawn cs "$IWCM_TMP/cmt-s-$r.log" cmtime -b "$IWCM_ADDR" -p 7472
	for port in 7471 7473 7475 7472; do
		iwcm_wait_listen $port || iwcm_log "round $r: no listener on $port"
	done
	fault_arm || armed=0
	pids=()
	for port in 7471 7473 7475; do
		ucmatose -s "$IWCM_ADDR" -p $port -c 1 -C 5 >"$IWCM_TMP/ucm$port-$r.log" 2>&1 & pids+=($!)
	done
	cmtime -s "$IWCM_ADDR" -p 7472 -c 20 >"$IWCM_TMP/cmt-$r.log" 2>&1 & pids+=($!)
	line=""
	for p in "${pids[@]}"; do
		iwcm_wait "$p" 60
		rc=$?
		runs=$((runs + 1))
		# 0: all connections made; 124 from iwcm_wait: still running
		# after 60 s; any other status (these tools exit with -1 or
		# -errno: 255, 244, 152, ...): the tool reported an error,
		# which is what an allocation failure must turn into.  A
		# crash (a fatal signal in the tool's error path) is told
		# apart by the kernel (print-fatal-signals, counted below):
		# 128 + n alone cannot tell exit(-errno) from a signal.
		case $rc in
		0) oks=$((oks + 1)) ;;
		124)
			hung=$((hung + 1))
			storm_hang_report "$p" "$r"
			kill -9 "$p" 2>/dev/null
			wait "$p" 2>/dev/null ;;
		126|127) crashed=$((crashed + 1)) ;;
		*) errs=$((errs + 1)) ;;
		esac
		line+=" $rc"
	done
	iwcm_stop_all
	# The sample ULP, listener and host connected from module init.  One
	# load crosses about 22 fault points (cm_ids and event slots of 5
	# queues on each side and the listener): at PROB nearly every load
	# fails, so every other round loads it at SAMPLE_PROB, where most
	# loads connect with some allocations failed and retried or not hit.
	if [ $((r % 2)) -eq 0 ]; then
		echo "$SAMPLE_PROB" > "$FI/probability"
	fi
	timeout -k 5 90 insmod "$SAMPLE_KO" role=both addr="$IWCM_ADDR" nr_io_queues=4 \
		queue_depth=8 >"$IWCM_TMP/insmod-$r.log" 2>&1
	irc=$?
	fault_off
	if [ $irc -eq 0 ]; then
		live=$(sed -n 's/^live //p' "$SAMPLE_DBG/host" 2>/dev/null | head -n1)
		if [ "$live" = 5 ]; then s_ok=$((s_ok + 1)); else s_bad=$((s_bad + 1)); iwcm_log "round $r: sample loaded with $live of 5 queues live"; fi
		timeout -k 5 60 rmmod rust_rdma_ulp || { s_bad=$((s_bad + 1)); iwcm_log "round $r: rmmod rust_rdma_ulp failed"; }
		sample="loaded"
	elif [ $irc -ge 124 ] || [ -d /sys/module/rust_rdma_ulp ]; then
		s_bad=$((s_bad + 1))
		sample="insmod exit $irc, module present: $([ -d /sys/module/rust_rdma_ulp ] && echo yes || echo no)"
		iwcm_show_log "$IWCM_TMP/insmod-$r.log"
	else
		s_err=$((s_err + 1))
		sample="insmod failed: $(tail -n1 "$IWCM_TMP/insmod-$r.log")"
	fi
	iwcm_log "round $r: client exits (ucmatose x3, cmtime):$line; sample: $sample"
done
fault_off
restore_pfs
injected=$(dmesg | tail -n +"$((dm0 + 1))" | grep -c "FAULT_INJECTION: forcing a failure")
signals=$(dmesg | tail -n +"$((dm0 + 1))" | grep -c "potentially unexpected fatal signal")
crashed=$((crashed + signals))
iwcm_log "storm: $runs client runs, $oks ok, $errs ended with an error, $crashed crashed, $hung hung; sample: $s_ok connected, $s_err failed cleanly, $s_bad bad; $injected failures injected"
iwcm_check "fail_iw_cm armed: ${PROB}% of iw_cm's allocations fail" [ $armed -eq 1 ]
storm_ok=0
[ $hung -eq 0 ] && [ $crashed -eq 0 ] && storm_ok=1
iwcm_check "every client ended by itself under injection ($runs runs: $oks ok, $errs errors reported, $crashed crashed)" \
	[ $storm_ok -eq 1 ]
iwcm_check "the sample ULP connected or failed its load cleanly ($s_ok connected, $s_err failed, $s_bad bad)" \
	[ $s_bad -eq 0 ]
iwcm_check "failures were injected ($injected)" [ "$injected" -gt 0 ]

# Nothing broken once injection is off.
iwcm_spawn rs "$IWCM_TMP/rping-after-s.log" rping -s -a "$IWCM_ADDR" -C 10
iwcm_wait_listen 7174
timeout -k 5 60 rping -c -a "$IWCM_ADDR" -C 10 >"$IWCM_TMP/rping-after.log" 2>&1
arc=$?
iwcm_wait "$rs" 30
iwcm_check "rping -C 10 after the storm (client exit $arc)" [ "$arc" -eq 0 ]
iwcm_stop_all

iwcm_finish
