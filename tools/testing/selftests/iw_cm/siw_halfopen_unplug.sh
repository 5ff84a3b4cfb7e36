#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# A half-open connection outlives its listener and its device: a TCP peer
# (mpa_peer.py silent_hold_long) connects to a kernel ULP's rdma_cm
# listener (the sample ULP's target, port 4420) and sends no MPA request;
# the siw link is deleted (the ULP destroys its listener on
# DEVICE_REMOVAL) while siw's MPA timer for the passive endpoint (5 s:
# MPAREP_TIMEOUT, siw_cm_queue_work) still runs.  When it fires, siw frees
# the passive endpoint and, with it, the listener's endpoint, taking the
# device's lock: the device must still be there (tools/testing/siw/0007;
# without it KASAN reports a use-after-free of the siw device in
# siw_cep_put <- siw_cm_work_handler, as the soak did).  Every siw
# endpoint must be freed, no splat.  A kernel listener, not rping: the
# delete then waits for no process, and fits in the timer under TCG.
#
# Upstream siw (IWCM_SIW=stock) leaks such an endpoint and its listener
# (0006), so the window never opens: SKIP.
. "$(dirname "$0")/lib.sh"

PEER=$(dirname "$0")/mpa_peer.py
SAMPLE_KO=${SAMPLE_KO:-$IWCM_TOP/samples/rdma/rust_rdma_ulp/rust_rdma_ulp.ko}
PORT=4420
# siw's MPA timer for a passive endpoint awaiting the request.
MPA_TIMER=5
HOLD=30

[ "$IWCM_SIW" = stock ] &&
	iwcm_skip_all "upstream siw leaks the endpoint of a half-open connection (tools/testing/siw/0006): nothing is freed late"
[ -f "$SAMPLE_KO" ] || iwcm_skip_all "no sample ULP at $SAMPLE_KO (make modules)"
iwcm_init siw_halfopen_unplug 4 python3 ss insmod rmmod modinfo
iwcm_setup_or_bail
iwcm_siw_ep_accounting ||
	iwcm_log "siw's endpoint accounting is off: only the splat check sees a late free"
n_eps() { iwcm_siw_endpoints_left | grep -c .; }

for d in $(modinfo -F depends "$SAMPLE_KO" 2>/dev/null | tr , ' '); do
	modprobe "$d"
done
insmod "$SAMPLE_KO" role=target addr="$IWCM_ADDR" 2>"$IWCM_TMP/insmod.log"
irc=$?
iwcm_show_log "$IWCM_TMP/insmod.log"
listening() { ss -Hltn "sport = :$PORT" | grep -q .; }
iwcm_check "the sample ULP's target listens on $PORT (insmod exit $irc)" eval '[ $irc -eq 0 ] && iwcm_wait_for 20 listening'

# The silent peer; siw accepts it in its CM work (a new passive endpoint).
# From here on every step is short (the window is siw's 5 s timer; under
# TCG with KASAN a dmesg scan alone takes a second).
before=$(n_eps)
iwcm_spawn peer "$IWCM_TMP/peer.log" python3 "$PEER" client silent_hold_long "$IWCM_ADDR" $PORT --timeout $HOLD
conn=1
iwcm_wait_for 30 iwcm_log_has "$IWCM_TMP/peer.log" "connected to" || { conn=0; iwcm_log "the peer did not connect in 30 s"; }
# t0: the peer's own time of the connect (same clock): siw's timer starts
# at its accept, right after, and this script may see the line seconds
# later on a loaded VM.
t0=$(sed -n 's/.* connected to .* at \([0-9.]*\), sending.*/\1/p' "$IWCM_TMP/peer.log" | head -n1)
[ -n "$t0" ] || t0=$(__iwcm_now)
# siw has accepted it (siw_accept_newconn, in its CM work) once the
# listening socket's accept queue (ss's Recv-Q) is empty again: deleting
# the device before that would reset the connection instead.
accepted() { [ "$(ss -Hltn "sport = :$PORT" | awk '{ print $2; exit }')" = 0 ]; }
iwcm_wait_for 5 accepted || { conn=0; iwcm_log "siw has not accepted the connection after 5 s: $(ss -Hltn "sport = :$PORT")"; }

# The device goes (and, on its DEVICE_REMOVAL, the ULP's listener: its
# endpoint stays, held by the passive one), before the timer fires.
timeout 60 rdma link delete "$IWCM_RDEV"
drc=$?
gone=$(__iwcm_elapsed "$t0")
iwcm_log "rdma link delete $IWCM_RDEV (status $drc) done $gone s after the connect; siw endpoints since setup: $before before the connect, $(n_eps) now"
# The connect and the delete must work; the delete's finishing inside the
# timer is what makes the case test the late free: when a loaded VM is
# slower than that, the case says so as a SKIP instead of passing.
if [ "$conn" != 1 ] || [ "$drc" -ne 0 ]; then
	ktap_test_fail "peer connected and accepted, rdma link delete $IWCM_RDEV (status $drc)"
elif awk -v g="$gone" -v t="$MPA_TIMER" 'BEGIN { exit !(g < t) }'; then
	ktap_test_pass "peer connected and accepted, device gone before siw's MPA timer (${gone} s < ${MPA_TIMER} s after the connect)"
else
	ktap_test_skip "device gone ${gone} s after the connect, not within siw's ${MPA_TIMER} s MPA timer (a loaded VM): the late free was not tested"
fi

# The timer fires; siw frees the passive endpoint and the listener's.
if iwcm_siw_ep_accounting; then
	iwcm_wait_for $((MPA_TIMER + 15)) __iwcm_siw_endpoints_freed
	iwcm_check "the half-open connection's endpoint and its listener's freed after the device ($(n_eps) left, $(__iwcm_elapsed "$t0") s after the connect)" \
		__iwcm_siw_endpoints_freed
else
	sleep $((MPA_TIMER + 5))
	ktap_test_skip "siw's endpoint accounting is off: the late free is not observed"
fi
iwcm_wait "$peer" $((HOLD + 10)) >/dev/null
rmmod rust_rdma_ulp 2>"$IWCM_TMP/rmmod.log" || iwcm_show_log "$IWCM_TMP/rmmod.log"
iwcm_finish
