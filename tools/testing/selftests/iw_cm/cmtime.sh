#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# cmtime over siw: 100 and then 500 connections set up and torn down in
# bulk by one client against a fresh server each time.  The client must
# exit 0, print its timing table and no error; the server must print no
# error either (see the note on "failure creating qp" below).
#
# "failure creating qp" (investigated, VM, stock C iw_cm, rdma-core 44):
# ../shared/FACTS.md saw these lines on the server; here they come from the
# cmtime CLIENT, in both runs: 29 of 100 (first ENOENT, then EINVAL) and 29
# of 500 (EINVAL) rdma_create_qp() calls failed, while a fresh server printed
# nothing.  They are not siw QP limits (SIW_MAX_QP is 102400, the failures
# do not grow with the connection count) and not the server's QP count.
# What is certain: cmtime passes ONE global `init_qp_attr` to every
# rdma_create_qp(), and librdmacm's rdma_create_qp() copies its working
# attributes back into the caller's struct (even on failure), so from the
# first QP on every QP of the process shares the first id's send/recv CQs
# (created with 1 entry) and inherits the first id's cap values; a failing
# call still writes its attributes back, and the failures after the first
# one are EINVAL, as for a CQ handle that is no longer valid (not proven).
# cmtime then skips those connections (node->error):
# they are never connected, and its table covers the rest.  The first
# failure's errno (ENOENT) is not explained yet.  rdma_disc.c (disconnect.sh,
# reject_listener.sh) uses fresh attributes per QP and never sees it.
# ucmatose -c 100 fails CQ creation with ENOSPC in the same VM (ucmatose.sh),
# so a verbs/siw resource failure behind both is likely.  So this test
# reports a run whose only errors are QP-creation failures in cmtime's
# client (fewer than half of the connections) as XFAIL, never as a pass,
# and fails on any other error line, a CM error event, a client that does
# not finish, or any error from the server.
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
		   [ $((qpfail * 2)) -ge "$n" ]; then
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
