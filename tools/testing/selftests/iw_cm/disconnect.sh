#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# rdma_disconnect() corner cases with rdma_disc (rdma_disc.c):
#   both   both peers call rdma_disconnect() at the same instant, 20 times;
#   after  one peer calls rdma_disconnect() only after the other has
#          closed (its DISCONNECTED event seen), 20 times, alternating
#          which side goes first: the late call must return 0.
# Each side exits non-zero on any error or unexpected event.
. "$(dirname "$0")/lib.sh"

iwcm_init disconnect 3
RDMA_DISC=$(dirname "$0")/rdma_disc
[ -x "$RDMA_DISC" ] || ktap_exit_fail_msg "$RDMA_DISC not built (make -C tools/testing/selftests/iw_cm)"
iwcm_setup_or_bail

PORT=7999
disc_run() {
	local mode=$1 n=$2 srv crc src t0 ok=1
	local slog=$IWCM_TMP/$mode-server.log clog=$IWCM_TMP/$mode-client.log
	t0=$(__iwcm_now)
	iwcm_spawn srv "$slog" "$RDMA_DISC" -s -a "$IWCM_ADDR" -p $PORT -m "$mode" -n "$n"
	if ! iwcm_wait_for 20 iwcm_log_has "$slog" "listening on"; then
		iwcm_log "rdma_disc server did not start"
		ok=0
	else
		timeout -k 5 120 "$RDMA_DISC" -c -a "$IWCM_ADDR" -p $PORT -m "$mode" -n "$n" >"$clog" 2>&1
		crc=$?
		iwcm_wait "$srv" 30
		src=$?
		iwcm_log "mode $mode x$n: client exit $crc, server exit $src, $(__iwcm_elapsed "$t0") s"
		[ "$crc" -eq 0 ] && [ "$src" -eq 0 ] || ok=0
	fi
	if [ $ok -eq 1 ]; then
		ktap_test_pass "rdma_disconnect $mode ($n connections)"
	else
		iwcm_show_log "$slog"
		iwcm_show_log "$clog"
		ktap_test_fail "rdma_disconnect $mode ($n connections)"
	fi
	iwcm_stop_all
}

iwcm_quick n 20 10 "connections per run:"
disc_run both "$n"
disc_run after "$n"

iwcm_finish
