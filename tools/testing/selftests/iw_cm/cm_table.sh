#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The cm_id table (debugfs iw_cm/cm_ids) read in a loop while cmtime sets
# up and tears down 500 connections, then while rping traffic runs and the
# siw link is deleted under it: no splat (the readers walk the table while
# cm_ids are created and freed at full speed), every read well formed (the
# count line, the header, 14 fields per row, unique numeric ids in
# increasing order, no more rows than the count line: a read lists no
# cm_id created after it), the connections seen in it, as many rows as the
# count while no cm_id comes or goes, and an empty table at the end.  The
# C iw_cm has no table: SKIP.
. "$(dirname "$0")/lib.sh"

TABLE=/sys/kernel/debug/iw_cm/cm_ids
HEADER="id role state dev local remote mapped_local mapped_remote queued delivering_ms event handler qp provider_refs"

iwcm_init cm_table 7 cmtime rping
[ "$IWCM_IMPL" = rust ] || iwcm_skip_all "the C iw_cm has no cm_id table"
iwcm_setup_or_bail

# reader OUT STOP: reads the table until STOP exists; one line per read in
# OUT: "OK rows count roles" or "BAD why".
reader() {
	local out=$1 stop=$2
	while [ ! -e "$stop" ]; do
		awk -v hdr="$HEADER" '
			NR == 1 { if ($0 !~ /^[0-9]+$/) bad = "count line \"" $0 "\""; count = $1; next }
			NR == 2 { if ($0 != hdr) bad = "header \"" $0 "\""; next }
			NF == 0 { bad = "empty line " NR; next }
			{
				rows++
				if (NF != 14) bad = "row with " NF " fields: " $0
				if ($1 !~ /^[0-9]+$/) bad = "id: " $0
				if (seen[$1]++) bad = "duplicate id " $1
				if (rows > 1 && $1 + 0 <= last) bad = "id " $1 " after " last
				last = $1 + 0
				role[$2] = 1
			}
			END {
				if (NR < 2) bad = "short read (" NR " lines)"
				# The seq_file iterator lists no cm_id created after the
				# count line; those destroyed meanwhile are missing.
				if (rows > count) bad = bad " rows " rows " vs count " count
				if (bad != "") { print "BAD " bad; exit }
				r = ""; for (k in role) r = r k ","
				print "OK " rows + 0 " " count " " r
			}' "$TABLE" >>"$out" 2>&1
	done
}

# check_reads OUT WHAT NEED_ROLES: the reads' verdict.
check_reads() {
	local out=$1 what=$2 roles=$3 n bad max r
	n=$(grep -c "^OK" "$out")
	bad=$(grep -m3 "^BAD" "$out")
	max=$(awk '$1 == "OK" && $2 > m { m = $2 } END { print m + 0 }' "$out")
	iwcm_log "$what: $n reads, most rows $max, $(grep -c '^BAD' "$out") bad"
	[ -n "$bad" ] && iwcm_log "$bad"
	local ok=1
	[ -z "$bad" ] && [ "$n" -gt 0 ] || ok=0
	for r in $roles; do
		grep -q "^OK .*[ ,]$r," "$out" || { iwcm_log "no read saw a $r"; ok=0; }
	done
	iwcm_check "table reads during $what well formed${roles:+, saw $roles}" [ $ok -eq 1 ]
}

start_readers() {
	rm -f "$IWCM_TMP/stop"
	reader "$1" "$IWCM_TMP/stop" & r1=$!
	reader "$1.2" "$IWCM_TMP/stop" & r2=$!
}
stop_readers() {
	touch "$IWCM_TMP/stop"
	wait "$r1" "$r2"
	cat "$1.2" >>"$1"
}

# 1. cmtime, 500 connections (200 under IWCM_QUICK=1).
iwcm_quick nconn 500 200 "cmtime connections:"
start_readers "$IWCM_TMP/cmtime.reads"
iwcm_spawn srv "$IWCM_TMP/cmtime-s.log" cmtime -b "$IWCM_ADDR"
iwcm_wait_listen 7471
timeout -k 5 240 cmtime -s "$IWCM_ADDR" -c "$nconn" >"$IWCM_TMP/cmtime-c.log" 2>&1 &
cm=$!
# A look at the table mid-run (once connections are in it), for the log.
many() { [ "$(sed -n 1p "$TABLE")" -ge 20 ] 2>/dev/null; }
iwcm_wait_for 60 many
head -n 8 "$TABLE" | while IFS= read -r l; do iwcm_log "table: $l"; done
wait "$cm"
rc=$?
stop_readers "$IWCM_TMP/cmtime.reads"
iwcm_stop_all
if [ $rc -eq 0 ] && grep -qE "^connect +:" "$IWCM_TMP/cmtime-c.log"; then
	ktap_test_pass "cmtime $nconn connections while the table is read (exit $rc)"
elif iwcm_siw_key_exhausted "$IWCM_TMP/cmtime-s.log" "$IWCM_TMP/cmtime-c.log"; then
	iwcm_show_log "$IWCM_TMP/cmtime-c.log" 10
	iwcm_fail_or_siw_xfail 0001 "cmtime $nconn connections while the table is read (exit $rc)" \
		"QP creation refused (the 145th mmap key is SIW_INVAL_UOBJ_KEY)"
else
	iwcm_show_log "$IWCM_TMP/cmtime-c.log" 10
	ktap_test_fail "cmtime $nconn connections while the table is read (exit $rc)"
fi
check_reads "$IWCM_TMP/cmtime.reads" "cmtime" "listener active passive"

# 2. rping traffic, then the unplug under it.
start_readers "$IWCM_TMP/unplug.reads"
iwcm_spawn srv "$IWCM_TMP/rping-s.log" rping -s -P -a "$IWCM_ADDR" -p 7610
iwcm_wait_listen 7610
iwcm_spawn cli "$IWCM_TMP/rping-c.log" rping -c -v -a "$IWCM_ADDR" -p 7610 -C 1000000
iwcm_wait_for 20 grep -q . "$IWCM_TMP/rping-c.log" >/dev/null
sleep 2
# rping's three cm_ids (listener, child, client) live on and nothing
# else comes or goes: a read lists every one of them.
steady() {
	awk 'NR == 1 { c = $1 } NR > 2 { r++ } END { exit !(NR > 2 && r == c) }' "$TABLE"
}
iwcm_check "table read while no cm_id comes or goes: rows $(($(wc -l <"$TABLE") - 2)), count $(sed -n 1p "$TABLE")" steady
# As the soak does: siw has no disassociate_ucontext, so the delete waits
# for the rping processes to go; they are killed just after it starts.
timeout 60 rdma link delete "$IWCM_RDEV" &
del=$!
sleep 0.3
iwcm_stop_all
wait "$del"
drc=$?
sleep 1
stop_readers "$IWCM_TMP/unplug.reads"
iwcm_check "rdma link delete under rping while the table is read (status $drc)" [ $drc -eq 0 ]
check_reads "$IWCM_TMP/unplug.reads" "the unplug" "listener"

# 3. Nothing left: the count 0 and no row.
left() { [ "$(sed -n 1p "$TABLE")" = 0 ] && [ "$(wc -l <"$TABLE")" -eq 2 ]; }
iwcm_wait_for 10 left
iwcm_check "table empty at the end (count $(sed -n 1p "$TABLE"), $(( $(wc -l <"$TABLE") - 2 )) rows)" left
iwcm_finish
