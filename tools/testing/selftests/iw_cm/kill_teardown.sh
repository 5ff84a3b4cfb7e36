#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Teardown while data flows: an rping and an ib_send_bw -R pair, first the
# client and then (with a fresh pair) the server SIGKILLed mid-run.  The
# survivor must notice (its DISCONNECTED event or flushed completions) and
# exit by itself within 30 s, and once both are gone no rdma_cm id may be
# left on the device (and with the Rust iw_cm, its cm_id count must be
# back to the baseline).
#
# Environment (to chase a rare failure): IWCM_KT_SCENARIOS, the scenarios
# as TOOL:VICTIM words (default: all four), IWCM_KT_REPEAT, how many times
# the list runs (default 1).
. "$(dirname "$0")/lib.sh"

KT_SCENARIOS=${IWCM_KT_SCENARIOS:-rping:client rping:server ib_send_bw:client ib_send_bw:server}
KT_REPEAT=${IWCM_KT_REPEAT:-1}
read -ra KT_LIST <<< "$KT_SCENARIOS"
iwcm_init kill_teardown $((1 + ${#KT_LIST[@]} * KT_REPEAT)) rping ib_send_bw stdbuf
iwcm_setup_or_bail

lo_tx() { cat /sys/class/net/lo/statistics/tx_bytes; }
# Data flows: rping printed 20 pings / lo carried 16 MiB since the start.
rping_flowing() { [ "$(grep -c '^ping data' "$1" 2>/dev/null)" -ge 20 ]; }
bw_flowing() { [ $(( $(lo_tx) - LO0 )) -gt $((16 << 20)) ]; }

# fail TEXT: a scenario's failed step, noted for the recap; the first one
# also takes the diagnosis (ids, QPs, sockets, stacks) while it lasts.
fail() {
	iwcm_fail_note "$tool, $victim killed: $* ($(__iwcm_elapsed "$t0") s in)"
	[ $ok -eq 1 ] && iwcm_diag "$tool, $victim killed"
	ok=0
}

# scenario TOOL VICTIM: start the pair, wait for data, SIGKILL VICTIM
# (client|server), the other must exit within 30 s, nothing left behind.
scenario() {
	local tool=$1 victim=$2 srv cli port killed other rc ok=1 t0
	local slog=$IWCM_TMP/$tool-$victim-server.log clog=$IWCM_TMP/$tool-$victim-client.log
	t0=$(__iwcm_now)
	LO0=$(lo_tx)
	# A scenario takes 15-30 s under TCG.
	iwcm_watchdog 120 "$tool, $victim killed"
	case $tool in
	rping)
		port=7174
		iwcm_spawn srv "$slog" stdbuf -oL rping -s -a "$IWCM_ADDR"
		iwcm_wait_listen $port || { fail "server did not listen in 20 s"; ok=0; }
		iwcm_spawn cli "$clog" stdbuf -oL rping -c -a "$IWCM_ADDR" -v
		iwcm_wait_for 60 rping_flowing "$clog" || { fail "fewer than 20 pings after 60 s"; ok=0; }
		;;
	ib_send_bw)
		port=18515
		iwcm_spawn srv "$slog" ib_send_bw -R -d "$IWCM_RDEV" -p $port -F -D 120 -s 65536
		iwcm_wait_listen $port || { fail "server did not listen in 20 s"; ok=0; }
		iwcm_spawn cli "$clog" ib_send_bw -R -d "$IWCM_RDEV" -p $port -F -D 120 -s 65536 "$IWCM_ADDR"
		iwcm_wait_for 60 bw_flowing || { fail "lo carried under 16 MiB in 60 s"; ok=0; }
		;;
	esac
	if [ "$victim" = client ]; then killed=$cli other=$srv; else killed=$srv other=$cli; fi
	if iwcm_exited "$killed"; then
		fail "the $victim had already exited before the kill"
		ok=0
	fi
	kill -9 "$killed" 2>/dev/null
	iwcm_wait "$killed" 10 >/dev/null
	iwcm_wait "$other" 30
	rc=$?
	if [ $rc -eq 124 ]; then
		fail "the peer of the killed $victim still runs after 30 s"
		ok=0
	else
		iwcm_log "$tool: peer of the killed $victim exited with status $rc"
	fi
	iwcm_stop_all
	if ! iwcm_wait_for 10 __iwcm_no_dev_cm_ids; then
		iwcm_dev_cm_ids | while IFS= read -r l; do iwcm_log "left: $l"; done
		fail "rdma_cm ids left on $IWCM_RDEV after 10 s"
		ok=0
	fi
	if [ -n "$IWCM_CMIDS_BASE" ] && ! iwcm_wait_for 10 __iwcm_cmids_at_base; then
		fail "iw_cm cm_ids $(iwcm_cm_ids), baseline $IWCM_CMIDS_BASE"
		ok=0
	fi
	iwcm_watchdog_stop
	iwcm_log "$tool, $victim killed: $(__iwcm_elapsed "$t0") s, lo carried $(( ($(lo_tx) - LO0) >> 20 )) MiB"
	if [ $ok -eq 1 ]; then
		ktap_test_pass "$tool: $victim SIGKILLed mid-run, peer exits, no cm_id left"
	else
		iwcm_show_log "$slog" 15
		iwcm_show_log "$clog" 15
		iwcm_fail_note "$tool, $victim killed: server log ends: $(tail -n 2 "$slog" 2>/dev/null | tr '\n' '|')"
		iwcm_fail_note "$tool, $victim killed: client log ends: $(tail -n 2 "$clog" 2>/dev/null | tr '\n' '|')"
		ktap_test_fail "$tool: $victim SIGKILLed mid-run, peer exits, no cm_id left"
	fi
}

for ((kt_round = 0; kt_round < KT_REPEAT; kt_round++)); do
	for kt_s in "${KT_LIST[@]}"; do
		scenario "${kt_s%%:*}" "${kt_s#*:}"
	done
done

iwcm_finish
