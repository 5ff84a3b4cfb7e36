#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# `make selftest T=rping.sh [IMPL=rust|c]`: one VM boot of the test kernel
# running the named selftests (tools/testing/selftests/iw_cm/) with the
# chosen iw_cm, after building what they need.  The in-kernel ULP tests
# (nfs_rdma.sh, smb_direct.sh, iser.sh, nvme_flap.sh) boot the ULP flavour
# of the test kernel with the modules tools/ulp-tree.sh builds for it.
# The KTAP output and the console log are under results/.
#
#   tools/selftest.sh "TEST..." [rust|c]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tests=${1:?usage: $0 \"TEST...\" [rust|c]}
impl=${2:-rust}
case "$impl" in rust|c) ;; *) echo "selftest: IMPL must be rust or c, not '$impl'" >&2; exit 2 ;; esac
src=$top/tools/testing/selftests/iw_cm
ulp=0
for t in $tests; do
	[ -x "$src/$t" ] || { echo "selftest: no test $t in $src" >&2; exit 2; }
	case "$t" in nfs_rdma.sh|smb_direct.sh|iser.sh|nvme_flap.sh) ulp=1 ;; esac
done
"$top/tools/setup-deps.sh"
if [ $ulp -eq 1 ]; then
	tree=$("$top/tools/ulp-tree.sh" | tail -n1)
	export IWCM_KFLAVOUR=ulp
else
	tree=$top
	"$top/tools/kernel/build-kernel.sh"
	make -C "$top" modules siw rdma_cm
fi
# shellcheck disable=SC2086
exec "$tree/tools/vm/run.sh" --name "selftest-$impl" --timeout 2400 -- \
	env IWCM_TESTS="$tests" "$tree/tools/vm/guest-tests.sh" "$impl"
