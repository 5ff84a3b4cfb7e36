#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# rping and ucmatose pairs with rdma-core's port mapper daemon (iwpmd)
# running, killed in the middle of the loop, and restarted (issue 12).
# With iwpmd gone between iw_cm's pid check and its mapping request, the
# kernel's port mapper client can answer 0 without filling the mapped
# addresses in; an iw_cm that adopts them hands the port mapper a sockaddr
# of no family ("iwpm_...: Invalid sockaddr family").  Ours checks the
# family and keeps its own addresses.
#   - every pair while iwpmd runs, and after the restart, connects and
#     moves its data (the pair and the 20-connection burst that race the
#     kill may fail: their set-up lost its port mapper);
#   - no "Invalid sockaddr family" line.
# The race is probabilistic: a run where no connect lost it passes; the
# deterministic check of the family rule (cm_id/portmap.rs
# adopted_mapping) is the KUnit case
# port_mapper_answer_of_another_family_is_not_adopted.
# With the C iw_cm the test needs iwcm.c with the port mapper client fixed
# (tools/vm/run.sh IWCM_C_IWCM=iwpm-fixed): the kernel's client oopses when
# iwpmd answers the registration before the request's buffer is set
# (Documentation/known_issues.rst), so with the stock module it SKIPs.  There an
# "Invalid sockaddr family" line is an XFAIL: iwcm.c's iw_cm_map() adopts
# the unfilled answer.
. "$(dirname "$0")/lib.sh"

iwcm_init iwpmd 6 rping ucmatose iwpmd
# Pairs before the kill, the racing round, pairs after (IWCM_QUICK=1, make
# check: one before and two after; make check-all: two and three).
[ -n "${IWCM_IWPMD_ROUNDS:-}" ] && ROUNDS=$IWCM_IWPMD_ROUNDS || iwcm_quick ROUNDS 6 3 "rounds:"
iwcm_require_iwpm_fix "its port mapper client oopses when iwpmd answers the registration before the request's buffer is set (iwpm_register_pid_cb, strcmp on NULL); IWCM_C_IWCM=iwpm-fixed runs iwcm.c with it fixed"
iwcm_setup_or_bail

IWPMD_LOG=$IWCM_TMP/iwpmd.log
start_iwpmd() {
	# -s: systemd mode, stays in the foreground.
	iwcm_spawn IWPMD "$IWPMD_LOG" iwpmd -s
	# iwpmd registers with the kernel over netlink at start: give it time.
	sleep 2
	! iwcm_exited "$IWPMD"
}

# pair R: an rping pair (-C 3) and a ucmatose pair (1 connection).
pair() {
	local r=$1 port=$((7800 + $1)) srv ok=1
	iwcm_spawn srv "$IWCM_TMP/rping-s-$r.log" rping -s -a "$IWCM_ADDR" -p $port -C 3
	iwcm_wait_listen $port 10 || true
	timeout -k 5 60 rping -c -a "$IWCM_ADDR" -p $port -C 3 -v >"$IWCM_TMP/rping-c-$r.log" 2>&1 || ok=0
	[ "$(grep -c '^ping data' "$IWCM_TMP/rping-c-$r.log")" -eq 3 ] || ok=0
	iwcm_wait "$srv" 20 >/dev/null || ok=0
	iwcm_spawn srv "$IWCM_TMP/ucm-s-$r.log" ucmatose -b "$IWCM_ADDR" -c 1 -p $((port + 100))
	sleep 1
	timeout -k 5 60 ucmatose -s "$IWCM_ADDR" -c 1 -p $((port + 100)) >"$IWCM_TMP/ucm-c-$r.log" 2>&1 || ok=0
	iwcm_wait "$srv" 20 >/dev/null || ok=0
	[ $ok -eq 1 ] || { iwcm_show_log "$IWCM_TMP/rping-c-$r.log" 8; iwcm_show_log "$IWCM_TMP/ucm-c-$r.log" 8; }
	return $((1 - ok))
}

iwcm_check "iwpmd -s started" start_iwpmd
before=0 racing=0 after=0
kill_at=$(( (ROUNDS + 1) / 2 ))
for r in $(seq "$ROUNDS"); do
	if [ "$r" -eq "$kill_at" ]; then
		# Killed while this round's connections are being set up: a
		# burst of 20 ucmatose connections beside the pair, so that some
		# connect passes iw_cm's pid check while another's failed send
		# to the dead iwpmd resets the pid (iwpm_msg.c), and then gets
		# 0 from the port mapper with nothing filled in.
		iwcm_spawn bsrv "$IWCM_TMP/burst-s.log" ucmatose -b "$IWCM_ADDR" -c 20 -p 7950
		sleep 1
		iwcm_spawn bcli "$IWCM_TMP/burst-c.log" ucmatose -s "$IWCM_ADDR" -c 20 -p 7950
		( sleep 0.$((RANDOM % 9 + 1)); kill -9 "$IWPMD" 2>/dev/null ) &
		killer=$!
		pair "$r" || racing=$((racing + 1))
		wait "$killer"
		iwcm_wait "$bcli" 60 >/dev/null || racing=$((racing + 1))
		iwcm_wait "$bsrv" 30 >/dev/null || true
		iwcm_log "round $r: iwpmd killed during the pairs and a 20-connection burst ($racing failed: tolerated)"
	elif [ "$r" -lt "$kill_at" ]; then
		pair "$r" || before=$((before + 1))
	else
		pair "$r" || after=$((after + 1))
	fi
done
iwcm_check "pairs with iwpmd running connect ($before of $((kill_at - 1)) failed)" [ $before -eq 0 ]
iwcm_check "pairs after iwpmd was killed connect without it ($after failed)" [ $after -eq 0 ]
iwcm_check "iwpmd restarted, and a pair connects through it" eval 'start_iwpmd && pair 99'
kill -9 "$IWPMD" 2>/dev/null

bad=$(iwcm_dmesg_since_setup | grep -c "Invalid sockaddr family")
if [ "$bad" -eq 0 ]; then
	ktap_test_pass "no 'Invalid sockaddr family' from the port mapper client"
elif [ "$IWCM_IMPL" = c ]; then
	ktap_test_xfail "C iw_cm: $bad 'Invalid sockaddr family' line(s): iwcm.c's iw_cm_map() adopts the mapped address of a request the port mapper answered 0 without filling in"
else
	dmesg | grep "Invalid sockaddr family" | head -5 | while IFS= read -r l; do ktap_print_msg "dmesg: $l"; done
	ktap_test_fail "no 'Invalid sockaddr family' from the port mapper client ($bad lines)"
fi
iwcm_finish
