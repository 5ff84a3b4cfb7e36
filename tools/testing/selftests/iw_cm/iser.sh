#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# iSER over siw, target and initiator in one guest: LIO's isert target (a
# fileio LUN on tmpfs, configured through configfs) and open-iscsi with the
# ib_iser initiator, with the iw_cm under test: login over iSER, fio with
# crc32c verify on the LUN, the rdma_cm ids and (ours) the cm_id table show
# the connection, `rdma link delete` under fio (bounded: isert's
# DEVICE_REMOVAL handler waits for its connection to go down and returns
# 1; ib_iser destroys its QP in its handler), `rdma link add` again,
# recovery shown by an 8 MB direct write and read-back, link flaps under
# fio, logout, then peers that never let a connection get established
# (below: one resets, one stays silent across `rdma link delete`), no id
# left.
#
# isert's portal listener is destroyed by DEVICE_REMOVAL (its handler
# returns -1 and nothing listens again but on ADDR_CHANGE), so after the
# relink the portal's iSER is switched off and on again (what an
# administrator does); iscsid's session recovery then logs in again.
#
# LIO opens a TCP listener at a portal's address before it adds iSER at
# the same address; with siw (iWARP over the host's own TCP) the iSER
# listener needs that very TCP port, so the portal is created from a
# network namespace of its own (a dummy netdev with the same address),
# where LIO's TCP listener lives, and iSER is added from the initial one,
# where siw runs.  targetcli is not used: it cannot run without D-Bus in
# the test guest.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ulp_lib.sh"

PORT=3260
IQN=iqn.2026-12.org.iwcm:selftest
INIT_IQN=iqn.2026-12.org.iwcm:initiator
NS=iwcm-iscsi-tcp
T=/sys/kernel/config/target
iwcm_init iser 17 iscsiadm iscsid nsenter setsid fio
ulp_require_modules "iSER" target_core_mod target_core_file iscsi_target_mod ib_isert ib_iser sd_mod
ulp_quick
iwcm_setup_or_bail

state=$IWCM_TMP/iser
tpg=$T/iscsi/$IQN/tpgt_1
np=$tpg/np/$IWCM_ADDR:$PORT
mkdir -p "$state/backing" "$state/etc-iscsi"

lio_start() {
	modprobe -a target_core_mod target_core_file iscsi_target_mod ib_isert || return 1
	mount -t tmpfs -o size=160M tmpfs "$state/backing" || return 1
	mkdir -p "$T/core/fileio_0/iser0" || return 1
	echo "fd_dev_name=$state/backing/disk.img,fd_dev_size=$((128 << 20))" \
		> "$T/core/fileio_0/iser0/control" || return 1
	echo 1 > "$T/core/fileio_0/iser0/enable" || return 1
	mkdir -p "$tpg/lun/lun_0" || return 1
	ln -s "$T/core/fileio_0/iser0" "$tpg/lun/lun_0/iser0" || return 1
	echo 0 > "$tpg/attrib/authentication"
	echo 1 > "$tpg/attrib/generate_node_acls"
	echo 0 > "$tpg/attrib/demo_mode_write_protect"
	echo 1 > "$tpg/attrib/cache_dynamic_acls"
	ip netns add "$NS" || return 1
	ip -n "$NS" link set lo up
	ip -n "$NS" link add d0 type dummy || return 1
	ip -n "$NS" addr add "$IWCM_ADDR/$IWCM_PREFIX" dev d0
	ip -n "$NS" link set d0 up
	nsenter --net="/run/netns/$NS" mkdir "$np" || return 1
	echo 1 > "$np/iser" || return 1
	echo 1 > "$tpg/enable" || return 1
	iwcm_wait_listen "$PORT" 20
}

lio_stop() {
	echo 0 > "$tpg/enable" 2>/dev/null
	[ -d "$np" ] && { echo 0 > "$np/iser"; rmdir "$np"; }
	rm -f "$tpg/lun/lun_0/iser0"
	rmdir "$tpg/lun/lun_0" "$tpg" "$T/iscsi/$IQN" 2>/dev/null
	rmdir "$T/core/fileio_0/iser0" "$T/core/fileio_0" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	umount "$state/backing" 2>/dev/null
}

initiator_start() {
	modprobe -a ib_iser sd_mod || return 1
	# open-iscsi's node records and lock: writable places of their own.
	cp -a /etc/iscsi/. "$state/etc-iscsi/"
	mount -t tmpfs tmpfs /etc/iscsi || return 1
	cp -a "$state/etc-iscsi/." /etc/iscsi/
	echo "InitiatorName=$INIT_IQN" > /etc/iscsi/initiatorname.iscsi
	[ -d /var/lib/iscsi ] && mount -t tmpfs tmpfs /var/lib/iscsi
	mkdir -p /run/lock/iscsi
	# A session of its own: iscsid signals its whole process group when
	# it is stopped, which here would be this test.
	iwcm_spawn iscsid_pid "$IWCM_TMP/iscsid.log" setsid iscsid -f
	iwcm_wait_for 10 test -S /run/iscsid.sock -o -e /run/iscsid.pid
	iscsiadm -m node -o new -T "$IQN" -p "$IWCM_ADDR:$PORT" -I iser >"$IWCM_TMP/node.log" 2>&1 || {
		iwcm_show_log "$IWCM_TMP/node.log"; return 1; }
	# A lost connection is noticed within 10 s (NOP-Out every 5 s, 5 s to
	# answer) and I/O fails after 30 s without a session (default 120).
	local kv k v
	for kv in node.conn[0].timeo.noop_out_interval=5 node.conn[0].timeo.noop_out_timeout=5 \
			node.session.timeo.replacement_timeout=30; do
		k=${kv%%=*} v=${kv#*=}
		iscsiadm -m node -T "$IQN" -p "$IWCM_ADDR:$PORT" -I iser -o update -n "$k" -v "$v" \
			>>"$IWCM_TMP/node.log" 2>&1 || { iwcm_show_log "$IWCM_TMP/node.log"; return 1; }
	done
}

# The portal's listener went with the device (isert's DEVICE_REMOVAL
# handler): iSER off and on again, as an administrator does once the link
# is back, so that iscsid's session recovery can log in again.
portal_relisten() {
	if echo 0 > "$np/iser" && echo 1 > "$np/iser" && iwcm_wait_listen "$PORT" 20; then
		iwcm_log "the iSER portal listens again"
	else
		iwcm_log "the iSER portal did not listen again"
	fi
}

# ISERT_DELAYS="REMOVAL_MS RELEASE_MS" (tools/testing/isert/
# repro-removal-race.sh, with an ib_isert.ko of build.sh --delay): the
# test-only sleeps that widen isert's DEVICE_REMOVAL window, on for the
# unplug and off again once the link is back.
isert_delays() {
	local p=/sys/module/ib_isert/parameters
	echo "$1" > $p/removal_delay_ms && echo "$2" > $p/release_delay_ms
}
portal_relisten_undelayed() {
	isert_delays 0 0
	portal_relisten
}
# isert_delays_for_unplug: the delays on if asked for; sets relink_hook,
# the function ulp_unplug_relink calls once the link is back.
relink_hook=portal_relisten
isert_delays_for_unplug() {
	[ -n "${ISERT_DELAYS:-}" ] || return 0
	# shellcheck disable=SC2086
	if isert_delays $ISERT_DELAYS; then
		iwcm_log "isert delays for the unplug (removal, release): $ISERT_DELAYS ms"
		relink_hook=portal_relisten_undelayed
	else
		iwcm_log "cannot set isert's delays (ISERT_DELAYS=$ISERT_DELAYS): not a build.sh --delay ib_isert.ko?"
	fi
}

# The LUN's block device (sdX) of the iSER session.
lun_dev() {
	local b
	for b in /sys/class/iscsi_session/session*/device/target*/*/block/*; do
		[ -e "$b" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}
lun_ready() { local d; d=$(lun_dev) && [ -b "$d" ]; }

# rtr_peers: peers that ask for an RTR frame (MPA v2 peer-to-peer) and never
# send one (mpa_peer.py client rtr_close, rtr_hold).  siw accepts each for
# isert and waits for that frame with no timer, so isert's connection is
# never ESTABLISHED: ISER_CONN_INIT, on no list that iSCSI tears down.  A
# peer that resets must not leave it behind (its cm_id goes, not only at
# the portal's removal), and with a peer that stays silent `rdma link
# delete` must still return: isert's DEVICE_REMOVAL handler waited for
# that connection for good (tools/testing/isert/0004).  Two KTAP results;
# the link is added again after the delete (if it went).
# IWCM_ISER_RTR_FORCE=1 runs them where they are skipped, to show what
# happens there.
rtr_peers() {
	local what_close="a peer that asked for an RTR frame and reset the connection leaves no iSER connection behind"
	local what="rdma link delete with an iSER connection whose peer asked for an RTR frame and sent none"
	local peer_pid log=$IWCM_TMP/rtr-peer.log clog=$IWCM_TMP/rtr-close.log secs rc why=
	if [ "$IWCM_IMPL" != rust ]; then
		# siw reports the close (the peer's reset, or the QP's
		# destruction in the release) as CLOSE before ESTABLISHED, and iwcm.c's
		# cm_close_handler() BUG()s in CONN_RECV.
		why="not with the C iw_cm (BUG() in cm_close_handler() on the CLOSE siw sends before ESTABLISHED: Documentation/provider_contracts.rst, M10)"
	elif [ "${IWCM_ISERT:-stock}" != patched ] || [ -n "${ISERT_DELAYS:-}" ]; then
		why="not with an isert without tools/testing/isert/0004 (the kernel's, IWCM_ISERT not patched, or the --delay builds: the connection stays, and its DEVICE_REMOVAL handler waits for it for good)"
	fi
	if [ -n "$why" ] && [ "${IWCM_ISER_RTR_FORCE:-0}" != 1 ]; then
		ktap_test_skip "$what_close: $why"
		ktap_test_skip "$what: $why"
		return
	fi
	iwcm_listening "$PORT" || portal_relisten
	timeout -k 5 40 python3 "$(dirname "$0")/mpa_peer.py" client rtr_close \
		"$IWCM_ADDR" "$PORT" --timeout 20 >"$clog" 2>&1
	if ! grep -q "RTR frame it asked for is never sent" "$clog"; then
		iwcm_show_log "$clog"
		ktap_test_fail "$what_close: the portal did not accept the peer's request"
	elif iwcm_wait_for 15 iser_accepted_ids_gone; then
		ktap_test_pass "$what_close"
	else
		iwcm_dev_cm_ids | grep -E ":$PORT " | while IFS= read -r l; do iwcm_log "left: $l"; done
		ktap_test_fail "$what_close (its cm_id still there 15 s later)"
	fi
	iwcm_spawn peer_pid "$log" python3 "$(dirname "$0")/mpa_peer.py" client rtr_hold \
		"$IWCM_ADDR" "$PORT" --timeout 120
	if ! iwcm_wait_for 20 grep -q "RTR frame it asked for is never sent" "$log"; then
		iwcm_show_log "$log"
		kill "$peer_pid" 2>/dev/null
		ktap_test_fail "$what: the portal did not accept the peer's request"
		return
	fi
	iwcm_dev_cm_ids | grep -E ":$PORT " | while IFS= read -r l; do iwcm_log "with the peer: $l"; done
	ulp_timed secs 60 rdma link delete "$IWCM_RDEV"
	rc=$?
	ulp_note rtr_peer_delete_s "$secs"
	[ $rc -eq 0 ] || iwcm_diag "rdma link delete with the RTR peer: status $rc"
	iwcm_check "$what returns ($secs s, status $rc)" [ $rc -eq 0 ]
	iwcm_wait "$peer_pid" 10 >/dev/null || kill "$peer_pid" 2>/dev/null
	iwcm_show_log "$log"
	# (Not after a delete left hanging: the add would wait behind it.)
	if [ $rc -eq 0 ]; then
		__ulp_relink || iwcm_log "rdma link add after the RTR peer's case failed"
	fi
}
# No rdma_cm id of the portal's port but its listener.
iser_accepted_ids_gone() {
	! iwcm_dev_cm_ids | grep -E "src-addr +[0-9.]+:$PORT " | grep -qvE " state +LISTEN "
}

ok=1
lio_ok=1
if lio_start; then
	ktap_test_pass "LIO target: fileio LUN, iSER portal on $IWCM_ADDR:$PORT"
else
	ktap_test_fail "LIO target: fileio LUN, iSER portal on $IWCM_ADDR:$PORT"
	ok=0
	lio_ok=0
fi
if [ $ok -eq 1 ] && initiator_start &&
		ulp_timed secs 120 iscsiadm -m node -T "$IQN" -p "$IWCM_ADDR:$PORT" -I iser --login \
		>"$IWCM_TMP/login.log" 2>&1 && iwcm_wait_for 30 lun_ready; then
	ulp_note login_s "$secs"
	dev=$(lun_dev)
	iwcm_log "logged in: $dev"
	ktap_test_pass "iscsiadm --login over iSER ($secs s), LUN at $dev"
else
	iwcm_show_log "$IWCM_TMP/login.log"
	iwcm_show_log "$IWCM_TMP/iscsid.log"
	ktap_test_fail "iscsiadm --login over iSER"
	ok=0
fi

if [ $ok -eq 1 ]; then
	iwcm_check "the iSER connection in the rdma_cm ids$([ "$IWCM_IMPL" = rust ] && echo " and the cm_id table")" \
		ulp_ids_shown "$PORT"
	ulp_fio_verified "$dev" 5 --allow_file_create=0
	# (Kept at 32 MB: fio's own I/O is at 0-16 MB, the read-back's at 64.)
	ulp_keep_write "$dev" --allow_file_create=0 --offset=32M
	isert_delays_for_unplug
	ULP_ON_RELINK=$relink_hook ulp_unplug_relink "$dev" --allow_file_create=0
	iwcm_wait_for 60 lun_ready
	dev=$(lun_dev)
	ulp_recovered "$dev" "iSER recovers after the relink"
	ulp_kept_verified "iSER" "$dev" --allow_file_create=0 --offset=32M
	ulp_flaps "$dev" "$dev" "iSER" --allow_file_create=0
else
	for i in $(seq 9); do ktap_test_skip "not run: no iSER session"; done
fi

if [ $ok -eq 1 ]; then
	ulp_timed secs 60 iscsiadm -m node -T "$IQN" -p "$IWCM_ADDR:$PORT" -I iser --logout \
		>"$IWCM_TMP/logout.log" 2>&1
	rc=$?
	ulp_note logout_s "$secs"
	[ $rc -eq 0 ] || iwcm_show_log "$IWCM_TMP/logout.log"
	iwcm_check "iscsiadm --logout ($secs s, status $rc)" [ $rc -eq 0 ]
else
	ktap_test_skip "logout: not logged in"
fi
# The target closes its session after the logout in a thread of its own
# (iscsi_ttx); a portal group removed before that is read after it is
# freed (iscsit_close_session: Documentation/known_issues.rst).  So the
# target is taken down only once its session is gone.
target_sessions_gone() { ! grep -q . "$tpg/dynamic_sessions" 2>/dev/null; }
t0=$(__iwcm_now)
if iwcm_wait_for 30 target_sessions_gone; then
	ulp_note target_session_gone_s "$(__iwcm_elapsed "$t0")"
	ktap_test_pass "the target's session gone after the logout"
	if [ $lio_ok -eq 1 ]; then
		rtr_peers
	else
		ktap_test_skip "a peer that asked for an RTR frame and reset: not run, no LIO target"
		ktap_test_skip "rdma link delete with a peer that asked for an RTR frame: not run, no LIO target"
	fi
	lio_stop
else
	iwcm_log "left: target session $(tr '\n' ' ' < "$tpg/dynamic_sessions"); the LIO target stays configured"
	ktap_test_fail "the target's session gone after the logout (still there 30 s later)"
	ktap_test_skip "a peer that asked for an RTR frame and reset: not run, the target still has a session"
	ktap_test_skip "rdma link delete with a peer that asked for an RTR frame: not run, the target still has a session"
fi
# (Never `kill 0`: that is this test's whole process group.)
[ -n "${iscsid_pid:-}" ] && kill "$iscsid_pid" 2>/dev/null
umount /var/lib/iscsi 2>/dev/null
umount /etc/iscsi 2>/dev/null
iser_ids_gone() { ! iwcm_dev_cm_ids | grep -qE "(src|dst)-addr +[0-9.]+:$PORT "; }
if iwcm_wait_for 60 iser_ids_gone; then
	ktap_test_pass "target stopped, no rdma_cm id with port $PORT left"
else
	iwcm_dev_cm_ids | while IFS= read -r l; do iwcm_log "left: $l"; done
	ktap_test_fail "target stopped, no rdma_cm id with port $PORT left"
fi
if [ -n "${ISERT_DELAYS:-}" ]; then
	# For repro-removal-race.sh: the sleeps ran (isert logs each).
	iwcm_log "isert delays run: removal $(iwcm_dmesg_since_setup | grep -c "removal_delay_ms: .* before the removal's wait"), release $(iwcm_dmesg_since_setup | grep -c "release_delay_ms: .* between ISER_CONN_DOWN and the put")"
fi
ulp_report
iwcm_finish
