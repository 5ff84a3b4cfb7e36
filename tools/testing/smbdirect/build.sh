#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Build the test smbdirect: the ULP kernel's own SMB Direct transport
# (fs/smb/smbdirect/, shared by the cifs client and ksmbd), copied from its
# source tree and patched with the fixes in this folder (see each patch's
# message), as an out-of-tree smbdirect.ko in
# tools/testing/smbdirect/build/smbdirect/ (never committed).  The VM
# (tools/vm/run.sh) puts it in place of the ULP kernel's smbdirect.ko, with
# the C and the Rust iw_cm alike; IWCM_SMBDIRECT=stock keeps the kernel's.
# The kernel is built without MODVERSIONS, so cifs.ko and ksmbd.ko bind to
# the test module's exports as to the kernel's.
#
#   build.sh            build/smbdirect/smbdirect.ko (the fixes)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
IWCM_KFLAVOUR=ulp
. "$here/../../kernel/env.sh"

[ -f "$KDIR/Module.symvers" ] || { echo "smbdirect: no ULP kernel at $KDIR (run: IWCM_KFLAVOUR=ulp make kernel)" >&2; exit 1; }
src=$KSRC/fs/smb/smbdirect
[ -f "$src/connection.c" ] || { echo "smbdirect: no smbdirect source at $src" >&2; exit 1; }

patches=("$here"/*.patch)
out=$here/build
want="$src $KDIR $(cat "${patches[@]}" "$0" | sha256sum | cut -c1-16)"
if [ ! -f "$out/.source" ] || [ "$(cat "$out/.source")" != "$want" ]; then
	rm -rf "$out"
	# The sources include "../common/smb2status.h": keep the layout.
	mkdir -p "$out/smbdirect" "$out/common"
	cp "$src"/*.c "$src"/*.h "$out/smbdirect/"
	cp "$KSRC/fs/smb/common/smb2status.h" "$out/common/"
	for p in "${patches[@]}"; do
		patch -s -d "$out/smbdirect" -p4 < "$p"
	done
	sed 's/^obj-$(CONFIG_SMBDIRECT)/obj-m/' "$src/Makefile" > "$out/smbdirect/Kbuild"
	grep -q '^obj-m' "$out/smbdirect/Kbuild" || { echo "smbdirect: unexpected $src/Makefile" >&2; exit 1; }
	echo "$want" > "$out/.source"
fi
make -C "$KDIR" M="$out/smbdirect" "${KMAKE_ARGS[@]}" modules
