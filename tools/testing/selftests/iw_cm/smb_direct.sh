#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# SMB Direct over siw, server and client in one guest (ksmbd and cifs, both
# over smbdirect.ko; on an iWARP device SMB Direct listens on 5445 and its
# connect carries an 8-byte ird/ord blob as private data), with the iw_cm
# under test: ksmbd shares a tmpfs, cifs mounts it (rdma, vers=3.1.1,
# soft), fio with crc32c verify, the rdma_cm ids and (ours) the cm_id
# table show the connection, `rdma link delete` under fio (bounded),
# `rdma link add` again, recovery shown by an 8 MB write and read-back,
# link flaps under fio, unmount, remote peers that never let a connection
# be established against ksmbd's listener (peer_lib.sh: nothing left
# behind, `rdma link delete` bounded with the silent ones held, a mount
# again afterwards), ksmbd stopped (bounded: ksmbd.control -s
# blocks while a ksmbd worker is stuck), no id left.  Times in the report
# line at the end.  Needs the ULP flavour of the test kernel
# (tools/kernel/ulp.fragment), Debian's ksmbd-tools and cifs-utils.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ulp_lib.sh"
. "$(dirname "$0")/peer_lib.sh"

PORT=5445
PW=iwcm-selftest
iwcm_init smb_direct $((5 + ULP_FS_RESULTS + PEER_RESULTS)) ksmbd.mountd ksmbd.adduser ksmbd.control mount.cifs fio
ulp_require_modules "SMB Direct" ksmbd cifs
ulp_quick
iwcm_setup_or_bail

state=$IWCM_TMP/smb
share=$state/share
mnt=$state/mnt
conf=$state/ksmbd.conf
db=$state/ksmbdpwd.db
mkdir -p "$share" "$mnt"

ksmbd_start() {
	modprobe ksmbd && modprobe cifs || return 1
	mount -t tmpfs -o size=256M tmpfs "$share" || return 1
	cat > "$conf" <<CONF
[global]
	server multi channel support = yes
[share]
	path = $share
	read only = no
	force user = root
	force group = root
CONF
	ksmbd.adduser -c "$conf" -i "$db" -a root -p "$PW" >"$IWCM_TMP/adduser.log" 2>&1 || {
		iwcm_show_log "$IWCM_TMP/adduser.log"; return 1; }
	ksmbd.mountd -c "$conf" -u "$db" >"$IWCM_TMP/mountd.log" 2>&1 || {
		iwcm_show_log "$IWCM_TMP/mountd.log"; return 1; }
	# ksmbd's SMB Direct listener (a wildcard rdma_cm listen) on 5445.
	iwcm_wait_listen "$PORT" 30
}

ksmbd_stop() {
	local rc
	ulp_timed secs 60 ksmbd.control -s
	rc=$?
	ulp_note ksmbd_stop_s "$secs"
	umount "$share" 2>/dev/null
	return $rc
}

ok=1
if ksmbd_start; then
	ktap_test_pass "ksmbd shares a tmpfs, SMB Direct listener on $PORT"
else
	ktap_test_fail "ksmbd shares a tmpfs, SMB Direct listener on $PORT"
	ok=0
fi

if [ $ok -eq 1 ] && ulp_timed secs 120 mount -t cifs "//$IWCM_ADDR/share" "$mnt" \
		-o rdma,username=root,password="$PW",vers=3.1.1,soft \
		>"$IWCM_TMP/mount.log" 2>&1; then
	ulp_note mount_s "$secs"
	iwcm_log "$(grep " $mnt " /proc/mounts | sed "s/password=[^,]*/password=.../")"
	ktap_test_pass "mount -t cifs -o rdma,vers=3.1.1 ($secs s)"
else
	iwcm_show_log "$IWCM_TMP/mount.log"
	ktap_test_fail "mount -t cifs -o rdma,vers=3.1.1"
	ok=0
fi

ulp_fs_phases "$ok" "$mnt" "$PORT" "SMB Direct"
ulp_umount "$mnt"
# A normal client for peer_round: a mount and an unmount.
smb_client() {
	iwcm_bounded 120 mount -t cifs "//$IWCM_ADDR/share" "$mnt" \
		-o rdma,username=root,password="$PW",vers=3.1.1,soft \
		>"$IWCM_TMP/mount-again.log" 2>&1 ||
		{ iwcm_show_log "$IWCM_TMP/mount-again.log"; return 1; }
	iwcm_bounded 60 umount "$mnt" || { umount -l "$mnt"; return 1; }
}
peer_round_ulp "$ok" ksmbd "$PORT" smb_client "SMB Direct mount"
smb_ids_gone() { ! iwcm_dev_cm_ids | grep -qE "(src|dst)-addr +[0-9.]+:$PORT "; }
if ksmbd_stop && iwcm_wait_for 60 smb_ids_gone; then
	ktap_test_pass "ksmbd stopped, no rdma_cm id with port $PORT left"
else
	iwcm_diag "ksmbd stop"
	ktap_test_fail "ksmbd stopped (ksmbd.control -s returned), no rdma_cm id with port $PORT left"
fi
ulp_report
iwcm_finish
