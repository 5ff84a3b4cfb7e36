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

work=$DISTRO_MODS/vm
kmods=$DISTRO_PKGS/root/usr/lib/modules/$DISTRO_KREL
rm -rf "$work"
mkdir -p "$work/lib/modules" "$work/initrd"/{bin,dev,proc,sys,newroot,mods}
cp -al "$kmods" "$work/lib/modules/"
# `make install KVER=...` into that tree (updates/iw_cm.ko and depmod): the
# guest checks that modprobe picks ours before the tests start.
IWCM_DISTRO_BUILT=1 "$here/install.sh" "$DISTRO_KREL" "$work"

ird=$work/initrd
cp /bin/busybox "$ird/bin/"
mods="netfs 9pnet 9pnet_virtio 9p overlay configfs"
for m in $mods; do
	f=$(find "$kmods/kernel" -name "$m.ko.xz" | head -n1)
	[ -n "$f" ] || { echo "distro: no $m.ko.xz in $kmods" >&2; exit 1; }
	xz -dc "$f" > "$ird/mods/$m.ko"
done
cat > "$ird/init" <<INIT
#!/bin/busybox sh
# The initramfs of tools/distro/vm-test.sh: the modules the 9p root needs,
# then the host root, then the init= program on it.
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs devtmpfs /dev
for m in $mods; do
	/bin/busybox insmod /mods/\$m.ko || echo "initrd: insmod \$m failed"
done
init=\$(/bin/busybox sed -n 's/.* init=\([^ ]*\).*/\1/p' /proc/cmdline)
/bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro hostroot /newroot ||
	{ echo "initrd: cannot mount the 9p root"; /bin/busybox poweroff -f; }
echo "initrd: 9p root mounted, running \$init"
/bin/busybox umount /proc
/bin/busybox umount /dev
exec /bin/busybox switch_root /newroot "\$init"
INIT
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"

t1=$(date +%s)
rc=0
IWCM_VM_KERNEL=$kmods/vmlinuz IWCM_VM_KREL=$DISTRO_KREL IWCM_VM_KMODS=$work \
IWCM_VM_INITRD=$work/initrd.gz IWCM_RDMA_CM=stock IWCM_C_IWCM=stock IWCM_QUICK=${IWCM_QUICK:-} \
	"$IWCM_TOP/tools/vm/run.sh" --name distro --timeout 1800 -- \
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
