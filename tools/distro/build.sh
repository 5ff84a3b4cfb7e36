#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Build iw_cm.ko, the sample ULP and the test siw for Debian's own kernel
# (linux-image-$DISTRO_KREL; issue 14), in the trixie root tools/distro/setup.sh
# made.
#
#   1. The Rust build tree ($DISTRO_BUILD, once): Debian's linux-source-7.3
#      with the headers package's .config, `make modules_prepare` with gcc-14 and
#      rustc 1.85.1 as Debian's build ran them (this builds rust/: core,
#      kernel, macros, ... and their .rmeta), the image's Module.symvers
#      and vmlinux (BTF base) copied in.  `olddefconfig` must leave the
#      .config unchanged: a toolchain that differs from Debian's shows up as
#      a changed CONFIG_*_VERSION_TEXT line, and the build stops there.
#   2. The modules, from the tracked files of this repository copied to
#      $DISTRO_MODS/src (the test kernel's objects in the work tree stay
#      apart): `make -C $DISTRO_BUILD M=...` in the chroot.
#   3. tools/distro/check-symbols.sh: every symbol the modules need, Rust
#      ones included, is in the image's Module.symvers (or in the set).
#   4. modinfo vermagic: the same as the image's own iw_cm.ko's
#      ("$DISTRO_KREL SMP preempt mod_unload", no modversions in Debian's config).
#
#   tools/distro/build.sh [--src DIR]
#
# --src DIR: build the modules in DIR (a copy of this repository: DKMS's
# build directory, tools/dkms-make.sh) instead of $DISTRO_MODS/src; the test
# siw is then not built.
#
# Prints the time of each step.  Exit status non-zero on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
own_src=
if [ "${1:-}" = --src ]; then
	own_src=$(cd "${2:?--src DIR}" && pwd)
	export DISTRO_SRC=$own_src
fi
[ "$(id -u)" -eq 0 ] || { echo "distro: needs root (chroot and mount namespaces)" >&2; exit 1; }
# One set-up and build at a time, and none while tools/distro/vm-test.sh's
# guest runs the modules and selftests of $DISTRO_MODS/src, or install.sh
# copies from there (they hold the lock and say so).
distro_lock
"$here/setup.sh"
t_all=$(date +%s)
mkdir -p "$DISTRO_BUILD" "$DISTRO_MODS"
iwcm_extract_source || exit 1

# ---- 1. the Rust build tree
key=$( { cat "$DISTRO_HDR/.config"; chroot "$DISTRO_ROOT" rustc --version; chroot "$DISTRO_ROOT" bindgen --version;
	chroot "$DISTRO_ROOT" x86_64-linux-gnu-gcc-14 --version | head -n1; echo "$KSRC_PKGVER"; } | sha256sum | cut -c1-16)
if [ "$(cat "$DISTRO_BUILD/.done" 2>/dev/null)" != "$key" ]; then
	t=$(date +%s)
	echo "distro: preparing the Rust build tree for $DISTRO_KREL in $DISTRO_BUILD (gcc-14, $(chroot "$DISTRO_ROOT" rustc --version | cut -d' ' -f1-2); some minutes)"
	rm -rf "$DISTRO_BUILD"; mkdir -p "$DISTRO_BUILD"
	cp "$DISTRO_HDR/.config" "$DISTRO_BUILD/.config"
	distro_chroot make -s -C "$KSRC" O="$DISTRO_BUILD" "${DISTRO_KMAKE_ARGS[@]}" olddefconfig \
		> "$DISTRO_DIR/build-tree.log" 2>&1 || { tail -n 20 "$DISTRO_DIR/build-tree.log"; exit 1; }
	if ! diff -u <(grep -v '^#' "$DISTRO_HDR/.config") <(grep -v '^#' "$DISTRO_BUILD/.config") > "$DISTRO_DIR/config.diff"; then
		cat "$DISTRO_DIR/config.diff"
		echo "distro: olddefconfig changed Debian's .config (above): this toolchain is not the one Debian built $DISTRO_KREL with" >&2
		exit 1
	fi
	distro_chroot make -C "$KSRC" O="$DISTRO_BUILD" "${DISTRO_KMAKE_ARGS[@]}" -j"$(nproc)" modules_prepare \
		>> "$DISTRO_DIR/build-tree.log" 2>&1 || { tail -n 30 "$DISTRO_DIR/build-tree.log"; echo "distro: make modules_prepare failed ($DISTRO_DIR/build-tree.log)" >&2; exit 1; }
	cp "$DISTRO_HDR/Module.symvers" "$DISTRO_HDR/vmlinux" "$DISTRO_BUILD/"
	for f in libkernel.rmeta libcore.rmeta libmacros.so; do
		[ -f "$DISTRO_BUILD/rust/$f" ] || { echo "distro: make modules_prepare left no rust/$f" >&2; exit 1; }
	done
	echo "$key" > "$DISTRO_BUILD/.done"
	echo "distro: build tree ready in $(( $(date +%s) - t )) s"
fi

# ---- 2. the modules
t=$(date +%s)
if [ -n "$own_src" ]; then
	src=$own_src
else
	src=$DISTRO_MODS/src
	rm -rf "$src"; mkdir -p "$src"
	# (The tracked files present in the work tree; safe.directory: root
	# copying a repository another user owns.)
	git -c safe.directory="$IWCM_TOP" -C "$IWCM_TOP" ls-files -z |
		(cd "$IWCM_TOP" && while IFS= read -r -d '' f; do [ ! -e "$f" ] || printf '%s\0' "$f"; done) |
		(cd "$IWCM_TOP" && xargs -0 cp --parents -t "$src")
fi
# (srctree is $KSRC: the port mapper sources come from there, as Kbuild says.)
distro_chroot make -C "$DISTRO_BUILD" M="$src" "${DISTRO_KMAKE_ARGS[@]}" -j"$(nproc)" modules \
	> "$DISTRO_MODS/build.log" 2>&1 || { tail -n 30 "$DISTRO_MODS/build.log"; echo "distro: module build failed ($DISTRO_MODS/build.log)" >&2; exit 1; }
if [ -n "$own_src" ]; then
	"$here/check-symbols.sh" "$DISTRO_BUILD/Module.symvers" "$src/drivers/infiniband/core/iw_cm/iw_cm.ko"
	echo "distro: iw_cm.ko built in $src for $DISTRO_KREL ($(modinfo -F vermagic "$src/drivers/infiniband/core/iw_cm/iw_cm.ko"))"
	exit 0
fi
# The test siw: Debian does not build siw (CONFIG_RDMA_SIW unset); the
# kernel's siw plus tools/testing/siw/*.patch, as for the test kernel, where
# the selftests look for it (lib.sh: $IWCM_TOP/tools/testing/siw/build/).
siw=$src/tools/testing/siw/build
rm -rf "$siw"; mkdir -p "$siw"
cp "$KSRC"/drivers/infiniband/sw/siw/*.[ch] "$KSRC"/drivers/infiniband/sw/siw/Makefile "$siw/"
for p in "$IWCM_TOP"/tools/testing/siw/*.patch; do patch -s -d "$siw" -p5 < "$p"; done
distro_chroot make -C "$DISTRO_BUILD" M="$siw" "${DISTRO_KMAKE_ARGS[@]}" CONFIG_RDMA_SIW=m modules \
	> "$DISTRO_MODS/siw-build.log" 2>&1 || { tail -n 30 "$DISTRO_MODS/siw-build.log"; echo "distro: siw build failed" >&2; exit 1; }
# The scale benchmark's fake provider and ULP (make bench-distro).
distro_chroot make -C "$DISTRO_BUILD" M="$src/tools/bench/iw_cm_scale" "${DISTRO_KMAKE_ARGS[@]}" modules \
	> "$DISTRO_MODS/scale-build.log" 2>&1 || { tail -n 30 "$DISTRO_MODS/scale-build.log"; echo "distro: iw_cm_scale build failed" >&2; exit 1; }
echo "distro: modules built in $(( $(date +%s) - t )) s"

# ---- 3. the symbols, 4. the vermagic
kos=("$src/drivers/infiniband/core/iw_cm/iw_cm.ko" "$src/samples/rdma/rust_rdma_ulp/rust_rdma_ulp.ko" "$siw/siw.ko"
	"$src/tools/bench/iw_cm_scale/iw_cm_scale.ko")
"$here/check-symbols.sh" "$DISTRO_BUILD/Module.symvers" "${kos[@]}"
want=$(modinfo -F vermagic "$DISTRO_PKGS/root/usr/lib/modules/$DISTRO_KREL/kernel/drivers/infiniband/core/iw_cm.ko.xz")
for ko in "${kos[@]}"; do
	got=$(modinfo -F vermagic "$ko")
	[ "$got" = "$want" ] || { echo "distro: $(basename "$ko") vermagic '$got', the image's modules '$want'" >&2; exit 1; }
done
echo "distro: vermagic '$want' (as the image's own iw_cm.ko)"
echo "distro: done in $(( $(date +%s) - t_all )) s: ${kos[*]}"
