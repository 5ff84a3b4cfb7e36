#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Set-up for Debian's own kernel (issue 14), idempotent: a second run only
# checks.  Needs root (debootstrap, chroot, mount namespaces).
#
#   1. a trixie root ($DISTRO_ROOT) with the toolchain Debian built
#      linux-image-$DISTRO_KREL with: gcc-14, rustc 1.85.1 + rust-src,
#      bindgen 0.71.1 with libclang, and what Kbuild needs;
#   2. the Debian packages of that kernel, from trixie-backports on the
#      mirror tools/setup-deps.sh configured: linux-binary (vmlinuz),
#      linux-modules, linux-base (System.map), linux-headers (its .config, Module.symvers) and
#      linux-kbuild, unpacked into $DISTRO_PKGS/root.
#
# The image is the one Debian ships, not rebuilt: the VM test boots it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# The packages the build tree and the module builds need in the chroot.
# openssl: certs/Kconfig's OPENSSL_SUPPORTS_ML_DSA runs `openssl list
# -key-managers`; without the command olddefconfig drops that line of
# Debian's .config (minbase brings no openssl).
chroot_pkgs="gcc-14 make bc flex bison libelf-dev libssl-dev openssl dwarves kmod cpio patch
	rustc rust-src bindgen libclang-dev python3 xz-utils zstd"
want_rustc="rustc 1.85.1"
distro_check_versions || exit 1
mkdir -p "$DISTRO_DIR"

# ---- 1. the trixie root
if [ ! -x "$DISTRO_ROOT/usr/bin/rustc" ] || [ ! -x "$DISTRO_ROOT/usr/bin/bindgen" ] ||
   [ ! -x "$DISTRO_ROOT/usr/bin/patch" ] || [ ! -x "$DISTRO_ROOT/usr/bin/zstd" ] ||
   [ ! -x "$DISTRO_ROOT/usr/bin/openssl" ]; then
	command -v debootstrap >/dev/null || $SUDO apt-get install -y -q --no-install-recommends debootstrap
	mirror=$(grep -hoE '^(URIs:|deb) +[a-z]+://[^ ]+/debian/?( |$)' \
		/etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
		awk '{print $2}' | head -n1 || true)
	mirror=${mirror:-http://deb.debian.org/debian}
	if [ ! -x "$DISTRO_ROOT/usr/bin/apt-get" ]; then
		echo "distro: debootstrap $DISTRO_SUITE into $DISTRO_ROOT (a few minutes)"
		$SUDO debootstrap --variant=minbase "$DISTRO_SUITE" "$DISTRO_ROOT" "$mirror" \
			> "$DISTRO_DIR/debootstrap.log" 2>&1 ||
			{ tail -n 20 "$DISTRO_DIR/debootstrap.log"; echo "distro: debootstrap failed" >&2; exit 1; }
	fi
	echo "distro: installing the toolchain in the $DISTRO_SUITE root"
	# shellcheck disable=SC2086
	if ! $SUDO chroot "$DISTRO_ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		DEBIAN_FRONTEND=noninteractive sh -c "apt-get update -q && apt-get install -y -q --no-install-recommends $(echo $chroot_pkgs)" \
		> "$DISTRO_DIR/chroot-apt.log" 2>&1; then
		tail -n 20 "$DISTRO_DIR/chroot-apt.log"
		echo "distro: apt-get in the $DISTRO_SUITE root failed" >&2
		exit 1
	fi
fi
v=$($SUDO chroot "$DISTRO_ROOT" rustc --version)
case "$v" in
"$want_rustc "*) ;;
*) echo "distro: the $DISTRO_SUITE root has '$v', Debian's kernel was built with $want_rustc:" \
	"its Rust symbol names would not match" >&2; exit 1 ;;
esac

# ---- 2. the kernel's packages
# (linux-image-* is a meta package now: the image is in linux-binary-*, the
# modules in linux-modules-*, System.map and config in linux-base-*.)
pkgs="linux-binary-$DISTRO_KREL linux-modules-$DISTRO_KREL linux-base-$DISTRO_KREL linux-headers-$DISTRO_KREL linux-headers-${DISTRO_KREL%-*}-common linux-kbuild-${DISTRO_KREL%-*}"
if [ ! -f "$DISTRO_PKGS/.done" ]; then
	mkdir -p "$DISTRO_PKGS/debs"
	(
		cd "$DISTRO_PKGS/debs"
		for p in $pkgs; do
			ls "${p}_${DISTRO_PKGVER}"_*.deb >/dev/null 2>&1 && continue
			# (Old downloads of an earlier set-up, kept in $DISTRO_DIR.)
			if ls "$DISTRO_DIR/${p}_${DISTRO_PKGVER}"_*.deb >/dev/null 2>&1; then
				cp "$DISTRO_DIR/${p}_${DISTRO_PKGVER}"_*.deb .
				continue
			fi
			# (apt's _apt user cannot write here: the download runs as root, said once.)
			apt-get download "$p=$DISTRO_PKGVER" 2> >(grep -v "unsandboxed as root" >&2) ||
				{ echo "distro: cannot download $p=$DISTRO_PKGVER (apt-get update? tools/setup-deps.sh adds trixie-backports)" >&2; exit 1; }
		done
	)
	$SUDO rm -rf "$DISTRO_PKGS/root"
	$SUDO mkdir -p "$DISTRO_PKGS/root"
	for d in "$DISTRO_PKGS"/debs/*.deb; do
		$SUDO dpkg-deb -x "$d" "$DISTRO_PKGS/root"
	done
	$SUDO touch "$DISTRO_PKGS/.done"
fi
[ -f "$DISTRO_PKGS/root/usr/lib/modules/$DISTRO_KREL/vmlinuz" ] || { echo "distro: no vmlinuz in $DISTRO_PKGS/root/usr/lib/modules/$DISTRO_KREL" >&2; exit 1; }
[ -f "$DISTRO_HDR/Module.symvers" ] || { echo "distro: no Module.symvers in $DISTRO_HDR" >&2; exit 1; }
echo "distro: $DISTRO_SUITE root ($v) and the $DISTRO_KREL packages ($DISTRO_PKGVER) ready"
