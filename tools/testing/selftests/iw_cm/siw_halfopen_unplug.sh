#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# A half-open connection outlives its listener and its device: a TCP peer
# (mpa_peer.py silent_hold_long) connects to an rdma_cm listener (rping -s
# -P) and sends no MPA request; the listener is killed and the siw link
# deleted while siw's MPA request timer (MPAREQ_TIMEOUT, 10 s) still runs.
# When the timer fires, siw frees the passive endpoint and, with it, the
# listener's endpoint, under the device's lock: the device must still be
# there (tools/testing/siw/0007; without it KASAN reports a use-after-free
# of the siw device in siw_cep_put <- siw_cm_work_handler, the soak's
# report).  Every siw endpoint must be freed, no splat.
#
# Upstream siw (IWCM_SIW=stock) leaks such an endpoint and its listener
# (0006), so the window never opens: SKIP.
. "$(dirname "$0")/lib.sh"

PEER=$(dirname "$0")/mpa_peer.py
PORT=7730
# siw's MPA request timer (drivers/infiniband/sw/siw/siw_cm.h).
MPAREQ_TIMEOUT=10
HOLD=30

[ "$IWCM_SIW" = stock ] &&
	iwcm_skip_all "upstream siw leaks the endpoint of a half-open connection (tools/testing/siw/0006): nothing is freed late"
iwcm_init siw_halfopen_unplug 4 rping python3 ss
iwcm_setup_or_bail
iwcm_siw_ep_accounting ||
	iwcm_log "siw's endpoint accounting is off: only the splat check sees a late free"
n_eps() { iwcm_siw_endpoints_left | grep -c .; }

iwcm_spawn srv "$IWCM_TMP/rping-s.log" rping -s -P -a "$IWCM_ADDR" -p $PORT
if iwcm_wait_listen $PORT; then
	ktap_test_pass "rping -s -P listens on $PORT"
else
	iwcm_show_log "$IWCM_TMP/rping-s.log"
	ktap_test_fail "rping -s -P listens on $PORT"
fi

# The silent peer; siw accepts it in its CM work (a new passive endpoint).
# From here on every step is short (the window is siw's 10 s timer; under
# TCG with KASAN a dmesg scan alone takes a second): no polling.
before=$(n_eps)
iwcm_spawn peer "$IWCM_TMP/peer.log" python3 "$PEER" client silent_hold_long "$IWCM_ADDR" $PORT --timeout $HOLD
iwcm_wait_for 10 iwcm_log_has "$IWCM_TMP/peer.log" "connected to" || iwcm_log "the peer did not connect"
t0=$(__iwcm_now)
# siw has accepted it (siw_accept_newconn, in its CM work) once the
# listening socket's accept queue (ss's Recv-Q) is empty again: killing
# the listener before that would reset the connection instead.
accepted() { [ "$(ss -Hltn "sport = :$PORT" | awk '{ print $2; exit }')" = 0 ]; }
iwcm_wait_for 5 accepted || iwcm_log "siw has not accepted the connection after 5 s: $(ss -Hltn "sport = :$PORT")"

# The listener goes (its endpoint stays, held by the passive one), then
# the device.  Both before the MPA request timer fires.
kill -9 "$srv" 2>/dev/null
iwcm_wait "$srv" 20 >/dev/null
killed=$(__iwcm_elapsed "$t0")
timeout 60 rdma link delete "$IWCM_RDEV"
drc=$?
gone=$(__iwcm_elapsed "$t0")
iwcm_log "listener killed $killed s, rdma link delete $IWCM_RDEV (status $drc) done $gone s after the connect; siw endpoints since setup: $before before the connect, $(n_eps) now"
iwcm_check "listener and device gone before the MPA request timer (${gone} s < ${MPAREQ_TIMEOUT} s after the connect)" \
	eval '[ "$drc" -eq 0 ] && awk -v g="$gone" -v t="$MPAREQ_TIMEOUT" "BEGIN { exit !(g < t) }"'

# The timer fires; siw frees the passive endpoint and the listener's.
if iwcm_siw_ep_accounting; then
	iwcm_wait_for $((MPAREQ_TIMEOUT + 15)) __iwcm_siw_endpoints_freed
	iwcm_check "the half-open connection's endpoint and its listener's freed after the device ($(n_eps) left, $(__iwcm_elapsed "$t0") s after the connect)" \
		__iwcm_siw_endpoints_freed
else
	sleep $((MPAREQ_TIMEOUT + 5))
	ktap_test_skip "siw's endpoint accounting is off: the late free is not observed"
fi
iwcm_wait "$peer" $((HOLD + 10)) >/dev/null
iwcm_finish
