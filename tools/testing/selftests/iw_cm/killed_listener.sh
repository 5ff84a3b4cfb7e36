#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# A stopped listener with more requests than its backlog, killed after the
# requests timed out (issue 10's second input): an rping server (listen
# backlog 3) is stopped with SIGSTOP, six rping clients connect to it (the
# requests beyond the backlog are rejected, the others wait in ucma's
# queue until the clients' MPA timeout, 10 s), and after the clients have
# given up the server gets SIGKILL: ucma destroys the listener, then its
# never-accepted requests.  Every client must end with REJECTED or
# UNREACHABLE; nothing may be left behind and no warning may appear
# (siw_cep_put's refcount underflow was seen here with an earlier version of
# the Rust iw_cm).  IWCM_KILLED_LISTENER_ROUNDS rounds (default 2),
# IWCM_KILLED_LISTENER_CLIENTS clients per round (default 6).
#
# The warning's cause is in siw (fixed by tools/testing/siw/0005): siw has
# `backlog` work elements per listening endpoint, so when the six
# connections arrive at once some are never accepted; when their clients
# give up, the close of such a connection (a clone of the listening
# socket) released the listening endpoint, and the kill then put it again
# in siw_destroy_listen (refcount underflow, or a use-after-free).
# With upstream siw (IWCM_SIW=stock) that fault is not excused: it did not
# come in the boots seen (the listener's close of unaccepted children is
# also what draws upstream siw's lockdep report, 0002, an XFAIL here, as
# the leaked endpoints of the unanswered requests are, 0006).
. "$(dirname "$0")/lib.sh"

# (IWCM_QUICK=1, make check: one round; make check-all: two.)
ROUNDS=${IWCM_KILLED_LISTENER_ROUNDS:-$([ "${IWCM_QUICK:-0}" = 1 ] && echo 1 || echo 2)}
NCLI=${IWCM_KILLED_LISTENER_CLIENTS:-6}
iwcm_init killed_listener $((ROUNDS + 2)) rping python3
iwcm_setup_or_bail
[ "${IWCM_QUICK:-0}" = 1 ] && iwcm_log "IWCM_QUICK=1: $ROUNDS round(s) (make check-all: 2)"

PORT=7100
for r in $(seq "$ROUNDS"); do
	PORT=$((PORT + 1))
	t0=$(__iwcm_now)
	ok=1
	slog=$IWCM_TMP/server-$r.log
	iwcm_spawn srv "$slog" rping -s -a "$IWCM_ADDR" -p $PORT -C 1
	if ! iwcm_wait_listen $PORT; then
		iwcm_log "round $r: rping server did not listen"
		ok=0
	fi
	kill -STOP "$srv"
	cpids=()
	for i in $(seq "$NCLI"); do
		timeout 60 rping -c -a "$IWCM_ADDR" -p $PORT -C 1 >"$IWCM_TMP/client-$r-$i.log" 2>&1 &
		cpids+=($!)
	done
	for p in "${cpids[@]}"; do
		iwcm_wait "$p" 70 >/dev/null
	done
	rej=$(cat "$IWCM_TMP"/client-"$r"-*.log | grep -c "RDMA_CM_EVENT_REJECTED")
	unr=$(cat "$IWCM_TMP"/client-"$r"-*.log | grep -c "RDMA_CM_EVENT_UNREACHABLE")
	iwcm_log "round $r: clients done after $(__iwcm_elapsed "$t0") s: $rej REJECTED, $unr UNREACHABLE"
	[ $((rej + unr)) -eq "$NCLI" ] || ok=0
	# The server's endpoints of the unanswered requests: their clients
	# have gone (MPA timeout), siw's own MPA timer has fired.
	sleep 2
	kill -KILL "$srv"
	iwcm_wait "$srv" 30 >/dev/null
	if ! iwcm_wait_for 20 __iwcm_no_dev_cm_ids; then
		iwcm_log "round $r: rdma_cm ids left after the kill"
		ok=0
	fi
	splats=$(iwcm_new_splats)
	siwfix=
	if [ -n "$splats" ]; then
		printf '%s\n' "$splats" | head -20 | while IFS= read -r l; do ktap_print_msg "dmesg: $l"; done
		# With upstream siw, its own reports only (lib.sh): an XFAIL.
		siwfix=$(iwcm_upstream_siw_splats) || ok=0
	fi
	if [ $ok -eq 1 ] && [ -n "$siwfix" ]; then
		ktap_test_xfail "round $r: $NCLI clients on a stopped backlog-3 listener refused ($rej REJECTED, $unr UNREACHABLE), listener killed: upstream siw's own report, fixed by $(tr '\n' ' ' <<<"$siwfix" | sed 's/ $//')"
	elif [ $ok -eq 1 ]; then
		ktap_test_pass "round $r: $NCLI clients on a stopped backlog-3 listener refused ($rej REJECTED, $unr UNREACHABLE), listener killed, no warning"
	else
		for i in $(seq "$NCLI"); do iwcm_show_log "$IWCM_TMP/client-$r-$i.log" 5; done
		ktap_test_fail "round $r: $NCLI clients on a stopped backlog-3 listener, listener killed, no warning"
	fi
	iwcm_stop_all
done

# The same kind without waiting for a lucky burst: 24 plain TCP connects at
# once to a listener with backlog 3 (siw has 3 work elements for it, so it
# leaves connections unaccepted), all closed 2 s later.  The listener must
# keep serving (upstream siw released the listening socket for one such
# close) and its kill must not warn.
PORT=$((PORT + 1))
slog=$IWCM_TMP/burst-server.log
clog=$IWCM_TMP/burst-client.log
ok=1
iwcm_spawn srv "$slog" rping -s -P -a "$IWCM_ADDR" -p $PORT
iwcm_wait_listen $PORT || ok=0
timeout -k 5 30 python3 "$(dirname "$0")/mpa_peer.py" client burst "$IWCM_ADDR" $PORT >"$IWCM_TMP/burst.log" 2>&1 || ok=0
sleep 2
timeout -k 5 60 rping -c -a "$IWCM_ADDR" -p $PORT -C 3 -v >"$clog" 2>&1
crc=$?
[ $crc -eq 0 ] && [ "$(grep -c '^ping data' "$clog")" -eq 3 ] || ok=0
kill -KILL "$srv"
iwcm_wait "$srv" 30 >/dev/null
iwcm_wait_for 20 __iwcm_no_dev_cm_ids || ok=0
splats=$(iwcm_new_splats)
siwfix=
if [ -n "$splats" ]; then
	# With upstream siw, its own reports only (lib.sh): an XFAIL.
	siwfix=$(iwcm_upstream_siw_splats) || ok=0
fi
iwcm_log "burst: well-behaved client exit $crc after 24 unaccepted-then-closed connections"
if [ $ok -eq 1 ] && [ -n "$siwfix" ]; then
	printf '%s\n' "$splats" | head -20 | while IFS= read -r l; do ktap_print_msg "dmesg: $l"; done
	ktap_test_xfail "a burst of 24 connects closed unanswered: the listener keeps serving; upstream siw's own report, fixed by $(tr '\n' ' ' <<<"$siwfix" | sed 's/ $//')"
elif [ $ok -eq 1 ]; then
	ktap_test_pass "a burst of 24 connects closed unanswered: the listener keeps serving, its kill does not warn"
else
	printf '%s\n' "$splats" | head -20 | while IFS= read -r l; do ktap_print_msg "dmesg: $l"; done
	iwcm_show_log "$clog"
	iwcm_show_log "$slog"
	ktap_test_fail "a burst of 24 connects closed unanswered: the listener keeps serving, its kill does not warn"
fi
iwcm_stop_all

iwcm_finish
