#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# A remote peer must not hold teardown hostage (issue 39).  Against each
# kernel listener of the lean kernel -- an nvmet-rdma target (4420, the
# peer's request carrying a valid NVMe/RDMA CM request) and a user
# listener (rping -s -P) -- peers on plain TCP (mpa_peer.py) that never
# let a connection be ESTABLISHED or used:
#   rtr_close    an MPA v2 request asking for an RTR frame, reset once the
#                reply is in (siw: CLOSE before ESTABLISHED; iwcm.c BUG()s)
#   rtr_fin      the same, half-closed (a FIN) once the reply is in (siw's
#                RTR data_ready and its close work race: ESTABLISHED may
#                come after CLOSE)
#   rtr_hold     the same, then silent: upstream siw keeps no timer for
#                the RTR frame, the connection is accepted and never
#                ESTABLISHED (iwcm.c's iw_cm_disconnect and destroy wait
#                for it for good: nvmet-rdma's device removal hung in D
#                state); left alone, the test siw closes it after 5 s
#                (rtr_timeout, tools/testing/siw/0012)
#   silent_hold_long   a TCP connection that never sends an MPA request
#   noread_hold  a well-formed request whose reply is never read
# Checks, per listener: the closing peers leave no connection behind; with
# the silent peers connected, `rdma link delete` (for rping: its server
# killed, then the delete) returns within 20 s; after the relink the listener serves a normal client (nvme
# connect; rping), and no rdma_cm id but the listener is left at its port.
# IWCM_QUICK=1 (make check) holds the three silent peers across one
# delete per listener; make check-all gives each its own delete.
#
# With ours the test runs with panic_on_warn=1: a WARN a peer can draw is a
# remote crash (Documentation/iw_cm.rst, "What a remote peer can do").
# With the C iw_cm the RTR peers are skipped with the reason (a reset or a
# FIN reaches cm_close_handler()'s BUG(); a silent one holds teardown for
# good); the other peers run.
#
# The ULP kernel's listeners nfsd (20049) and ksmbd (5445) meet the same
# peers in nfs_rdma.sh and smb_direct.sh (peer_lib.sh's peer_round); LIO's
# isert portal (3260) meets rtr_close and rtr_hold in iser.sh.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/peer_lib.sh"

NQN=iwcm-remote-peer-nqn
NVME_PORT=4420
RPING_PORT=7190
# An NVMe/RDMA CM request (struct nvme_rdma_cm_req, little endian): recfmt
# 0, qid 0 (admin), hrqsize 32, hsqsize 31, cntlid 0xffff, 22 reserved.
NVME_PDATA=0000000020001f00ffff$(printf '00%.0s' $(seq 22))
iwcm_init remote_peer $((2 + 2 * PEER_RESULTS)) rping nvme python3
iwcm_setup_or_bail

iwcm_panic_on_warn

# ---- nvmet-rdma ------------------------------------------------------------

nvme_ns_ready() { iwcm_nvme_bdev "$NQN" >/dev/null; }
# nvmet-rdma's listener is destroyed by its DEVICE_REMOVAL and listens
# again only on ADDR_CHANGE (nvmet_rdma_cm_handler()), so after the relink
# the port is enabled again as an administrator does: its subsystem link
# removed and made anew (nvmet_port_subsys_allow_link() enables the port).
nvmet_relisten() {
	local cfg=$IWCM_NVMET_CFG
	rm -f "$cfg/ports/1/subsystems/$NQN" &&
		ln -s "$cfg/subsystems/$NQN" "$cfg/ports/1/subsystems/$NQN" &&
		iwcm_wait_listen "$NVME_PORT" 20
}
nvme_client() {
	iwcm_wait_listen "$NVME_PORT" 30 || { iwcm_log "nvmet: not listening again"; return 1; }
	modprobe nvme-rdma || return 1
	nvme connect -t rdma -a "$IWCM_ADDR" -s "$NVME_PORT" -n "$NQN" -i 1 --ctrl-loss-tmo=0 \
		>"$IWCM_TMP/nvme-connect.log" 2>&1 && iwcm_wait_for 20 nvme_ns_ready
	local rc=$?
	[ $rc -eq 0 ] || iwcm_show_log "$IWCM_TMP/nvme-connect.log"
	nvme disconnect -n "$NQN" >/dev/null 2>&1
	iwcm_wait_for 20 bash -c '! ls /sys/class/nvme/ 2>/dev/null | grep -q .'
	return $rc
}

ok=1
linked=1
iwcm_nvmet_setup "$NQN" "$NVME_PORT" || ok=0
iwcm_check "nvmet-rdma target on $IWCM_ADDR:$NVME_PORT" [ $ok -eq 1 ]
if [ $ok -eq 1 ] && iwcm_wait_listen "$NVME_PORT" 20; then
	peer_round nvmet "$NVME_PORT" "" nvmet_relisten nvme_client "$NVME_PDATA" || linked=0
else
	for i in $(seq "$PEER_RESULTS"); do ktap_test_skip "nvmet: not run (no target)"; done
fi
nvme disconnect -n "$NQN" >/dev/null 2>&1
iwcm_nvmet_cleanup "$NQN"
modprobe -r nvme-rdma nvmet-rdma nvmet null_blk 2>/dev/null

# ---- a user listener (rping -s -P) --------------------------------------------

rping_srv=
rping_start() {
	# (Not a second one beside a server still running.)
	if [ -z "$rping_srv" ] || iwcm_exited "$rping_srv"; then
		iwcm_spawn rping_srv "$IWCM_TMP/rping-srv.log" rping -s -P -a "$IWCM_ADDR" -p "$RPING_PORT"
	fi
	iwcm_wait_listen "$RPING_PORT"
}
# siw has no disassociate_ucontext: the server must exit before the delete
# can end; its kill must be prompt (its cm_ids destroyed without waiting
# for the peers).
rping_stop() {
	kill -9 "$rping_srv" 2>/dev/null
	iwcm_wait "$rping_srv" "$PEER_BOUND" >/dev/null
	[ $? -ne 124 ] || { iwcm_log "rping -s -P still there $PEER_BOUND s after SIGKILL"; return 1; }
}
rping_client() {
	iwcm_listening "$RPING_PORT" || rping_start || return 1
	timeout -k 5 60 rping -c -a "$IWCM_ADDR" -p "$RPING_PORT" -C 3 -v >"$IWCM_TMP/rping-c.log" 2>&1 &&
		[ "$(grep -c '^ping data' "$IWCM_TMP/rping-c.log")" -eq 3 ] ||
		{ iwcm_show_log "$IWCM_TMP/rping-c.log"; iwcm_show_log "$IWCM_TMP/rping-srv.log"; return 1; }
}
if [ $linked -eq 1 ] && rping_start; then
	peer_round rping "$RPING_PORT" rping_stop rping_start rping_client ""
	rping_stop
else
	for i in $(seq "$PEER_RESULTS"); do ktap_test_skip "rping: not run ($([ $linked -eq 1 ] && echo "rping -s -P did not listen" || echo "the link is gone"))"; done
fi

iwcm_log "provider faults counted: $(cat /sys/kernel/debug/iw_cm/provider_faults 2>/dev/null || echo n/a)"
iwcm_finish
