#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The test that shows what 0001 fixes: isert's DEVICE_REMOVAL handler
# frees its connection as soon as the state says ISER_CONN_DOWN, which
# isert_release_work() sets before its put, so the QP can outlive the
# handler's return (ib_cq_pool_cleanup's WARNING during `rdma link
# delete`, seen once in five iser.sh boots with our iw_cm) and later puts
# touch freed memory.  Here the window is widened by build.sh --delay: the
# handler sleeps REMOVAL_MS (default 3000) after starting the teardown and
# the release work sleeps RELEASE_MS (default 8000) between the state and
# its put.  iser.sh runs (login, fio, the unplug with the delays, relink,
# flaps, logout) in one boot each:
#
#   1. the kernel's isert with the kernel's C iw_cm: the handler frees the
#      connection under the release work, a KASAN report or the CQ pool
#      WARNING follows -- isert's race, whatever the iw_cm;
#   2. 0001's isert with the C iw_cm: no splat, iser.sh passes;
#   3. 0001's isert with our iw_cm: no splat, iser.sh passes.
#
# Exit 0 when all three hold.  About 12 minutes under TCG.
#
#   tools/testing/isert/repro-removal-race.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
delays="${REMOVAL_MS:-3000} ${RELEASE_MS:-8000}"

"$top/tools/setup-deps.sh" > /dev/null || { echo "repro: setup-deps failed"; exit 1; }
tree=$("$top/tools/ulp-tree.sh" | tail -n1) || { echo "repro: tools/ulp-tree.sh failed"; exit 1; }
IWCM_KFLAVOUR=ulp "$here/build.sh" --delay > /dev/null || { echo "repro: build.sh --delay failed"; exit 1; }

run() {	# run NAME KO IMPL [panic]: one boot of iser.sh; prints its results
	# folder (the boot's output goes to stderr).  "panic": the guest
	# panics on its first splat (panic_on_warn), so that a use-after-free
	# does not go on flooding the console until the boot's timeout.
	local res pre=()
	[ "${4:-}" != panic ] || pre=(bash -c 'echo 1 > /proc/sys/kernel/panic_on_warn && exec "$@"' _)
	res=$(IWCM_KFLAVOUR=ulp IWCM_ISERT=patched IWCM_ISERT_KO=$2 IWCM_C_IWCM=stock \
		"$tree/tools/vm/run.sh" --name "repro-isert-$1" --timeout 1200 -- \
		"${pre[@]}" env IWCM_TESTS=iser.sh ISERT_DELAYS="$delays" "$tree/tools/vm/guest-tests.sh" "$3" 2>&1 |
		tee /dev/stderr | sed -n 's/.*results in \(.*\)$/\1/p' | head -n1)
	echo "$res"
}
# The sleeps ran (else a clean boot would mean nothing): iser.sh counts
# isert's log lines of each.
delayed() {
	local l
	l=$(cat "$1"/ktap-*.txt 2>/dev/null | tr -d '\r' | sed -n 's/.*isert delays run: //p' | tail -n1)
	[[ "$l" =~ ^removal\ ([0-9]+),\ release\ ([0-9]+)$ ]] &&
		[ "${BASH_REMATCH[1]}" -ge 1 ] && [ "${BASH_REMATCH[2]}" -ge 1 ]
}
clean() {	# clean RESULTS: the guest passed and no splat
	[ "$(cat "$1/rc" 2>/dev/null)" = 0 ] && python3 "$top/tools/vm/splat-check.py" "$1/console.log" > /dev/null
}
fail=0
u=$(run upstream "$here/build-delay/upstream/ib_isert.ko" c panic 2> >(grep --line-buffered -E "^(# )?(ok|not ok) |delays" >&2))
# The guest panics on the first report: the CQ pool's WARNING as the
# device goes with the QP still there, or KASAN's on the connection the
# handler freed.
if [ -n "$u" ] &&
	grep -qE "BUG: KASAN: .*(isert|ib_drain_qp|kref)|WARNING: drivers/infiniband/core/cq.c:[0-9]+ at ib_cq_pool_cleanup" "$u/console.log"; then
	echo "ok 1 the kernel's isert, C iw_cm: the connection freed under its release ($u)"
else
	echo "not ok 1 the kernel's isert, C iw_cm: no use-after-free or CQ pool WARNING, or the delays did not run (${u:-no results})"
	fail=1
fi
n=2
for impl in c rust; do
	f=$(run "fixed-$impl" "$here/build-delay/fixed/ib_isert.ko" "$impl" 2> >(grep --line-buffered -E "^(# )?(ok|not ok) |delays" >&2))
	if [ -n "$f" ] && delayed "$f" && clean "$f"; then
		echo "ok $n 0001's isert, $impl iw_cm: iser.sh passes with the delays, no splat ($f)"
	else
		echo "not ok $n 0001's isert, $impl iw_cm: iser.sh failed, a splat, or the delays did not run (${f:-no results})"
		fail=1
	fi
	n=$((n + 1))
done
exit $fail
