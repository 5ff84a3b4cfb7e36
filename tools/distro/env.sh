# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# shellcheck shell=bash
# Sourced by tools/distro/*.sh: Debian's own kernel (issue 14), where its
# packages, the trixie build root and the Rust build tree live.
#
# Debian builds linux-image-$DISTRO_KREL from the same source package as
# linux-source-7.3 (tools/setup-deps.sh installs it for the test kernel), with
# gcc-14, rustc 1.85.1 and bindgen 0.71.1 from trixie.  Rust symbol names
# carry a hash of the compiler and crate metadata, so the Rust artefacts a
# module builds against must come from that source, that .config and that
# rustc: the build tree below is made in a trixie chroot with trixie's
# toolchain, from the headers package's .config.
#
#   $DISTRO_DIR/trixie-root        debootstrap'd trixie with the toolchain
#   $DISTRO_DIR/pkgs-$DISTRO_PKGVER    the Debian .debs and their contents (pkgs/*/)
#   $DISTRO_BUILD                  O= build tree: generated headers, rust/*.rmeta,
#                                  Module.symvers of the Debian image
#   $DISTRO_BUILD-mods             our modules built for it (iw_cm.ko, the sample, test siw)

. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../kernel" && pwd)/env.sh"
DISTRO_KREL=${DISTRO_KREL:-7.3.4+deb13-amd64}
DISTRO_PKGVER=${DISTRO_PKGVER:-$KSRC_PKGVER}
DISTRO_SUITE=${DISTRO_SUITE:-trixie}
DISTRO_DIR=$IWCM_CACHE/distro
DISTRO_ROOT=$DISTRO_DIR/$DISTRO_SUITE-root
DISTRO_PKGS=$DISTRO_DIR/pkgs-$DISTRO_PKGVER
DISTRO_BUILD=$DISTRO_DIR/build-$DISTRO_KREL-$DISTRO_PKGVER
DISTRO_MODS=$DISTRO_BUILD-mods
# The make arguments of Debian's own build (the headers package's
# .kernelvariables): gcc-14 as a cross-prefixed compiler, the release name.
DISTRO_KMAKE_ARGS=(ARCH=x86 CROSS_COMPILE=x86_64-linux-gnu- CC=x86_64-linux-gnu-gcc-14
	KERNELRELEASE="$DISTRO_KREL" RUSTC=rustc BINDGEN=bindgen)
# distro_check_versions: the kernel source (linux-source-7.3) must be the
# same upstream version as the image, or neither the packages nor the
# build tree match.
distro_check_versions() {
	if [ "$DISTRO_PKGVER" = unknown ]; then
		echo "distro: linux-source-$KVER_SERIES is not installed: run make deps (it adds trixie-backports)" >&2
		return 1
	fi
	case "$DISTRO_PKGVER" in
	"${DISTRO_KREL%%+*}"-*) ;;
	*) echo "distro: linux-source-$KVER_SERIES is $DISTRO_PKGVER, but DISTRO_KREL=$DISTRO_KREL is ${DISTRO_KREL%%+*}: set DISTRO_KREL to the release of the same version (e.g. ${DISTRO_PKGVER%%-*}+deb13-amd64)" >&2
	   return 1 ;;
	esac
}
# distro_lock: take $DISTRO_DIR/mods.lock (fd 8) for the rest of the
# script, once per process tree: set-up, the build (which replaces
# $DISTRO_MODS/src), install's copy and vm-test's guest run under it.
distro_lock() {
	[ -z "${IWCM_DISTRO_LOCKED:-}" ] || return 0
	mkdir -p "$DISTRO_DIR"
	exec 8>"$DISTRO_DIR/mods.lock"
	flock -n 8 || { echo "distro: waiting for another distro build or VM test (lock $DISTRO_DIR/mods.lock)"; flock 8; }
	export IWCM_DISTRO_LOCKED=1
}
# The headers of the image (extracted from linux-headers-$DISTRO_KREL).
DISTRO_HDR=$DISTRO_PKGS/root/usr/src/linux-headers-$DISTRO_KREL

# distro_chroot CMD...: run CMD in the trixie root, in a mount namespace of
# its own (the bind mounts vanish with it): the kernel source read-only, the
# build tree, the module tree, the packages and $DISTRO_SRC (when set: a
# module source tree elsewhere, DKMS's) at their host paths.
distro_chroot() {
	unshare --mount --propagation private bash -c '
		set -e
		r=$1; shift
		for d in "$KSRC:ro" "$DISTRO_PKGS:ro" "$DISTRO_BUILD:rw" "$DISTRO_MODS:rw" ${DISTRO_SRC:+"$DISTRO_SRC:rw"}; do
			p=${d%:*}
			mkdir -p "$r$p"
			mount --bind "$p" "$r$p"
			[ "${d##*:}" = rw ] || mount -o remount,bind,ro "$r$p"
		done
		mount -t proc proc "$r/proc"
		mount --rbind /dev "$r/dev"
		exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
	' _ "$DISTRO_ROOT" "$@"
}
export KSRC DISTRO_PKGS DISTRO_BUILD DISTRO_MODS

# distro_vm_env WORK [install]: Debian's kernel ready for tools/vm/run.sh.
# WORK gets a hard-linked copy of the package's module tree (with
# "install": our iw_cm.ko installed into it, updates/ and depmod, as `make
# install KVER=...` does; without, the tree is Debian's own, depmod run on
# it, and the tests insmod ours from the tree build.sh made) and an
# initramfs:
# busybox-static and the six modules the 9p root needs (netfs, 9pnet,
# 9pnet_virtio, 9p, overlay, configfs; Debian builds them as modules),
# which mounts the host root over 9p and hands over to the init= program
# (tools/vm/guest-init.sh).  Exports the variables run.sh reads for another
# kernel (IWCM_VM_KERNEL, IWCM_VM_KREL, IWCM_VM_KMODS, IWCM_VM_INITRD) and
# IWCM_RDMA_CM=stock, IWCM_C_IWCM=stock: Debian's own rdma_cm and iw_cm.
# Call under distro_lock, after build.sh.
distro_vm_env() {
	local work=$1 install=${2:-} kmods ird mods m f
	kmods=$DISTRO_PKGS/root/usr/lib/modules/$DISTRO_KREL
	rm -rf "$work"
	mkdir -p "$work/lib/modules" "$work/initrd"/{bin,dev,proc,sys,newroot,mods}
	cp -al "$kmods" "$work/lib/modules/"
	if [ "$install" = install ]; then
		IWCM_DISTRO_BUILT=1 "$IWCM_TOP/tools/distro/install.sh" "$DISTRO_KREL" "$work" || return 1
	else
		# (The package ships no modules.dep: its postinst runs depmod.)
		depmod -b "$work" -a "$DISTRO_KREL" || return 1
	fi
	ird=$work/initrd
	cp /bin/busybox "$ird/bin/"
	mods="netfs 9pnet 9pnet_virtio 9p overlay configfs"
	for m in $mods; do
		f=$(find "$kmods/kernel" -name "$m.ko.xz" | head -n1)
		[ -n "$f" ] || { echo "distro: no $m.ko.xz in $kmods" >&2; return 1; }
		xz -dc "$f" > "$ird/mods/$m.ko"
	done
	cat > "$ird/init" <<INIT
#!/bin/busybox sh
# The initramfs of tools/distro/env.sh's distro_vm_env: the modules the 9p
# root needs, then the host root, then the init= program on it.
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
	(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz" || return 1
	export IWCM_VM_KERNEL=$kmods/vmlinuz IWCM_VM_KREL=$DISTRO_KREL IWCM_VM_KMODS=$work \
		IWCM_VM_INITRD=$work/initrd.gz IWCM_RDMA_CM=stock IWCM_C_IWCM=stock
}
