#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# perftest over siw with rdma_cm connection setup (-R): ib_send_bw and
# ib_send_lat.  Both sides must exit 0 and the client must print a result
# row (bytes, iterations, numbers).
. "$(dirname "$0")/lib.sh"

iwcm_init perftest 3 ib_send_bw ib_send_lat
iwcm_setup_or_bail

PORT=18515
# perf_run TOOL ARGS...: server and client with the same arguments.
perf_run() {
	local tool=$1 srv crc src t0 ok=1
	shift
	local slog=$IWCM_TMP/$tool-server.log clog=$IWCM_TMP/$tool-client.log
	t0=$(__iwcm_now)
	iwcm_spawn srv "$slog" "$tool" -R -d "$IWCM_RDEV" -p "$PORT" -F "$@"
	if ! iwcm_wait_listen "$PORT"; then
		iwcm_log "$tool server did not listen on $PORT"
		ok=0
	else
		timeout -k 5 120 "$tool" -R -d "$IWCM_RDEV" -p "$PORT" -F "$@" "$IWCM_ADDR" >"$clog" 2>&1
		crc=$?
		iwcm_wait "$srv" 30
		src=$?
		iwcm_log "$tool $*: client exit $crc, server exit $src, $(__iwcm_elapsed "$t0") s"
		grep -A1 -E "^ *#bytes" "$clog" | while IFS= read -r l; do iwcm_log "  $l"; done
		# A result row: bytes and iterations, then numbers.
		if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ] ||
		   ! grep -qE "^ *[0-9]+ +[0-9]+ +[0-9.]+ " "$clog"; then
			ok=0
		fi
	fi
	if [ $ok -eq 1 ]; then
		ktap_test_pass "$tool -R $*"
	else
		iwcm_show_log "$slog"
		iwcm_show_log "$clog"
		ktap_test_fail "$tool -R $*"
	fi
	iwcm_stop_all
}

iwcm_quick iters 1000 200 "iterations per perftest run:"
perf_run ib_send_bw -n "$iters" -s 65536
perf_run ib_send_lat -n "$iters" -s 64

iwcm_finish
