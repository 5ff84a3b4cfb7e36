#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# hostile_peer.sh's cases against the unpatched upstream siw
# (/lib/modules/.../siw.ko), with the Rust iw_cm only: the first server
# case, a garbage MPA reply, is issue 10's input that oopses the C iw_cm
# through upstream siw (CONNECT_REPLY with NULL + 4 private data), so with
# the C iw_cm the whole test is SKIP.  Two server cases crash upstream siw
# itself (a NULL or short MPA v2 control read in siw_proc_mpareply, not
# iw_cm: hostile_lib.sh's SIW_CRASHERS), one more it misreads without harm
# (SIW_MISREADS: it reads past the reply); those run only with the test siw.
# The read-close case (an RDMA READ outstanding at a graceful close) is an
# XFAIL naming tools/testing/siw/0009: upstream siw never completes it.
# IWCM_QUICK=1 (make check) keeps issue 10's inputs (hostile_lib.sh).
#
# A boot of its own, and not in the default collection: upstream siw takes
# sk_callback_lock with softirqs enabled (fixed in the test siw by 0002),
# and lockdep, once it has seen that, reports the next listener closed with
# unaccepted children (inet_csk_listen_stop -> inet_child_forget) in
# whatever test comes later, with any siw, and is off for the rest of the
# boot.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hostile_lib.sh"

[ "$IWCM_IMPL" = rust ] ||
	iwcm_skip_all "hostile_peer_upstream: upstream siw with the C iw_cm: the malformed MPA reply (garbage) oopses the kernel in cm_event_handler (NULL + 4 private data), so the C iw_cm runs hostile peers with the test siw only (hostile_peer.sh)"

# setup + server cases + rdma_client + read-close + listener cases + well-behaved client
iwcm_init hostile_peer_upstream $((1 + n_up_srv + 1 + 1 + n_up_cli + 1)) rping rdma_client python3

restore_test_siw() {
	# Whatever runs next expects the test siw: put it back.
	iwcm_teardown >/dev/null 2>&1
	rmmod siw 2>/dev/null
	IWCM_SIW=patched load_siw >/dev/null 2>&1
}
trap restore_test_siw EXIT
# The runner loaded the test siw: swap it for upstream's.
if grep -q "^siw " /proc/modules && ! rmmod siw; then
	iwcm_log "cannot unload the test siw"
fi
IWCM_SIW=stock
iwcm_setup_or_bail
iwcm_log "upstream siw: $(modinfo -F filename siw)"
[ "${IWCM_QUICK:-0}" != 1 ] ||
	iwcm_log "IWCM_QUICK=1: upstream siw runs $n_up_srv server and $n_up_cli client cases of $((n_srv - $(wc -w <<<"$SIW_CRASHERS $SIW_MISREADS"))) and $n_cli (make check-all runs all)"
for c in $UP_SERVER_CASES; do
	client_case "$c" upstream
done
rdma_client_case upstream
read_close_case upstream
listener_cases upstream "$UP_CLIENT_CASES"
iwcm_finish
