#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# `make install KVER=7.3.4+deb13-amd64 [INSTALL_MOD_PATH=DIR]`: iw_cm.ko
# built for Debian's kernel (tools/distro/build.sh) installed as
# DIR/lib/modules/KVER/updates/iw_cm.ko, where modprobe prefers it to the
# kernel's own iw_cm.ko.xz (Debian's depmod searches updates/ first), then
# depmod.  The sample ULP and the test siw are not installed.
#
#   tools/distro/install.sh KVER [DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
kver=${1:?usage: $0 KVER [INSTALL_MOD_PATH]}
root=${2:-}
[ "$kver" = "$DISTRO_KREL" ] ||
	{ echo "install: KVER $kver is not Debian's $DISTRO_KREL (the kernel tools/distro/ builds for); without KVER, make install uses the test kernel" >&2; exit 1; }
# The build and the copy under build.sh's lock (another build replaces
# $DISTRO_MODS/src); IWCM_DISTRO_BUILT=1: tools/distro/vm-test.sh has just
# built it, under that lock.
distro_lock
[ -n "${IWCM_DISTRO_BUILT:-}" ] || "$here/build.sh"
ko=$DISTRO_MODS/src/drivers/infiniband/core/iw_cm/iw_cm.ko
dst=$root/lib/modules/$kver/updates
mkdir -p "$dst"
install -m 0644 "$ko" "$dst/iw_cm.ko"
depmod ${root:+-b "$root"} -a "$kver"
echo "install: $dst/iw_cm.ko ($(modinfo -F vermagic "$dst/iw_cm.ko")); depmod -a $kver done"
