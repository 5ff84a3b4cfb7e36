#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# A listener whose ULP refuses every request, with rdma_disc (rdma_disc.c):
#   reject          the server rdma_reject()s each of 30 requests;
#   destroy-req     the server destroys each of 30 request ids unanswered;
#   destroy-listen  the server destroys its listen id at the 5th request
#                   while the client keeps 60 attempts going, 4 at a time.
# The client must see REJECTED (UNREACHABLE / CONNECT_ERROR too once the
# listener is gone) for every attempt, never ESTABLISHED, never silence;
# the server must have seen its requests; nothing may be left behind.
. "$(dirname "$0")/lib.sh"

iwcm_init reject_listener 4
RDMA_DISC=$(dirname "$0")/rdma_disc
[ -x "$RDMA_DISC" ] || ktap_exit_fail_msg "$RDMA_DISC not built (make -C tools/testing/selftests/iw_cm)"
iwcm_setup_or_bail

PORT=7998
# refuse_run MODE SERVER_ARGS -- CLIENT_ARGS
refuse_run() {
	local mode=$1 srv crc src t0 ok=1 sargs=() cargs=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	local slog=$IWCM_TMP/$mode-server.log clog=$IWCM_TMP/$mode-client.log
	t0=$(__iwcm_now)
	iwcm_spawn srv "$slog" "$RDMA_DISC" -s -a "$IWCM_ADDR" -p $PORT -m "$mode" "${sargs[@]}"
	if ! iwcm_wait_for 20 iwcm_log_has "$slog" "listening on"; then
		iwcm_log "rdma_disc server did not start"
		ok=0
	else
		timeout -k 5 120 "$RDMA_DISC" -c -a "$IWCM_ADDR" -p $PORT -m "$mode" "${cargs[@]}" >"$clog" 2>&1
		crc=$?
		iwcm_wait "$srv" 30
		src=$?
		iwcm_log "mode $mode: client exit $crc, server exit $src, $(__iwcm_elapsed "$t0") s"
		grep -h "OK:" "$slog" "$clog" | while IFS= read -r l; do iwcm_log "  $l"; done
		[ "$crc" -eq 0 ] && [ "$src" -eq 0 ] || ok=0
	fi
	if [ $ok -eq 1 ]; then
		ktap_test_pass "listener $mode: clients refused, no hang"
	else
		iwcm_show_log "$slog"
		iwcm_show_log "$clog"
		ktap_test_fail "listener $mode: clients refused, no hang"
	fi
	iwcm_stop_all
}

refuse_run reject -n 30 -- -n 30 -P 4
refuse_run destroy-req -n 30 -- -n 30 -P 4
refuse_run destroy-listen -k 5 -- -n 60 -P 4

iwcm_finish
