#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The test that shows what 0001 fixes: rdma_cm's cma_release_dev() drops
# its cma_dev reference before its GID attribute, and a device removal
# that runs on in between frees the GID table under the attribute's last
# put (ib_core's free_gid_work dereferences NULL).  Under TCG the window
# is hit about once in 300 siw unplug soak cycles; here it is widened to
# RELEASE_DELAY_MS (default 15000) by build.sh --delay, in two builds of
# rdma_cm: the kernel's order and 0001's order, each with the sleep
# between the two puts when they run on a workqueue worker (the ULP's
# release work; the thread removing the device runs on), rdma_cm's global
# lock dropped for the sleep so that the removal is not held up by it.  One VM boot each, with our iw_cm, the test siw
# and the Rust sample ULP (1 admin + 1 I/O queue, connected to itself),
# whose host tears its queues down from a work item on DEVICE_REMOVAL
# (context=work): the ids' last cma_release_dev() runs on a kworker while
# `rdma link delete` goes on.
#
# Expected: the kernel's order -> the free_gid_work Oops (KASAN
# null-ptr-deref) in that boot; 0001's order -> the delete completes, no
# splat (the run's splat gate) and the sample's ids are gone.  Exit 0 when
# both hold.  About 4 minutes under TCG.
#
#   tools/testing/rdma_cm/repro-gid-race.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
delay=${RELEASE_DELAY_MS:-15000}
# The guest part (argument "guest").
if [ "${1:-}" = guest ]; then
	. "$top/tools/testing/selftests/iw_cm/lib.sh"
	iwcm_setup >/tmp/setup.log 2>&1 || { cat /tmp/setup.log; echo "repro: set-up failed"; exit 1; }
	for d in $(modinfo -F depends "$top/samples/rdma/rust_rdma_ulp/rust_rdma_ulp.ko" | tr , ' '); do modprobe "$d"; done
	insmod "$top/samples/rdma/rust_rdma_ulp/rust_rdma_ulp.ko" role=both addr="$IWCM_ADDR" \
		nr_io_queues=1 queue_depth=8 own_queue=last order=cmid context=work ||
		{ echo "repro: sample ULP did not connect"; exit 1; }
	echo "$delay" > /sys/module/rdma_cm/parameters/release_delay_ms ||
		{ echo "repro: cannot set rdma_cm's release_delay_ms (not the --delay build?)"; exit 1; }
	echo "repro: rdma link delete (cma_release_dev sleeps ${delay} ms between its puts on a workqueue worker)"
	timeout 120 rdma link delete "$IWCM_RDEV"
	echo "repro: rdma link delete status $?"
	# The ids' last puts, then free_gid_work.
	sleep $(( delay / 1000 * 2 + 5 ))
	echo "repro: sample live queues: $(sed -n 's/^live //p' /sys/kernel/debug/rust_rdma_ulp/host 2>/dev/null)"
	echo 0 > /sys/module/rdma_cm/parameters/release_delay_ms
	# The window was open: releases on workers slept (else the fixed
	# boot's pass would mean nothing).
	echo "repro: delayed releases: $(iwcm_dmesg_since_setup | grep -c "release_delay_ms: .* between the puts")"
	rmmod rust_rdma_ulp
	# What the sample and ib_core said (the console shows warnings only).
	iwcm_dmesg_since_setup | grep -E "host:|target:|free_gid_work|KASAN|Oops" | sed 's/^/repro: dmesg: /' | head -n 40
	exit 0
fi

"$here/build.sh" --delay > /dev/null || { echo "repro: build.sh --delay failed"; exit 1; }
make -C "$top" modules siw > /dev/null || { echo "repro: make modules siw failed"; exit 1; }

run() {	# run NAME KO: one boot; prints its console log's path (the boot's
	# output goes to stderr: the callers keep the guest's "repro:" lines)
	local log
	log=$(IWCM_RDMA_CM=patched IWCM_RDMA_CM_KO=$2 IWCM_IMPL=rust "$top/tools/vm/run.sh" --name "repro-gid-$1" --timeout 480 \
		--allow-rdma-cm-lockdep -- env RELEASE_DELAY_MS="$delay" "$0" guest 2>&1 | tee /dev/stderr |
		sed -n 's/.*results in \(.*\)$/\1/p' | head -n1)
	echo "$log/console.log"
}
delayed() { tr -d '\r' < "$1" | sed -n 's/^repro: delayed releases: //p' | tail -n1; }
fail=0
c=$(run upstream "$here/build-delay/upstream/rdma_cm.ko" 2> >(grep --line-buffered "^repro:" >&2))
if grep -q "free_gid_work" "$c" && grep -qE "BUG: KASAN|general protection fault|BUG: kernel NULL pointer" "$c"; then
	echo "ok 1 the kernel's order: free_gid_work oopses after the device is gone ($c)"
else
	echo "not ok 1 the kernel's order: no free_gid_work report ($c)"
	fail=1
fi
f=$(run fixed "$here/build-delay/fixed/rdma_cm.ko" 2> >(grep --line-buffered "^repro:" >&2))
rc=$(cat "$(dirname "$f")/rc" 2>/dev/null || echo none)
if [ "$(delayed "$f")" -ge 1 ] 2>/dev/null && [ "$rc" = 0 ] &&
	python3 "$top/tools/vm/splat-check.py" --allow-rdma-cm-lockdep "$f" >/dev/null &&
	grep -q "repro: rdma link delete status 0" "$f" && ! grep -q "free_gid_work" "$f"; then
	echo "ok 2 0001's order: delete completes, no splat ($f)"
else
	echo "not ok 2 0001's order: guest rc $rc, $(delayed "$f") delayed releases (must be >= 1), or a splat, or the delete failed ($f)"
	fail=1
fi
exit $fail
