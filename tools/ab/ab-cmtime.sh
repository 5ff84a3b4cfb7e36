#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# A/B benchmark: connection setup and teardown through rdma_cm with the
# stock C iw_cm and with ours, measured in the same VM boot
# (tools/ab/ab-cmtime-guest.sh: alternating C/Rust rounds of rdma-core's
# cmtime over siw).  Prints, per cmtime step, the median microseconds per
# connection of each iw_cm over the rounds and the ratio Rust / C (below 1:
# ours is faster).  No pass/fail threshold: the figures are for reading.
# create_id, resolve_addr/route and create_qp do not reach iw_cm (rdma_cm
# creates its iw_cm_id in rdma_connect / rdma_listen): their ratios show
# the noise floor of the VM; connect, disconnect and destroy are iw_cm's.
# The kernel's splat gate still applies (a splat fails the run).
#
#   tools/ab/ab-cmtime.sh [ROUNDS [CONNS]]      (default 5 rounds, 200)
#   tools/ab/ab-cmtime.sh --trace-cost [ROUNDS [CONNS]]
#
# --trace-cost: the baseline is not the C iw_cm but ours built without the
# tracepoint calls (IWCM_NO_TRACEPOINTS=1, from a copy of the tree in the
# results directory), so the ratio is the cost of the tracepoints compiled
# in and disabled.
#
# The table goes to stdout and to results/ab-cmtime-<time>/table.md.  On
# TCG about 40 s per round and iw_cm; KVM is used where it works.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
trace_cost=0
if [ "${1:-}" = --trace-cost ]; then
	trace_cost=1
	shift
fi
rounds=${1:-5}
conns=${2:-200}
case "$rounds$conns" in
*[!0-9]*) echo "usage: $0 [ROUNDS [CONNS]]" >&2; exit 2 ;;
esac
[ -f drivers/infiniband/core/iw_cm/iw_cm.ko ] || { echo "build first: make modules siw" >&2; exit 2; }

stamp=$(date +%Y%m%d-%H%M%S)
abdir=${AB_RESULTS_DIR:-$top/results/ab-cmtime-$stamp}
mkdir -p "$abdir"
out=$abdir/vm.out
base_ko=
base_name="C iw_cm"
if [ $trace_cost = 1 ]; then
	# shellcheck source=/dev/null
	. "$top/tools/kernel/env.sh"
	src=$abdir/notrace-src
	mkdir -p "$src"
	git -C "$top" ls-files -z | (cd "$top" && xargs -0 cp --parents -t "$src")
	if ! make -s -C "$KDIR" M="$src" "${KMAKE_ARGS[@]}" IWCM_NO_TRACEPOINTS=1 modules >"$abdir/notrace-build.log" 2>&1; then
		tail -n 20 "$abdir/notrace-build.log"
		echo "ab-cmtime: building the no-tracepoint iw_cm failed" >&2
		exit 2
	fi
	base_ko=$src/drivers/infiniband/core/iw_cm/iw_cm.ko
	base_name="Rust, no tracepoints"
fi
IWCM_RESULTS_DIR=$abdir AB_ROUNDS=$rounds AB_CONNS=$conns \
	tools/vm/run.sh --name ab-cmtime --timeout $((rounds * 2 * 150 + 300)) -- \
	env AB_ROUNDS="$rounds" AB_CONNS="$conns" AB_BASE_KO="$base_ko" \
	"$top/tools/ab/ab-cmtime-guest.sh" >"$out" 2>&1
vmrc=$?
grep -E "^(FAILED|ab-cmtime:)" "$out"

table=$abdir/table.md
{
	echo "cmtime -c $conns over siw, $rounds rounds per iw_cm in one VM boot ($(uname -m), kernel test VM), median us per connection:"
	echo
	[ $trace_cost = 1 ] && echo "Baseline: the Rust iw_cm built without its tracepoint calls; 'Rust iw_cm': with them, disabled."
	[ $trace_cost = 1 ] && echo
	echo "| step | $base_name | Rust iw_cm | Rust / baseline | rounds (baseline, Rust) |"
	echo "|---|---|---|---|---|"
	grep -E "^RESULT " "$out" | awk '
		{ v[$2, $4, ++n[$2, $4]] = $5; steps[$4] = 1 }
		function median(impl, step,    k, i, j, t, a) {
			k = n[impl, step]
			if (k == 0) return -1
			for (i = 1; i <= k; i++) a[i] = v[impl, step, i]
			for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
				if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
		}
		END {
			split("create_id resolve_addr resolve_route create_qp connect disconnect destroy", order, " ")
			for (o = 1; o <= 7; o++) {
				s = order[o]
				if (!(s in steps)) continue
				c = median("c", s); r = median("rust", s)
				ratio = (c > 0 && r >= 0) ? sprintf("%.2f", r / c) : "n/a"
				printf "| %s | %.1f | %.1f | %s | %d, %d |\n", s, c, r, ratio, n["c", s], n["rust", s]
			}
		}'
	echo
	echo "VM exit status $vmrc; raw lines in $out"
} | tee "$table"
exit $vmrc
