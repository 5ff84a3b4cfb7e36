#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# `make check-distro` (issue 14): our iw_cm.ko and the test siw, built for
# Debian's own kernel by tools/distro/build.sh, loaded into that kernel --
# Debian's vmlinuz and modules from its packages, not rebuilt -- in QEMU, and
# the selftests rping.sh, ucmatose.sh and nvme_unplug.sh run with them
# (tools/vm/guest-tests.sh rust: the same runner and gates as the test
# kernel's boots: every kernel splat fails the run).
#
# Debian's kernel has 9p, netfs, overlayfs and configfs as modules: a small
# initramfs (busybox-static and those six modules, uncompressed) loads them,
# mounts the host root over 9p and hands over to tools/vm/guest-init.sh.
# The modules tree the guest sees is a hard-linked copy of the package's,
# with our iw_cm.ko installed into it by tools/distro/install.sh (`make
# install KVER=...`: updates/, depmod); the guest checks that modprobe would
# load that one and that its vermagic is the running kernel's.  rdma_cm
# is Debian's own (IWCM_RDMA_CM=stock).  The kernel has no KASAN, lockdep
# or kmemleak: those gates are the test kernel's (make check).
#
#   tools/distro/vm-test.sh [TEST...]     default: rping.sh ucmatose.sh nvme_unplug.sh
#
# Prints the time of the build and of the VM run; exit status non-zero on
# any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
tests=${*:-rping.sh ucmatose.sh nvme_unplug.sh}
t0=$(date +%s)
# The build and the guest's use of $DISTRO_MODS/src under one lock (build.sh
# replaces that tree).
distro_lock
"$here/build.sh"
t_build=$(( $(date +%s) - t0 ))

distro_vm_env "$DISTRO_MODS/vm" install

t1=$(date +%s)
rc=0
IWCM_QUICK=${IWCM_QUICK:-} "$IWCM_TOP/tools/vm/run.sh" --name distro --timeout 1800 -- \
	bash -c 'set -e
		m=$(modinfo -n iw_cm)
		echo "# distro: modprobe iw_cm would load $m ($(modinfo -F vermagic iw_cm)); uname -r $(uname -r)"
		case "$m" in */updates/iw_cm.ko) ;; *) echo "distro: not the installed updates/iw_cm.ko" >&2; exit 1 ;; esac
		case "$(modinfo -F vermagic iw_cm)" in "$(uname -r) "*) ;; *) echo "distro: vermagic is not $(uname -r)" >&2; exit 1 ;; esac
		exec env IWCM_TESTS="$1" "$2/tools/vm/guest-tests.sh" rust' _ "$tests" "$DISTRO_MODS/src" || rc=$?
echo "distro: build/check ${t_build} s, VM run $(( $(date +%s) - t1 )) s, total $(( $(date +%s) - t0 )) s"
if [ "$rc" -eq 0 ]; then
	echo "distro: PASS: $tests on Debian's $DISTRO_KREL with our iw_cm ($(modinfo -F vermagic "$DISTRO_MODS/src/drivers/infiniband/core/iw_cm/iw_cm.ko"))"
else
	echo "distro: FAIL (VM status $rc)"
fi
exit "$rc"
