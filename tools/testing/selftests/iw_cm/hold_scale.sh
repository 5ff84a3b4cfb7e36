#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# A real cm_id table: as many siw connections as the test VM holds, set up
# and kept at once (rdma_disc -m hold: one server process, one client
# process with 16 connection attempts in flight, one CQ per process), then
# the table read in a loop and the device removed under them.
#
#   1. every connection ESTABLISHED on both sides (the set-up time logged;
#      a connect refused with EADDRINUSE -- siw binds the port rdma_cm chose,
#      which an earlier test's TCP socket in TIME_WAIT may hold, seen after
#      connect_flood.sh -- is retried with a new id and counted);
#   2. rdma_cm's own count (rdma resource show cm_id) is 2N+1: N active, N
#      passive, the listener;
#   3. (Rust iw_cm) iw_cm/count and iw_cm/cm_ids agree with it: the count
#      line is the baseline plus 2N+1 and each read lists exactly that many
#      rows, well formed (IWCM_HOLD_READS reads, each timed); the C iw_cm
#      has no table: SKIP;
#   4. `rdma link delete` with every connection up returns 0, bounded (its
#      time logged, in all and from the processes' kill on: siw has no
#      disassociate_ucontext, so the delete waits for the processes, which
#      are killed once it has started);
#   then the leak checks (no rdma_cm id, the cm_id count back to its
#   baseline) and the splat check of every test.
#
# Environment: IWCM_HOLD_COUNT (connections; default 4000, 1000 under
# IWCM_QUICK=1), IWCM_HOLD_READS (table reads, default 5), IWCM_HOLD_SETUP_S
# (the set-up's bound, default 900 s).
#
# The upstream siw refuses a process's QPs from the 145th on (its mmap key
# runs out): XFAIL naming tools/testing/siw/0001.
. "$(dirname "$0")/lib.sh"

RDMA_DISC=$(dirname "$0")/rdma_disc
TABLE=/sys/kernel/debug/iw_cm/cm_ids
PORT=7481

iwcm_init hold_scale 5
iwcm_setup_or_bail

if [ -n "${IWCM_HOLD_COUNT:-}" ]; then
	n=$IWCM_HOLD_COUNT
else
	iwcm_quick n 4000 1000 "connections held:"
fi
reads=${IWCM_HOLD_READS:-5}
setup_s=${IWCM_HOLD_SETUP_S:-900}
want=$((2 * n + 1))

# rdma_cm's ids on the device, from the resource summary (a listing of
# thousands of ids takes rdma(8) longer than iwcm_rdma_query's bound
# under TCG).
dev_cm_id_count() {
	iwcm_rdma_query resource show | sed -n "s/.* $IWCM_RDEV: .* cm_id \([0-9]*\).*/\1/p"
}
# held LOG: the process said it holds every connection.
held() { grep -q "held $n connection" "$1"; }
both_held() { held "$IWCM_TMP/srv.log" && held "$IWCM_TMP/cli.log"; }
# A process that exited before holding (its FAIL line says why).
gave_up() { iwcm_exited "$srv" || iwcm_exited "$cli"; }

# 1. Set up and hold.
iwcm_spawn srv "$IWCM_TMP/srv.log" "$RDMA_DISC" -s -a "$IWCM_ADDR" -p $PORT -m hold \
	-n "$n" -b 1024 -t 60000
iwcm_wait_listen $PORT
t0=$SECONDS
iwcm_spawn cli "$IWCM_TMP/cli.log" "$RDMA_DISC" -c -a "$IWCM_ADDR" -p $PORT -m hold \
	-n "$n" -P 16 -t 60000
next=$((SECONDS + 30))
while ! both_held && ! gave_up && [ $((SECONDS - t0)) -lt "$setup_s" ]; do
	sleep 1
	if [ "$SECONDS" -ge "$next" ]; then
		iwcm_log "$((SECONDS - t0)) s: $(grep -h ' held$' "$IWCM_TMP/cli.log" | tail -n 1 |
			sed 's/.*: //') (client), rdma_cm ids $(dev_cm_id_count)"
		next=$((SECONDS + 30))
	fi
done
setup_time=$((SECONDS - t0))
what="$n connections held (set up in $setup_time s, bound $setup_s s)"
if both_held; then
	ktap_test_pass "$what"
	ok=1
else
	ok=0
	iwcm_show_log "$IWCM_TMP/srv.log" 5
	iwcm_show_log "$IWCM_TMP/cli.log" 5
	if iwcm_siw_key_exhausted "$IWCM_TMP/srv.log" "$IWCM_TMP/cli.log"; then
		iwcm_fail_or_siw_xfail 0001 "$what" \
			"QP creation refused (the 145th mmap key is SIW_INVAL_UOBJ_KEY)"
	else
		ktap_test_fail "$what"
	fi
fi

# 2. rdma_cm's count.
if [ $ok = 1 ]; then
	got=$(dev_cm_id_count)
	iwcm_check "rdma_cm ids on $IWCM_RDEV (rdma resource show): ${got:-none}, want $want" [ "${got:-0}" -eq "$want" ]
else
	ktap_test_skip "rdma_cm ids on $IWCM_RDEV: the connections were not all held"
fi

# 3. The table, read in a loop while nothing comes or goes.
# table_read WANT FILE: "OK count rows" or "BAD why" for one read.
table_read() {
	awk -v want="$1" '
		NR == 1 { count = $1 + 0; if ($0 !~ /^[0-9]+$/) bad = "count line \"" $0 "\""; next }
		NR == 2 { next }
		{
			rows++
			if (NF != 14) bad = "row with " NF " fields: " $0
			if (seen[$1]++) bad = "duplicate id " $1
		}
		END {
			if (count != want) bad = bad " count " count ", want " want
			if (rows != count) bad = bad " rows " rows " vs count " count
			if (bad != "") print "BAD" bad; else print "OK " count " " rows
		}' "$2"
}
if [ "$IWCM_IMPL" != rust ]; then
	ktap_test_skip "iw_cm/cm_ids read $reads times: the C iw_cm has no cm_id table"
elif [ ! -r "$TABLE" ]; then
	ktap_test_fail "iw_cm/cm_ids read $reads times: no $TABLE with the Rust iw_cm"
elif [ $ok = 0 ]; then
	ktap_test_skip "iw_cm/cm_ids read $reads times: the connections were not all held"
else
	twant=$((IWCM_CMIDS_BASE + want))
	bad=0 times=
	for i in $(seq "$reads"); do
		r0=$(__iwcm_now)
		cat "$TABLE" >"$IWCM_TMP/table"
		dt=$(__iwcm_elapsed "$r0")
		v=$(table_read "$twant" "$IWCM_TMP/table")
		times="$times $dt"
		case $v in OK*) ;; *) bad=$((bad + 1)); iwcm_log "read $i: $v" ;; esac
	done
	iwcm_log "iw_cm/count $(iwcm_cm_ids); read times (s, cat of the file):$times"
	iwcm_check "iw_cm/cm_ids read $reads times at $twant cm_ids: $bad bad (count line and rows $twant each)" \
		[ $bad -eq 0 ]
fi

# 4. The device removed under every connection.  siw has no
# disassociate_ucontext: ib_uverbs' removal waits for every process with
# the device open before rdma_cm's DEVICE_REMOVAL can go out, so, as
# cm_table.sh and the soak do, both processes are killed once the delete
# has started; their exit closes every id (ucma) and QP (uverbs) while the
# device goes.
# Their exit (thousands of QPs and ids, about 45 s for 4000 connections
# under TCG) is a wait of the delete's own task in ib_uverbs' removal,
# longer than the VM's hung-task timeout (30 s): that timeout is raised
# to the delete's bound for the delete only.
iwcm_exited "$srv" || iwcm_exited "$cli" && iwcm_log "a process exited before the delete"
hung=/proc/sys/kernel/hung_task_timeout_secs
hung_was=$(cat "$hung" 2>/dev/null)
[ -n "$hung_was" ] && [ "$hung_was" -gt 0 ] && [ "$hung_was" -lt 600 ] && echo 600 >"$hung"
d0=$(__iwcm_now)
timeout -k 10 600 rdma link delete "$IWCM_RDEV" >"$IWCM_TMP/delete.log" 2>&1 &
del=$!
sleep 1
k0=$(__iwcm_now)
iwcm_stop_all
kill_time=$(__iwcm_elapsed "$k0")
iwcm_wait "$del" 600
drc=$?
del_time=$(__iwcm_elapsed "$d0")
after_kill=$(__iwcm_elapsed "$k0")
[ -n "$hung_was" ] && echo "$hung_was" >"$hung"
iwcm_show_log "$IWCM_TMP/delete.log" 5
iwcm_log "rdma link delete at $want rdma_cm ids: $del_time s in all, $after_kill s from the kill (the processes reaped in $kill_time s)"
iwcm_check "rdma link delete with $n connections up: status $drc in $del_time s (bound 600 s)" [ $drc -eq 0 ]
grep -h "while holding" "$IWCM_TMP/srv.log" "$IWCM_TMP/cli.log" | head -n 5 | while IFS= read -r l; do iwcm_log "$l"; done
iwcm_show_log "$IWCM_TMP/srv.log" 3
iwcm_show_log "$IWCM_TMP/cli.log" 3
iwcm_finish
