#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# NFS/RDMA over siw, server and client in one guest (nfsd's svcrdma and the
# client's xprtrdma, both in rpcrdma.ko), with the iw_cm under test:
# nfsd exports a tmpfs and listens for RDMA on 20049, the client mounts it
# (vers=4.1, proto=rdma, soft), fio with crc32c verify, the rdma_cm ids
# and (ours) the cm_id table show the connection, `rdma link delete` under
# fio (bounded), `rdma link add` again, recovery shown by an 8 MB write and
# read-back, link flaps under fio, unmount, then remote peers that never
# let a connection be established against nfsd's listener (peer_lib.sh:
# nothing left behind, `rdma link delete` bounded with the silent ones
# held, a mount again afterwards), nfsd stopped, no id left.
# Times (mount, delete, recovery) in the report line at the end.  Needs
# the ULP flavour of the test kernel (tools/kernel/ulp.fragment), Debian's
# nfs-kernel-server and rpcbind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ulp_lib.sh"
. "$(dirname "$0")/peer_lib.sh"

PORT=20049
iwcm_init nfs_rdma $((5 + ULP_FS_RESULTS + PEER_RESULTS)) rpc.nfsd exportfs rpc.mountd mount.nfs fio
ulp_require_modules "NFS/RDMA" nfsd nfsv4 rpcrdma
ulp_quick
iwcm_setup_or_bail

state=$IWCM_TMP/nfs
export_dir=$state/export
mnt=$state/mnt
mkdir -p "$state"

nfsd_start() {
	modprobe nfsd && modprobe rpcrdma && modprobe nfsv4 || return 1
	# nfs-utils' state on the read-only root: a tmpfs of its own.
	mount -t tmpfs tmpfs /var/lib/nfs || return 1
	mkdir -p /var/lib/nfs/v4recovery /var/lib/nfs/sm /var/lib/nfs/sm.bak
	: > /var/lib/nfs/etab; : > /var/lib/nfs/rmtab
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || return 1
	mkdir -p "$export_dir" "$mnt"
	mount -t tmpfs -o size=256M tmpfs "$export_dir" || return 1
	if command -v rpcbind >/dev/null; then
		mkdir -p /run/rpcbind
		rpcbind -w || iwcm_log "rpcbind did not start (NFSv4 does not need it)"
	fi
	exportfs -o rw,fsid=0,no_root_squash,insecure,no_subtree_check \
		"${IWCM_ADDR%.*}.0/$IWCM_PREFIX:$export_dir" || return 1
	rpc.mountd -N 2 -N 3 || return 1
	# v4 only, 10 s grace and lease instead of 90 (the client's first
	# OPEN waits for the grace period to end).
	rpc.nfsd -N 3 -G 10 -L 10 --rdma="$PORT" 4 || return 1
	grep -q "rdma $PORT" /proc/fs/nfsd/portlist
}

nfsd_stop() {
	iwcm_bounded 60 rpc.nfsd 0
	iwcm_bounded 30 exportfs -ua
	pkill -x rpc.mountd
	pkill -x rpcbind
	umount "$export_dir" 2>/dev/null
	umount /proc/fs/nfsd 2>/dev/null
	umount /var/lib/nfs 2>/dev/null
}

ok=1
if nfsd_start; then
	iwcm_log "nfsd: $(tr '\n' ' ' < /proc/fs/nfsd/portlist)"
	ktap_test_pass "nfsd exports a tmpfs, RDMA listener on $PORT"
else
	ktap_test_fail "nfsd exports a tmpfs, RDMA listener on $PORT"
	ok=0
fi

if [ $ok -eq 1 ] && ulp_timed secs 120 mount -t nfs4 \
		-o vers=4.1,proto=rdma,port=$PORT,soft "$IWCM_ADDR:/" "$mnt" \
		>"$IWCM_TMP/mount.log" 2>&1; then
	ulp_note mount_s "$secs"
	iwcm_log "$(grep " $mnt " /proc/mounts)"
	ktap_test_pass "mount -t nfs4 -o vers=4.1,proto=rdma ($secs s)"
else
	iwcm_show_log "$IWCM_TMP/mount.log"
	ktap_test_fail "mount -t nfs4 -o vers=4.1,proto=rdma"
	ok=0
fi

ulp_fs_phases "$ok" "$mnt" "$PORT" "NFS/RDMA"
ulp_umount "$mnt"
# A normal client for peer_round: a mount and an unmount.
nfs_client() {
	iwcm_bounded 120 mount -t nfs4 -o vers=4.1,proto=rdma,port=$PORT,soft \
		"$IWCM_ADDR:/" "$mnt" >"$IWCM_TMP/mount-again.log" 2>&1 ||
		{ iwcm_show_log "$IWCM_TMP/mount-again.log"; return 1; }
	iwcm_bounded 60 umount "$mnt" || { umount -l "$mnt"; return 1; }
}
peer_round_ulp "$ok" nfsd "$PORT" nfs_client "NFS/RDMA mount"
nfsd_stop
# The client's and the server's ids go once their transports are closed:
# no rdma_cm id with the port left.
nfs_ids_gone() { ! iwcm_dev_cm_ids | grep -qE "(src|dst)-addr +[0-9.]+:$PORT "; }
if iwcm_wait_for 60 nfs_ids_gone; then
	ktap_test_pass "nfsd stopped, no rdma_cm id with port $PORT left"
else
	iwcm_dev_cm_ids | while IFS= read -r l; do iwcm_log "left: $l"; done
	ktap_test_fail "nfsd stopped, no rdma_cm id with port $PORT left"
fi
ulp_report
iwcm_finish
