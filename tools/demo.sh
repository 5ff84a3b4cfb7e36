#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The main command (`make demo`): from nothing, set up, build the test kernel
# and the modules, boot the VM, load our Rust iw_cm and run the unplug
# scenarios:
#   1. nvme-rdma host + nvmet-rdma target over siw, fio with verify, then
#      `rdma link delete` mid-I/O (tools/testing/selftests/iw_cm/nvme_unplug.sh);
#   2. the Rust sample ULP (nvme-rdma shaped, in-handler DEVICE_REMOVAL
#      teardown) with 1 admin + 8 I/O queues, then `rdma link delete`
#      (sample_unplug.sh), in a boot of its own: rdma_cm's handler_mutex
#      lockdep false positive is accepted there and nothing else.
# Ends with a short human report: what ran, timings, splats.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
stamp=$(date +%Y%m%d-%H%M%S)
export IWCM_RESULTS_DIR=${IWCM_RESULTS_DIR:-$top/results/demo-$stamp}
mkdir -p "$IWCM_RESULTS_DIR"
report=()
rc_all=0
t_all=$(date +%s)
note() { report+=("$*"); echo "demo: $*"; }

tools/setup-deps.sh || { echo "demo: dependency set-up failed"; exit 1; }
t=$(date +%s)
tools/kernel/build-kernel.sh || { echo "demo: test kernel build failed"; exit 1; }
note "test kernel ready ($(( $(date +%s) - t )) s)"
t=$(date +%s)
make -C "$top" modules siw rdma_cm >"$IWCM_RESULTS_DIR/modules.log" 2>&1 ||
	{ tail -30 "$IWCM_RESULTS_DIR/modules.log"; echo "demo: module build failed"; exit 1; }
note "modules built ($(( $(date +%s) - t )) s): $(cd "$top" && find drivers samples -name '*.ko' 2>/dev/null | tr '\n' ' ')"
. tools/kernel/env.sh
make -s -C tools/testing/selftests/iw_cm KSELFTEST_DIR="$KSRC/tools/testing/selftests" >/dev/null ||
	{ echo "demo: selftest helper build failed"; exit 1; }

# scenario NAME TEST [run.sh options]: one VM boot running one selftest
# with our iw_cm.
scenario() {
	local name=$1 test=$2 log res ktap rc line
	shift 2
	log=$IWCM_RESULTS_DIR/$name.out
	if [ ! -f "tools/testing/selftests/iw_cm/$test" ]; then
		note "$name: SKIPPED ($test not present)"
		return
	fi
	IWCM_TESTS=$test tools/vm/run.sh --name "$name" --timeout 900 "$@" -- \
		env IWCM_TESTS="$test" tools/vm/guest-tests.sh rust >"$log" 2>&1
	rc=$?
	res=$(sed -n 's/.*results in \(.*\)$/\1/p' "$log" | head -n1)
	ktap=$res/ktap-rust.txt
	if [ "$rc" -eq 0 ]; then
		note "$name: PASSED in $(cat "$res/seconds" 2>/dev/null) s (VM run)"
	else
		rc_all=1
		note "$name: FAILED (VM exit $rc; log $log)"
	fi
	# (not a pipe into the loop: `note` must run in this shell to keep
	# the report)
	while IFS= read -r line; do
		note "$line"
	done < <(grep -hE "^# # .*(rdma link delete|duration|connected|torn down|fio exit)" "$ktap" 2>/dev/null |
		sed 's/^# # /    /')
	if grep -q "^splat-check: accepted" "$log"; then
		note "    splats: rdma_cm handler_mutex lockdep report only (accepted, see Documentation/iw_cm.rst)"
	elif grep -q "kernel splat in the console log" "$log"; then
		note "    splats: YES (see $res/console.log)"
	else
		note "    splats: none"
	fi
}

scenario nvme-rdma-unplug nvme_unplug.sh
scenario sample-ulp-unplug sample_unplug.sh --allow-rdma-cm-lockdep

echo
echo "==== iw_cm (Rust) demo report ===="
printf '%s\n' "${report[@]}"
echo "total $(( $(date +%s) - t_all )) s; results in $IWCM_RESULTS_DIR"
exit "$rc_all"
