#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# nvme-rdma through link flaps: the nvmet-rdma target (null_blk namespace)
# and the nvme-rdma host (4 I/O queues, reconnecting: --ctrl-loss-tmo=60
# --reconnect-delay=2) over siw, fio with crc32c verify on the namespace
# while `ip link set` takes the siw netdev down for 2 s and up again, three
# times; then what fio did (noted), no verify mismatch, the controller live
# and an 8 MB direct write and read-back, disconnect, no id left.  With
# either iw_cm (the ULP boots of make check run it with both).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ulp_lib.sh"

NQN=iwcm-selftest-flap
iwcm_init nvme_flap 6 nvme fio
ulp_quick
iwcm_setup_or_bail

nvme_ns_ready() { iwcm_nvme_bdev "$NQN" >/dev/null; }
ctrl_live() { [ "$(cat "/sys/class/nvme/$(iwcm_nvme_ctrl "$NQN")/state" 2>/dev/null)" = live ]; }

ok=1
if iwcm_nvmet_setup "$NQN" 4421; then
	ktap_test_pass "nvmet-rdma target on $IWCM_ADDR:4421"
else
	ktap_test_fail "nvmet-rdma target on $IWCM_ADDR:4421"
	ok=0
fi
modprobe nvme-rdma
if [ $ok -eq 1 ] && nvme connect -t rdma -a "$IWCM_ADDR" -s 4421 -n "$NQN" -i 4 \
		--ctrl-loss-tmo=60 --reconnect-delay=2 >"$IWCM_TMP/connect.log" 2>&1 &&
		iwcm_wait_for 20 nvme_ns_ready; then
	bdev=/dev/$(iwcm_nvme_bdev "$NQN")
	iwcm_log "connected: $(iwcm_nvme_ctrl "$NQN"), $bdev"
	ktap_test_pass "nvme connect -t rdma with 4 I/O queues"
else
	iwcm_show_log "$IWCM_TMP/connect.log"
	ktap_test_fail "nvme connect -t rdma with 4 I/O queues"
	ok=0
fi

if [ $ok -eq 1 ]; then
	ulp_flaps "$bdev" "$bdev" "nvme-rdma" --allow_file_create=0
	if iwcm_wait_for 60 ctrl_live; then
		ktap_test_pass "controller live after the flaps"
	else
		ktap_test_fail "controller live after the flaps (state $(cat "/sys/class/nvme/$(iwcm_nvme_ctrl "$NQN")/state" 2>/dev/null))"
	fi
else
	for i in 1 2 3; do ktap_test_skip "not run: no controller"; done
fi

iwcm_bounded 60 nvme disconnect -n "$NQN" >/dev/null 2>&1
iwcm_wait_for 30 bash -c '! ls /sys/class/nvme/ 2>/dev/null | grep -q .'
iwcm_nvmet_cleanup "$NQN"
modprobe -r nvme-rdma nvmet-rdma nvmet null_blk 2>/dev/null
ulp_report
iwcm_finish
