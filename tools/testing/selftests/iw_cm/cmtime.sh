#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# cmtime over siw: 100 and then 500 connections set up and torn down in
# bulk by one client against a fresh server each time.  The client must
# exit 0, print its timing table and no error; the server must print no
# error either (see the note on "failure creating qp" below).
#
# "failure creating qp" (investigated in the VM, stock C iw_cm, rdma-core 44):
# ../shared/FACTS.md saw these lines on the server; here they come from the
# cmtime CLIENT: in one process about 71 rdma_create_qp() calls succeed and
# every later one fails (29 of 100, 429 of 500; the first with ENOENT, the
# rest with EINVAL); cmtime skips those connections (node->error) and its
# table covers the rest.  ucmatose -c 100 hits the same kind of wall in CQ
# creation (ENOSPC from the RDMA_VERBS_IOCTL, strace; ucmatose.sh).  So it
# is a per-process verbs/siw object limit in this VM, not siw's SIW_MAX_QP
# (102400), not iw_cm (QP/CQ creation does not involve it) and not the
# server's QP count; a server that serves more than ~71 connections in all
# prints the lines FACTS.md saw.  Root cause not pinned down yet.  cmtime
# makes it worse: it passes ONE global `init_qp_attr` to every
# rdma_create_qp(), which copies its working attributes back (also on
# failure), so all its QPs share the first id's 1-entry CQs.
# This test reports a run whose only errors are such QP-creation failures,
# with at least 50 connections set up, as XFAIL (never as a pass), and fails
# on any other error line, a CM error event, a client that does not finish,
# or any error from the server.
. "$(dirname "$0")/lib.sh"

iwcm_init cmtime 3 cmtime
iwcm_setup_or_bail

cmtime_run() {
	local n=$1 srv crc t0 ok=1 qpfail=0
	local slog=$IWCM_TMP/server-$n.log clog=$IWCM_TMP/client-$n.log
	t0=$(__iwcm_now)
	iwcm_spawn srv "$slog" cmtime -b "$IWCM_ADDR"
	if ! iwcm_wait_listen 7471; then
		iwcm_log "cmtime server did not listen on 7471"
		ok=0
	else
		timeout -k 5 240 cmtime -s "$IWCM_ADDR" -c "$n" >"$clog" 2>&1
		crc=$?
		iwcm_log "cmtime -c $n: client exit $crc, $(__iwcm_elapsed "$t0") s"
		grep -E "^(step|create id|resolve|create qp|connect|disconnect|destroy)" "$clog" |
			while IFS= read -r l; do iwcm_log "  $l"; done
		qpfail=$(grep -c "^failure creating qp" "$clog")
		[ "$qpfail" -eq 0 ] ||
			iwcm_log "note: $qpfail of $n rdma_create_qp() calls failed in cmtime's client (see the comment in cmtime.sh): $(grep "^failure creating qp" "$clog" | sort | uniq -c | tr -s ' \n' ' ')"
		if [ "$crc" -ne 0 ] || ! grep -qE "^connect +:" "$clog" ||
		   grep -v "^failure creating qp" "$clog" | grep -qiE "fail|error|event: " ||
		   [ $((n - qpfail)) -lt $((n < 50 ? n : 50)) ]; then
			iwcm_log "client failed"
			ok=0
		fi
		# The server runs until killed: it must still be there, and it
		# must not have refused or failed a connection.
		if iwcm_exited "$srv"; then
			iwcm_log "cmtime server exited early"
			ok=0
		fi
		if grep -qiE "fail|error" "$slog"; then
			iwcm_log "server reported errors"
			ok=0
		fi
	fi
	if [ $ok -eq 1 ] && [ "$qpfail" -gt 0 ]; then
		ktap_test_xfail "cmtime $n connections: $qpfail QP creations failed in cmtime's client (see cmtime.sh)"
	elif [ $ok -eq 1 ]; then
		ktap_test_pass "cmtime $n connections"
	else
		iwcm_show_log "$slog"
		iwcm_show_log "$clog"
		ktap_test_fail "cmtime $n connections"
	fi
	iwcm_stop_all
}

cmtime_run 100
cmtime_run 500

iwcm_finish
