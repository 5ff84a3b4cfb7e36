#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The in-kernel ULP selftests looped, one VM boot after another, with each
# iw_cm in turn (C, then ours, then C, ...), to reproduce an intermittent
# fault or to show it does not come in N boots: `make ulp-loop BOOTS=20
# TESTS="nfs_rdma.sh smb_direct.sh"`.  Every boot runs on the ULP flavour
# of the test kernel (tools/ulp-tree.sh) with the usual gates (any splat
# fails the boot).  Prints one line per boot and the totals per iw_cm:
# boots, failed boots, splat lines (the first of each boot's reports).
#
#   tools/stress/ulp-loop.sh BOOTS [TEST...]
#
# Environment: IWCM_ULP_LOOP_IMPLS (default "c rust"), IWCM_RESULTS_DIR.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
boots=${1:-5}
shift || true
case "$boots" in ''|*[!0-9]*) echo "ulp-loop: BOOTS must be a number" >&2; exit 2 ;; esac
tests=${*:-nfs_rdma.sh smb_direct.sh iser.sh}
impls=${IWCM_ULP_LOOP_IMPLS:-c rust}
tree=$("$top/tools/ulp-tree.sh" | tail -n1) && [ -d "$tree/tools/vm" ] ||
	{ echo "ulp-loop: no ULP kernel and modules (tools/ulp-tree.sh)" >&2; exit 1; }
export IWCM_RESULTS_DIR=${IWCM_RESULTS_DIR:-$top/results/ulp-loop-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$IWCM_RESULTS_DIR"
declare -A n_boots n_failed
for impl in $impls; do n_boots[$impl]=0; n_failed[$impl]=0; done
echo "ulp-loop: $boots boots per iw_cm ($impls), tests: $tests; results in $IWCM_RESULTS_DIR"
for ((b = 1; b <= boots; b++)); do
	for impl in $impls; do
		log=$IWCM_RESULTS_DIR/boot-$b-$impl.out
		IWCM_KFLAVOUR=ulp "$tree/tools/vm/run.sh" --name "ulp-$impl-$b" --timeout 2400 -- \
			env IWCM_TESTS="$tests" "$tree/tools/vm/guest-tests.sh" "$impl" > "$log" 2>&1
		rc=$?
		n_boots[$impl]=$((n_boots[$impl] + 1))
		res=$(grep -cE "^not ok [0-9]+ selftests: iw_cm: " "$log")
		splat=$(sed -n '/^splat-check: /,+3p' "$log" | grep -E "WARNING:|BUG:|KASAN|INFO: task|Oops|unreferenced" | head -n 1)
		reports=$(grep -h "report (iw_cm" "$log" | sed 's/.*report (iw_cm [a-z]*): //' | tr '\n' ';')
		if [ "$rc" -ne 0 ]; then
			n_failed[$impl]=$((n_failed[$impl] + 1))
			echo "ulp-loop: boot $b $impl: FAILED (exit $rc, $res failed tests${splat:+, splat: $splat}) $log"
		else
			echo "ulp-loop: boot $b $impl: ok ($reports)"
		fi
	done
done
bad=0
for impl in $impls; do
	echo "ulp-loop: $impl: ${n_boots[$impl]} boots, ${n_failed[$impl]} failed"
	[ "${n_failed[$impl]}" -eq 0 ] || bad=1
done
exit $bad
