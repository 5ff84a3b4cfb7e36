#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The Rust sample ULP (samples/rdma/rust_rdma_ulp, nvme-rdma shaped) under
# unplug: its target and its host (1 admin + 8 I/O queues, each on its own
# rdma_cm id, PD, CQ and RC QP) connected over siw, SEND/RECV traffic on
# every queue, then `rdma link delete` of the siw link.  The host handles
# RDMA_CM_EVENT_DEVICE_REMOVAL the 2016 nvme-rdma way: inside the cm handler
# it stops the queues, tears down every other queue and returns non-zero so
# that rdma_cm destroys the event's own cm_id last.  Checks: the delete
# returns (bounded), the sample reports every queue torn down, no hung
# task, no leaked cm_id, rmmod of the sample works, no splat but the one
# below.
#
# Destroying other rdma_cm ids inside a cm handler draws rdma_cm's own
# lockdep report on &id_priv->handler_mutex ("possible recursive locking"
# or "possible circular locking dependency": every rdma_cm id shares one
# lock class) with ANY iw_cm, and lockdep is off for the rest of the boot
# afterwards.  So this test needs a VM boot of its own, with the splat gate
# accepting exactly that report:
#
#   tools/vm/run.sh --name sample-unplug --allow-rdma-cm-lockdep -- \
#       env IWCM_TESTS=sample_unplug.sh tools/vm/guest-tests.sh rust
#
# Its own splat check accepts the same report (tools/ab/splat_summary.py:
# the lock acquired or held is &id_priv->handler_mutex and the trace runs
# through rdma_cm) and nothing else.
#
# With the stock C iw_cm (IWCM_IMPL=c) the default variant deadlocks
# `rdma link delete` (the event's own queue is stopped first): the test
# then fails after SAMPLE_DELETE_TIMEOUT, dumps the blocked tasks (sysrq w)
# and leaves the stuck tasks behind.  tools/ab/ab-unplug.sh runs every
# variant with both iw_cms.
#
# Environment: IWCM_IMPL (c|rust, lib.sh), SAMPLE_KO (the sample module),
# SAMPLE_OWN_QUEUE (first|last), SAMPLE_ORDER (qp|cmid), SAMPLE_CONTEXT
# (handler|work), SAMPLE_IO_QUEUES (8), SAMPLE_DEPTH (16),
# SAMPLE_DELETE_TIMEOUT (60 s).
. "$(dirname "$0")/lib.sh"

SAMPLE_KO=${SAMPLE_KO:-$IWCM_TOP/samples/rdma/rust_rdma_ulp/rust_rdma_ulp.ko}
SAMPLE_OWN_QUEUE=${SAMPLE_OWN_QUEUE:-first}
SAMPLE_ORDER=${SAMPLE_ORDER:-qp}
SAMPLE_CONTEXT=${SAMPLE_CONTEXT:-handler}
SAMPLE_IO_QUEUES=${SAMPLE_IO_QUEUES:-8}
SAMPLE_DEPTH=${SAMPLE_DEPTH:-16}
SAMPLE_DELETE_TIMEOUT=${SAMPLE_DELETE_TIMEOUT:-60}
SAMPLE_DBG=/sys/kernel/debug/rust_rdma_ulp
NQ=$((SAMPLE_IO_QUEUES + 1))

[ -f "$SAMPLE_KO" ] ||
	iwcm_skip_all "sample_unplug: no sample module at $SAMPLE_KO (build it: make modules)"

# The rdma_cm handler_mutex lockdep report is expected here (see above):
# the splat check of iwcm_finish accepts that one report (lock name and
# rdma_cm frames, tools/ab/splat_summary.py) and nothing else.
iwcm_new_splats() {
	local f=$IWCM_TMP/dmesg-since-setup.txt
	iwcm_dmesg_since_setup > "$f"
	python3 "$IWCM_TOP/tools/ab/splat_summary.py" --check "$f" > "$IWCM_TMP/splats.txt" 2>&1
	local rc=$?
	# Noted on stderr: whatever this prints on stdout counts as a splat.
	grep "^splat_summary: accepted" "$IWCM_TMP/splats.txt" | while IFS= read -r l; do
		iwcm_log "$l" >&2
	done
	[ $rc -eq 0 ] || grep -v "^splat_summary: accepted" "$IWCM_TMP/splats.txt"
}

# sample_field FILE KEY: the value of "KEY value" in a debugfs file.
sample_field() { sed -n "s/^$2 //p" "$SAMPLE_DBG/$1" 2>/dev/null | head -n1; }

# sample_recvs: "qid recvs" per host queue.
sample_recvs() {
	sed -n 's/^q\([0-9]*\) .* recvs \([0-9]*\) .*/\1 \2/p' "$SAMPLE_DBG/host" 2>/dev/null
}

iwcm_init sample_unplug 7 python3 insmod rmmod modinfo
iwcm_log "sample: $SAMPLE_KO, own_queue=$SAMPLE_OWN_QUEUE order=$SAMPLE_ORDER context=$SAMPLE_CONTEXT"
iwcm_setup_or_bail

# The sample: target + host in one module (role=both), connected at load.
ok=1
for d in $(modinfo -F depends "$SAMPLE_KO" 2>/dev/null | tr , ' '); do
	modprobe "$d"
done
if insmod "$SAMPLE_KO" role=both addr="$IWCM_ADDR" nr_io_queues="$SAMPLE_IO_QUEUES" \
	queue_depth="$SAMPLE_DEPTH" own_queue="$SAMPLE_OWN_QUEUE" order="$SAMPLE_ORDER" \
	context="$SAMPLE_CONTEXT" 2>"$IWCM_TMP/insmod.log" &&
	[ "$(sample_field host live)" = "$NQ" ]; then
	iwcm_log "connected: 1 admin + $SAMPLE_IO_QUEUES I/O queues (target accepted $(sample_field target accepted))"
	ktap_test_pass "sample loaded: host connected 1 admin + $SAMPLE_IO_QUEUES I/O queues"
else
	iwcm_show_log "$IWCM_TMP/insmod.log"
	dmesg | grep rust_rdma_ulp | tail -n 20 | while IFS= read -r l; do iwcm_log "dmesg: $l"; done
	ktap_test_fail "sample loaded: host connected 1 admin + $SAMPLE_IO_QUEUES I/O queues"
	ok=0
fi

# Traffic on every queue: each queue's receive count grows.
moving=0
if [ $ok -eq 1 ]; then
	sample_recvs > "$IWCM_TMP/recvs.0"
	sleep 2
	sample_recvs > "$IWCM_TMP/recvs.1"
	moving=$(awk 'NR == FNR { a[$1] = $2; next } ($1 in a) && $2 > a[$1] { n++ } END { print n + 0 }' \
		"$IWCM_TMP/recvs.0" "$IWCM_TMP/recvs.1")
	total=$(awk 'NR == FNR { a[$1] = $2; next } ($1 in a) { d += $2 - a[$1] } END { print d + 0 }' \
		"$IWCM_TMP/recvs.0" "$IWCM_TMP/recvs.1")
	iwcm_log "traffic: $moving/$NQ queues moving, $total echoes in 2 s"
fi
iwcm_check "SEND/RECV traffic flowing on all $NQ queues" [ "$moving" -eq "$NQ" ]

# The unplug.  The delete runs in the background: a deadlocked one sits in
# D state, where neither timeout(1) nor SIGKILL ends it.
delete_rc=1
delete_secs=
hung=0
if [ $ok -eq 1 ]; then
	t0=$(__iwcm_now)
	iwcm_spawn del_pid "$IWCM_TMP/delete.log" rdma link delete "$IWCM_RDEV"
	iwcm_wait "$del_pid" "$SAMPLE_DELETE_TIMEOUT"
	delete_rc=$?
	delete_secs=$(__iwcm_elapsed "$t0")
	if [ "$delete_rc" -eq 124 ]; then
		hung=1
		iwcm_log "rdma link delete: still blocked after $delete_secs s: blocked tasks (sysrq w) in dmesg"
		echo w > /proc/sysrq-trigger
		# Forget it: it cannot be killed (iwcm_stop_all would wait for it).
		IWCM_PIDS=()
	else
		iwcm_log "rdma link delete: status $delete_rc after $delete_secs s (traffic running)"
	fi
fi
iwcm_check "rdma link delete returns (took ${delete_secs:-?} s, limit $SAMPLE_DELETE_TIMEOUT s)" \
	[ "$delete_rc" -eq 0 ]

if [ $hung -eq 1 ]; then
	ktap_test_fail "sample: every queue torn down (delete hung)"
	dmesg | grep -E "rust_rdma_ulp|blocked for more than" | tail -n 20 |
		while IFS= read -r l; do iwcm_log "dmesg: $l"; done
	while [ "$KTAP_TESTNO" -le "$KSFT_NUM_TESTS" ]; do
		ktap_test_fail "not run: rdma link delete is blocked"
	done
	ktap_print_totals
	exit "$KSFT_FAIL"
fi

# The sample's own account: all host queues and all accepted target queues.
h_down=$(sample_field host torn_down)
h_deleted=$(sample_field host deleted)
t_acc=$(sample_field target accepted)
t_down=$(sample_field target torn_down)
r_ms=$(sample_field host removal_ms)
iwcm_log "torn down: host $h_down/$NQ (deleted $h_deleted), target $t_down/$t_acc; controller delete in the handler took $r_ms ms"
all_torn_down() {
	[ "$ok" -eq 1 ] && [ "$h_down" = "$NQ" ] && [ "$h_deleted" = "$NQ" ] &&
		[ -n "$t_acc" ] && [ "$t_down" = "$t_acc" ]
}
iwcm_check "sample: every queue torn down (host $h_down/$NQ, target $t_down/$t_acc)" all_torn_down

if iwcm_dmesg_since_setup | grep -q "blocked for more than"; then
	ktap_test_fail "no hung task"
else
	ktap_test_pass "no hung task"
fi

# rmmod: bounded the same way.
rm_rc=1
if [ -d /sys/module/rust_rdma_ulp ]; then
	iwcm_spawn rm_pid "$IWCM_TMP/rmmod.log" rmmod rust_rdma_ulp
	iwcm_wait "$rm_pid" 30
	rm_rc=$?
	[ "$rm_rc" -eq 124 ] && IWCM_PIDS=()
	iwcm_show_log "$IWCM_TMP/rmmod.log"
fi
iwcm_check "rmmod rust_rdma_ulp" [ "$rm_rc" -eq 0 ]
iwcm_finish
