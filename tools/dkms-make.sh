#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# DKMS's build command (dkms.conf MAKE[0]), run in DKMS's copy of this
# repository:
#
#   tools/dkms-make.sh KERNELVER KERNEL_SOURCE_DIR
#   tools/dkms-make.sh --clean
#
# A Rust module builds only against a tree with the kernel's Rust build
# artefacts (rust/libkernel.rmeta and friends, made by the same rustc):
#   - KERNEL_SOURCE_DIR has them (a kernel built here, such as the test
#     kernel): make -C KERNEL_SOURCE_DIR M=. with tools/kernel/env.sh's
#     rustc and bindgen (and LLVM=-19 when that kernel was built with clang);
#   - KERNELVER is Debian's $DISTRO_KREL, whose headers package ships none:
#     tools/distro/build.sh --src . makes them once in a trixie chroot with
#     Debian's rustc 1.85.1 and builds there (needs root, `make deps` done
#     once -- linux-source-7.3 from trixie-backports -- and network the
#     first time: debootstrap and Debian's packages);
#   - anything else: one line saying what is missing, exit 1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(pwd)
# (DKMS's autoinstall may run without HOME: the caches live under it.)
: "${HOME:=$(getent passwd "$(id -u)" | cut -d: -f6)}"
export HOME
if [ "${1:-}" = --clean ]; then
	rm -f drivers/infiniband/core/iw_cm/*.ko samples/rdma/rust_rdma_ulp/*.ko
	exit 0
fi
krel=${1:?usage: $0 KERNELVER KERNEL_SOURCE_DIR}
ksrc=${2:?usage: $0 KERNELVER KERNEL_SOURCE_DIR}
if [ -f "$ksrc/rust/libkernel.rmeta" ]; then
	# The toolchain this project builds kernels with (tools/kernel/env.sh:
	# clang-19/lld-19 as LLVM=-19, Debian's rustc, bindgen): LLVM only for a
	# clang-built kernel.
	# shellcheck source=kernel/env.sh
	. "$here/kernel/env.sh"
	args=(RUSTC="$RUSTC_BIN" BINDGEN="$BINDGEN_BIN")
	grep -q '^CONFIG_CC_IS_CLANG=y' "$ksrc/.config" && args+=(LLVM="$LLVM_SUFFIX")
	exec make -C "$ksrc" M="$src" "${args[@]}" modules
fi
# shellcheck source=distro/env.sh
. "$here/distro/env.sh"
if [ "$krel" = "$DISTRO_KREL" ]; then
	exec "$here/distro/build.sh" --src "$src"
fi
echo "iw_cm: $ksrc has no Rust build artefacts (rust/libkernel.rmeta) and $krel is not Debian's $DISTRO_KREL: build against the kernel's full build tree (Documentation/debian.rst)" >&2
exit 1
