#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The passive side's accept against an active side that sends at once.
# The active side may send its first FPDU as soon as it holds the MPA reply;
# the passive side must read it however late its accept call returns.
# siw's accept sent the MPA reply before handing the socket's receive side
# to the QP, so a frame arriving in between was never read and both
# rpings waited forever (tools/testing/siw/0003-*.patch).  Here the rping
# server runs at SCHED_IDLE on the client's CPU: once the MPA reply wakes
# the client's side, the server's accept call is preempted right after
# the send, and the client's first SEND arrives inside that window.
#
# Each round is a one-ping rping pair; every round must complete in 20 s.
# With upstream siw (IWCM_SIW=stock) rounds that stall with the client's
# first frame unread on the server's socket are an XFAIL naming 0003.
. "$(dirname "$0")/lib.sh"

# Upstream siw loses the race in the first round or two: 8 rounds keep the
# test sharp at half the time of 20 under TCG with KASAN.
ROUNDS=${IWCM_ACCEPT_RACE_ROUNDS:-8}

iwcm_init accept_race 2 rping taskset chrt
iwcm_setup_or_bail
[ -n "${IWCM_ACCEPT_RACE_ROUNDS:-}" ] || iwcm_quick ROUNDS 8 4 "rounds:"

round() {
	local i=$1 srv cli crc src
	local slog=$IWCM_TMP/server-$i.log clog=$IWCM_TMP/client-$i.log
	iwcm_spawn srv "$slog" taskset -c 0 chrt --idle 0 rping -s -a "$IWCM_ADDR" -C 1 -v
	if ! iwcm_wait_listen 7174; then
		iwcm_fail_note "round $i: the rping server did not listen in 20 s"
		return 1
	fi
	iwcm_spawn cli "$clog" taskset -c 0 rping -c -a "$IWCM_ADDR" -C 1 -v
	iwcm_wait "$cli" 20
	crc=$?
	iwcm_wait "$srv" 10
	src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q '^ping data' "$clog"; then
		iwcm_stop_all
		return 0
	fi
	if [ $crc -eq 124 ] || [ $src -eq 124 ]; then
		# 0003's signature: the server's connection holds the client's
		# first frame unread (its Recv-Q), taken while the pair still runs.
		if timeout 10 ss -tnH state established '( sport = :7174 )' 2>/dev/null |
				awk '$1 > 0 { f = 1 } END { exit !f }'; then
			unread=$((unread + 1))
			iwcm_fail_note "round $i: the pair stalled with the client's first frame unread on the server's socket (client exit $crc, server exit $src; 124: still running)"
		else
			iwcm_fail_note "round $i: the pair stalled (client exit $crc, server exit $src; 124: still running)"
		fi
		# (taken while the stalled pair still runs)
		iwcm_diag "round $i"
	else
		iwcm_fail_note "round $i: client exit $crc, server exit $src"
	fi
	iwcm_show_log "$slog" 10
	iwcm_show_log "$clog" 10
	iwcm_stop_all
	return 1
}

t0=$(__iwcm_now)
failed=0
unread=0
for ((i = 1; i <= ROUNDS; i++)); do
	round "$i" || failed=$((failed + 1))
done
iwcm_log "accept_race: $ROUNDS rounds, $failed failed, $(__iwcm_elapsed "$t0") s"
if [ $failed -eq 0 ]; then
	ktap_test_pass "$ROUNDS rping pairs with the server at SCHED_IDLE on the client's CPU, none stalled"
elif [ $unread -eq $failed ]; then
	# Every failed round stalled with the first frame unread: with
	# upstream siw (IWCM_SIW=stock) the accept race itself, an XFAIL.
	iwcm_fail_or_siw_xfail 0003 "$ROUNDS rping pairs with the server at SCHED_IDLE on the client's CPU, none stalled ($failed failed)" \
		"its accept sends the MPA reply before the QP takes the socket, the client's first frame stays unread ($failed of $ROUNDS rounds)"
else
	ktap_test_fail "$ROUNDS rping pairs with the server at SCHED_IDLE on the client's CPU, none stalled ($failed failed)"
fi

iwcm_finish
