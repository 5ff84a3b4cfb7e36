#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# rdmacm-utils' rdma_server / rdma_client examples (rdma_create_ep,
# rdma_get_request, synchronous rdma_accept/rdma_connect, one send and one
# receive each way, rdma_disconnect).  Three rounds; each side must exit 0
# and print "end 0".
. "$(dirname "$0")/lib.sh"

ROUNDS=3
iwcm_init rdma_server_client $((1 + ROUNDS)) rdma_server rdma_client
iwcm_setup_or_bail

for r in $(seq "$ROUNDS"); do
	slog=$IWCM_TMP/server-$r.log
	clog=$IWCM_TMP/client-$r.log
	ok=1
	t0=$(__iwcm_now)
	iwcm_spawn srv "$slog" rdma_server -s "$IWCM_ADDR"
	if ! iwcm_wait_listen 7471; then
		iwcm_log "rdma_server did not listen on 7471"
		ok=0
	else
		timeout -k 5 60 rdma_client -s "$IWCM_ADDR" >"$clog" 2>&1
		crc=$?
		iwcm_wait "$srv" 30
		src=$?
		iwcm_log "round $r: client exit $crc, server exit $src, $(__iwcm_elapsed "$t0") s"
		if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ] ||
		   ! grep -q "^rdma_client: end 0" "$clog" || ! grep -q "^rdma_server: end 0" "$slog"; then
			ok=0
		fi
	fi
	if [ $ok -eq 1 ]; then
		ktap_test_pass "rdma_server/rdma_client round $r"
	else
		iwcm_show_log "$slog"
		iwcm_show_log "$clog"
		ktap_test_fail "rdma_server/rdma_client round $r"
	fi
	iwcm_stop_all
done

iwcm_finish
