#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The in-tree ULP under unplug: nvmet-rdma target (null_blk namespace,
# configfs port on the siw netdev's address, 4420) and nvme-rdma host
# (`nvme connect -t rdma`, 4 I/O queues), fio with verify running, then
# `rdma link delete` of the siw link mid-I/O.  Checks: the delete returns
# (bounded by a timeout), the controller goes away, fio ends with I/O errors
# at most after the unplug and never with a verify mismatch, no leaked cm_id,
# no splat.  Prints the delete time.  The host does not reconnect
# (--ctrl-loss-tmo=0): its I/O fails once the link is gone, and it cannot
# hit nvmet-rdma's removal race (a queue accepted after
# nvmet_rdma_remove_one() is never removed; tools/stress/unplug-stress.sh).
. "$(dirname "$0")/lib.sh"

NQN=iwcm-selftest-nqn
DELETE_TIMEOUT=${IWCM_NVME_DELETE_TIMEOUT:-90}

iwcm_init nvme_unplug 8
iwcm_require_cmd nvme fio rdma
iwcm_setup_or_bail

nvme_ns_ready() { iwcm_nvme_bdev "$NQN" >/dev/null; }
nvme_dev() { iwcm_nvme_ctrl "$NQN"; }

ok=1
if ! iwcm_nvmet_setup "$NQN" 4420; then
	iwcm_log "nvmet-rdma target setup failed"
	ok=0
fi
iwcm_check "nvmet-rdma target on $IWCM_ADDR:4420 (null_blk namespace)" [ $ok -eq 1 ]

modprobe nvme-rdma
if [ $ok -eq 1 ] && nvme connect -t rdma -a "$IWCM_ADDR" -s 4420 -n "$NQN" -i 4 \
	--ctrl-loss-tmo=0 \
	>"$IWCM_TMP/connect.log" 2>&1 && iwcm_wait_for 20 nvme_ns_ready; then
	ctrl=$(nvme_dev)
	bdev=$(iwcm_nvme_bdev "$NQN")
	iwcm_log "connected: $ctrl, /dev/$bdev"
	ktap_test_pass "nvme connect -t rdma with 4 I/O queues"
else
	iwcm_show_log "$IWCM_TMP/connect.log"
	ktap_test_fail "nvme connect -t rdma with 4 I/O queues"
	ok=0
fi

delete_rc=1
delete_secs=
if [ $ok -eq 1 ]; then
	flog=$IWCM_TMP/fio.log
	iwcm_spawn fio_pid "$flog" fio --name=verify --filename="/dev/$bdev" \
		--ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth=16 \
		--numjobs=1 --size=64M --verify=crc32c --verify_backlog=256 --verify_fatal=1 \
		--time_based --runtime=60 --output-format=normal \
		--allow_file_create=0
	# Mid-I/O: the unplug comes once fio's writes reach the namespace
	# (sectors written, field 7 of the block stat of the multipath head or
	# its path device; fio takes seconds to start under TCG), plus 1 s.
	nvme_sectors_written() {
		cat /sys/block/nvme*n*/stat 2>/dev/null | awk '{ s += $7 } END { print s + 0 }'
	}
	iwcm_wait_for 30 bash -c "[ \"\$(cat /sys/block/nvme*n*/stat 2>/dev/null | awk '{ s += \$7 } END { print s + 0 }')\" -gt 0 ]"
	sleep 1
	wrote=$(nvme_sectors_written)
	t0=$(__iwcm_now)
	timeout "$DELETE_TIMEOUT" rdma link delete "$IWCM_RDEV"
	delete_rc=$?
	delete_secs=$(__iwcm_elapsed "$t0")
	iwcm_log "rdma link delete: status $delete_rc after $delete_secs s (with fio running)"
fi
iwcm_check "rdma link delete returns mid-I/O (took ${delete_secs:-?} s)" [ "$delete_rc" -eq 0 ]

if [ $ok -eq 1 ]; then
	iwcm_wait "$fio_pid" 120
	frc=$?
	iwcm_log "fio exit status $frc"
	# What fio saw: its error lines and totals, for the report.
	grep -E "err=|io_u error|issued rwts|WRITE:" "$flog" | head -n 8 |
		while IFS= read -r l; do iwcm_log "  fio: $l"; done
	# fio must have written (and verified) data before the unplug, or the
	# verify check below proves nothing.
	iwcm_check "fio wrote before the unplug (${wrote:-no} sectors written)" [ "${wrote:-0}" -gt 0 ]
	# Once the namespace is gone fio must fail its I/O, not go on writing
	# a regular file it created at the vanished /dev node.
	fio_failed_io=0
	[ "$frc" -ne 0 ] && [ "$frc" -ne 124 ] && [ ! -f "/dev/$bdev" ] && fio_failed_io=1
	iwcm_check "fio ended with its I/O failing after the unplug (exit $frc), no file left at /dev/$bdev" \
		[ $fio_failed_io -eq 1 ]
	[ -f "/dev/$bdev" ] && rm -f "/dev/$bdev"
	if grep -qiE "verify: bad|bad magic|verify failed|crc32c: verify" "$flog"; then
		iwcm_show_log "$flog"
		ktap_test_fail "fio: no verify mismatch (I/O errors after the unplug only)"
	else
		ktap_test_pass "fio: no verify mismatch (I/O errors after the unplug only)"
	fi
else
	ktap_test_skip "fio: not run (no controller)"
	ktap_test_skip "fio: not run (no controller)"
	ktap_test_skip "fio: not run (no controller)"
fi

nvme disconnect -n "$NQN" >/dev/null 2>&1
iwcm_wait_for 30 bash -c '! ls /sys/class/nvme/ 2>/dev/null | grep -q .' 
iwcm_nvmet_cleanup "$NQN"
modprobe -r nvme-rdma nvmet-rdma nvmet null_blk 2>/dev/null
if ! nvme_dev >/dev/null; then
	ktap_test_pass "controller gone, nvme-rdma/nvmet-rdma unloaded"
else
	ktap_test_fail "controller gone, nvme-rdma/nvmet-rdma unloaded"
fi
iwcm_finish
