#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# rping over siw: 100 iterations with the client printing each ping (-v),
# then 1000 iterations with data verification (-V, with -v: each ping the
# client verified is printed and counted).  Both the client and the server
# must exit 0; the client must show every ping and no error.
# IWCM_QUICK=1 (make check) verifies 300 iterations instead of 1000 (the
# client takes about 3 minutes for 1000 under TCG with KASAN and lockdep
# on a busy 2-core host); make check-all runs 1000.
. "$(dirname "$0")/lib.sh"

iwcm_init rping 3 rping
iwcm_setup_or_bail

# rping_run COUNT CLIENT_FLAGS DESCRIPTION (CLIENT_FLAGS with -v: the
# client prints each ping it completed, after verifying it under -V)
rping_run() {
	local n=$1 flags=$2 desc=$3 srv crc src pings t0 ok=1
	local slog=$IWCM_TMP/server-$n.log clog=$IWCM_TMP/client-$n.log
	t0=$(__iwcm_now)
	iwcm_spawn srv "$slog" rping -s -a "$IWCM_ADDR" -C "$n"
	if ! iwcm_wait_listen 7174; then
		iwcm_log "rping server did not listen on 7174"
		ok=0
	else
		# shellcheck disable=SC2086
		timeout -k 5 240 rping -c -a "$IWCM_ADDR" -C "$n" $flags >"$clog" 2>&1
		crc=$?
		iwcm_wait "$srv" 30
		src=$?
		pings=$(grep -c "^ping data: rdma-ping-" "$clog")
		iwcm_log "rping -C $n $flags: client exit $crc, server exit $src, $pings ping lines, $(__iwcm_elapsed "$t0") s"
		if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ] || [ "$pings" -ne "$n" ] ||
		   grep -qiE "error|mismatch|fail" "$clog" "$slog"; then
			ok=0
		fi
	fi
	if [ $ok -eq 1 ]; then
		ktap_test_pass "$desc"
	else
		iwcm_show_log "$slog"
		iwcm_show_log "$clog"
		ktap_test_fail "$desc"
	fi
	iwcm_stop_all
}

rping_run 100 -v "rping 100 iterations (-v), client and server exit 0"
iwcm_quick nv 1000 300 "verified iterations:"
rping_run "$nv" "-V -v" "rping $nv iterations with verification (-V), each one counted"

iwcm_finish
