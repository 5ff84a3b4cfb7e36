#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The port mapper client's netlink requests are freed once answered
# (drivers/infiniband/core/iw_cm/iwpm/*.patch).  With rdma-core's iwpmd
# running, iw_cm registers with it and every rping connect sends
# add-mapping (and, active side, query) requests that iwpmd answers.  Then
# iwpmd is stopped, the siw link deleted and rdma_ucm, rdma_cm and iw_cm
# unloaded, so that nothing in the module can keep a request reachable,
# and two kmemleak scans must report no object allocated since this test
# began.  The kernel's own client (the C iw_cm's, unpatched) gives each
# request a reference nobody drops, and it sets the registration request's
# buffer only after sending it: iwpmd's answer can come first, and
# iwpm_register_pid_cb() dereferences NULL (an Oops in strcmp seen here as
# soon as iwpmd started).  SKIP with the kernel's C iw_cm; with the C
# iw_cm built with the fixed client (tools/vm/run.sh IWCM_C_IWCM=iwpm-fixed,
# tools/testing/iw_cm_c/) it runs: the fix holds under iwcm.c too.
. "$(dirname "$0")/lib.sh"

KML=/sys/kernel/debug/kmemleak
PAIRS=${IWCM_IWPM_PAIRS:-3}

iwcm_init iwpm_requests 6 rping iwpmd rmmod modprobe
iwcm_require_iwpm_fix "its port mapper client oopses when iwpmd answers the registration before the request's buffer is set (iwpm_register_pid_cb, strcmp on NULL), and never frees answered requests (drivers/infiniband/core/iw_cm/iwpm/ fixes both; IWCM_C_IWCM=iwpm-fixed runs iwcm.c with them)"
[ -w "$KML" ] || iwcm_skip_all "no kmemleak ($KML): the kernel is built without CONFIG_DEBUG_KMEMLEAK"
iwcm_setup_or_bail

# kmemleak reports an object with the jiffies of its allocation: this
# test's objects are those at or after this.
j0=$(sed -n 's/^jiffies: *\([0-9]*\)$/\1/p' /proc/timer_list | head -n1)
# The port mapper client's debug lines (iwpm_msg.c, built into iw_cm.ko):
# "iWarp Port Mapper (pid = N) is available!" is iwpmd's answer to the
# registration request.
echo "file iwpm_msg.c +p" > /sys/kernel/debug/dynamic_debug/control 2>/dev/null

iwcm_spawn IWPMD "$IWCM_TMP/iwpmd.log" iwpmd -s
registered() { iwcm_dmesg_since_setup | grep -q "iWarp Port Mapper (pid = [0-9]*) is available"; }
ok=1
for r in $(seq "$PAIRS"); do
	iwcm_rping_ok 2 || ok=0
	[ "$r" -eq 1 ] && iwcm_wait_for 10 registered
done
iwcm_check "iwpmd answered the registration and $PAIRS rping pairs connected through the port mapper" \
	eval '[ $ok -eq 1 ] && registered'
kill -TERM "$IWPMD" 2>/dev/null
iwcm_wait "$IWPMD" 10 >/dev/null || kill -9 "$IWPMD" 2>/dev/null
echo "file iwpm_msg.c -p" > /sys/kernel/debug/dynamic_debug/control 2>/dev/null

# Everything that could hold a request goes: the link, then the modules.
iwcm_teardown
if [ "$IWCM_IMPL" = rust ]; then
	rmmod rdma_ucm rdma_cm iw_cm
else
	modprobe -r rdma_ucm rdma_cm iw_cm
fi
rc=$?
iwcm_check "rdma_ucm, rdma_cm and iw_cm unloaded (status $rc)" eval '[ $rc -eq 0 ] && ! grep -q "^iw_cm " /proc/modules'

# Objects must look unreferenced in two scans, and be 5 s old (kmemleak's
# minimum age) to be reported.
sleep 6
echo scan > "$KML"
echo scan > "$KML"
# Each report is a block from its "unreferenced object" line; keep the
# blocks whose "jiffies N" is this test's.
awk -v j0="${j0:-0}" '
	function flush() { if (keep) printf "%s", blk; blk = ""; keep = 0 }
	/^unreferenced object/ { flush() }
	{ blk = blk $0 "\n" }
	match($0, /jiffies [0-9]+/) { if (substr($0, RSTART + 8, RLENGTH - 8) + 0 >= j0 + 0) keep = 1 }
	END { flush() }' "$KML" >"$IWCM_TMP/leaks.txt"
nleak=$(grep -c "^unreferenced object" "$IWCM_TMP/leaks.txt")
if [ "$nleak" -eq 0 ]; then
	ktap_test_pass "no object allocated during the test left unreferenced after unload (kmemleak)"
else
	head -n 24 "$IWCM_TMP/leaks.txt" | while IFS= read -r l; do ktap_print_msg "kmemleak: $l"; done
	ktap_test_fail "no object allocated during the test left unreferenced after unload ($nleak reported)"
fi

# The stack again, for the tests after this one.
iwcm_setup_or_bail
iwcm_check "reloaded stack carries rping -C 5" iwcm_rping_ok 5
iwcm_finish
