#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# ucmatose over siw: 20 and then 100 simultaneous connections (the server
# needs the same -c as the client), each exchanging messages, then
# disconnecting.  Both sides must exit 0 and report "return status 0".
. "$(dirname "$0")/lib.sh"

iwcm_init ucmatose 3 ucmatose
iwcm_setup_or_bail

ucmatose_run() {
	local n=$1 srv crc src t0 ok=1
	local slog=$IWCM_TMP/server-$n.log clog=$IWCM_TMP/client-$n.log
	t0=$(__iwcm_now)
	iwcm_spawn srv "$slog" ucmatose -b "$IWCM_ADDR" -c "$n"
	if ! iwcm_wait_listen 7471; then
		iwcm_log "ucmatose server did not listen on 7471"
		ok=0
	else
		timeout -k 5 240 ucmatose -s "$IWCM_ADDR" -c "$n" >"$clog" 2>&1
		crc=$?
		iwcm_wait "$srv" 60
		src=$?
		iwcm_log "ucmatose -c $n: client exit $crc, server exit $src, $(__iwcm_elapsed "$t0") s"
		if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ] ||
		   ! grep -q "return status 0" "$clog" || ! grep -q "return status 0" "$slog" ||
		   grep -qiE "fail|error|event: " "$clog" "$slog"; then
			ok=0
		fi
	fi
	# "unable to create CQ" here was siw's SIW_INVAL_UOBJ_KEY bug (see
	# cmtime.sh and tools/testing/siw/): a failure like any other now,
	# with upstream siw (IWCM_SIW=stock) an XFAIL naming 0001.
	if [ $ok -eq 1 ]; then
		ktap_test_pass "ucmatose $n connections"
	else
		iwcm_show_log "$slog"
		iwcm_show_log "$clog"
		if iwcm_siw_key_exhausted "$slog" "$clog"; then
			iwcm_fail_or_siw_xfail 0001 "ucmatose $n connections" \
				"CQ or QP creation refused (the 145th mmap key is SIW_INVAL_UOBJ_KEY)"
		else
			ktap_test_fail "ucmatose $n connections"
		fi
	fi
	iwcm_stop_all
}

iwcm_quick big 100 50 "the second run's connections:"
ucmatose_run 20
ucmatose_run "$big"

iwcm_finish
