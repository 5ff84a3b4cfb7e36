#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The stuck-handler report (Documentation/iw_cm.rst, "Observing cm_ids"):
# the sample ULP's target sleeps STALL_MS in the CONNECT_REQUEST handler of
# its admin queue (module parameters stall_qid=0 stall_ms=...), with the
# Rust iw_cm's stuck_handler_ms set to THRESHOLD_MS.  Within THRESHOLD_MS +
# 5 s the kernel log must name the stalled cm_id, its handler and the
# event, and the table (debugfs iw_cm/cm_ids) must show its delivery
# running; meanwhile an rping pair on another listener connects and pings
# (the stalled handler holds up nobody else); when the handler returns,
# the report says so with the duration.  The C iw_cm has neither report
# nor table: SKIP.
. "$(dirname "$0")/lib.sh"

# Well below the sample host's 10 s connect timeout and siw's 10 s MPA
# reply timer, well above the threshold + the rping made during the stall.
STALL_MS=${IWCM_STUCK_STALL_MS:-8500}
THRESHOLD_MS=${IWCM_STUCK_THRESHOLD_MS:-2000}
SAMPLE_KO=${SAMPLE_KO:-$IWCM_TOP/samples/rdma/rust_rdma_ulp/rust_rdma_ulp.ko}
PARAM=/sys/module/iw_cm/parameters/stuck_handler_ms
TABLE=/sys/kernel/debug/iw_cm/cm_ids

iwcm_init stuck_handler 8 rping insmod rmmod modinfo
[ "$IWCM_IMPL" = rust ] || iwcm_skip_all "the C iw_cm has no stuck-handler report and no cm_id table"
[ -f "$SAMPLE_KO" ] || iwcm_skip_all "no sample ULP at $SAMPLE_KO (make modules)"
iwcm_setup_or_bail

old=$(cat "$PARAM")
restore() { echo "$old" > "$PARAM"; }
trap restore EXIT
echo "$THRESHOLD_MS" > "$PARAM"
iwcm_check "stuck_handler_ms set to $THRESHOLD_MS" [ "$(cat "$PARAM")" = "$THRESHOLD_MS" ]

# Another listener, up before the stall, for the connection made during it.
iwcm_spawn srv "$IWCM_TMP/rping-s.log" rping -s -a "$IWCM_ADDR" -p 7600 -C 2
iwcm_wait_listen 7600

for d in $(modinfo -F depends "$SAMPLE_KO" 2>/dev/null | tr , ' '); do
	modprobe "$d"
done
# Another listener's connection, started the moment the stall begins (a
# watcher on /dev/kmsg, ready before the insmod: polling the log from the
# shell takes seconds on a loaded TCG guest, and the rping needs most of
# the stall to start, connect and ping), so that it has the whole stall:
# it must connect and ping before the stalled handler returns.  rping's
# output is line buffered (stdbuf) and read by kmsg_then.py itself, which
# writes a line to the kernel log the moment the second ping is printed
# (a shell polling the output was seconds late under TCG: CI once saw the
# note a second after the handler's return); the check wants that line
# before the "returned from ConnectRequest" line (one log, one order;
# rping's own exit, its disconnect and teardown may come after the
# handler returned on a slow VM: that is not what this checks).
PINGED="iwcm-selftest: stuck_handler: rping on another listener pinged twice"
( python3 "$(dirname "$0")/kmsg_then.py" "$IWCM_TMP/kmsg.ready" "CONNECT_REQUEST handler stalls" 40 \
	--note 2 "ping data" "$PINGED" "$IWCM_TMP/rping-c.log" \
	stdbuf -oL rping -c -a "$IWCM_ADDR" -p 7600 -C 2 -v >"$IWCM_TMP/kmsg_then.log" 2>&1
  echo $? >"$IWCM_TMP/rping-c.rc" ) &
cli=$!
IWCM_PIDS+=("$cli")
iwcm_wait_for 30 test -e "$IWCM_TMP/kmsg.ready" || iwcm_log "kmsg_then.py not ready in 30 s"
t0=$(__iwcm_now)
# insmod returns once the host is connected, after the stall.
iwcm_spawn ins "$IWCM_TMP/insmod.log" insmod "$SAMPLE_KO" role=both addr="$IWCM_ADDR" \
	nr_io_queues=2 stall_qid=0 stall_ms="$STALL_MS"

# The report, within the threshold + 5 s of the stall's start.
stall_line() { iwcm_dmesg_since_setup | grep -m1 "target: queue 0 CONNECT_REQUEST handler stalls"; }
report_line() { iwcm_dmesg_since_setup | grep -m1 -E "iw_cm: cm_id [0-9]+ \(siw0, ConnRecv\): handler [^ ]+ .*has been handling ConnectRequest for [0-9]+ ms"; }
iwcm_wait_for 10 stall_line >/dev/null
ts=$(__iwcm_now)
# The table, sampled from the stall's start until the handler returns: a
# loaded VM may take seconds between the report and a later single read,
# by which time the delivery is over (CI saw the row already Established).
samples=$IWCM_TMP/table.samples
( end=$((SECONDS + 40))
  while [ "$SECONDS" -lt "$end" ] && [ ! -e "$IWCM_TMP/sampler.stop" ]; do
	awk 'NR > 2 && $2 == "passive" && $3 == "ConnRecv" && $11 == "ConnectRequest"' \
		"$TABLE" >>"$samples" 2>/dev/null
	sleep 0.2
  done ) &
sampler=$!
IWCM_PIDS+=("$sampler")
if iwcm_wait_for $((THRESHOLD_MS / 1000 + 5)) report_line >/dev/null; then
	r=$(report_line)
	iwcm_log "after $(__iwcm_elapsed "$ts") s: ${r#*] }"
	ktap_test_pass "report names the stalled cm_id, its handler and CONNECT_REQUEST within $((THRESHOLD_MS / 1000 + 5)) s"
	sid=$(sed -n 's/.*iw_cm: cm_id \([0-9]*\) .*/\1/p' <<<"$r")
else
	dmesg | tail -n 20 | while IFS= read -r l; do iwcm_log "dmesg: $l"; done
	ktap_test_fail "report names the stalled cm_id, its handler and CONNECT_REQUEST within $((THRESHOLD_MS / 1000 + 5)) s"
	sid=
fi

# The table showed that cm_id's delivery running for at least the
# threshold: its longest-running sample (the sampler keeps only passive
# ConnRecv rows delivering ConnectRequest).
iwcm_wait_for $((STALL_MS / 1000 + 10)) \
	eval 'iwcm_dmesg_since_setup | grep -q "returned from ConnectRequest"' || true
touch "$IWCM_TMP/sampler.stop"
wait "$sampler" 2>/dev/null
row=$(awk -v id="${sid:-x}" '$1 == id && $10 + 0 >= best { best = $10 + 0; r = $0 } END { print r }' "$samples" 2>/dev/null)
iwcm_log "table row (longest of $(cat "$samples" 2>/dev/null | grep -c .) samples): $row"
ms=$(awk '{ print $10 }' <<<"$row")
iwcm_check "table: cm_id ${sid:-?} passive, ConnRecv, delivering ConnectRequest for >= $THRESHOLD_MS ms" \
	eval '[ -n "$row" ] && [ "${ms:-0}" -ge "$THRESHOLD_MS" ]'

# Meanwhile another listener's connection went on: both pings logged
# before the stalled handler's return.
wait "$cli"
rc=$(cat "$IWCM_TMP/rping-c.rc" 2>/dev/null)
order=$(iwcm_dmesg_since_setup | awk -v p="$PINGED" '
	index($0, p) && !pi { pi = NR }
	/returned from ConnectRequest/ && !ri { ri = NR }
	END { print (pi ? pi : "none") " " (ri ? ri : "none") }')
read -r pi ri <<<"$order"
iwcm_log "rping exit $rc, $(grep -c '^ping data' "$IWCM_TMP/rping-c.log") pings; kernel log lines since set-up: second ping noted at $pi, stalled handler returned at $ri"
iwcm_check "rping on another listener pings while the handler is stalled" \
	eval '[ "$rc" = 0 ] && [ "$pi" != none ] && [ "$ri" != none ] && [ "$pi" -lt "$ri" ]'

iwcm_wait "$ins" 30 >/dev/null
irc=$?
iwcm_show_log "$IWCM_TMP/insmod.log"
iwcm_check "sample connected after the stall (insmod exit $irc)" [ "$irc" -eq 0 ]
done_line=$(iwcm_dmesg_since_setup | grep -m1 -E "iw_cm: cm_id ${sid:-x} .*returned from ConnectRequest after [0-9]+ ms")
iwcm_log "${done_line#*] }"
dms=$(sed -n 's/.* after \([0-9]*\) ms$/\1/p' <<<"$done_line")
iwcm_check "report says when the handler returned (>= $STALL_MS ms)" [ "${dms:-0}" -ge "$STALL_MS" ]
iwcm_log "stalled for $(__iwcm_elapsed "$t0") s in all"

rmmod rust_rdma_ulp 2>"$IWCM_TMP/rmmod.log"
iwcm_check "rmmod rust_rdma_ulp" [ $? -eq 0 ]
echo "$old" > "$PARAM"
iwcm_finish
