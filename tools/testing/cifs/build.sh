#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Build the test cifs: the ULP kernel's own SMB client (fs/smb/client/),
# copied from its source tree and patched with the fixes in this folder
# (see each patch's message), as an out-of-tree cifs.ko in
# tools/testing/cifs/build/fs/smb/client/ (never committed).  The VM
# (tools/vm/run.sh) puts it in place of the ULP kernel's cifs.ko, with
# the C and the Rust iw_cm alike; IWCM_CIFS=stock keeps the kernel's.
# The kernel is built without MODVERSIONS, so cifs.ko binds to the
# (test) smbdirect.ko's exports as to the kernel's.
#
#   build.sh            build/fs/smb/client/cifs.ko (the fixes)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
IWCM_KFLAVOUR=ulp
. "$here/../../kernel/env.sh"

[ -f "$KDIR/Module.symvers" ] || { echo "cifs: no ULP kernel at $KDIR (run: IWCM_KFLAVOUR=ulp make kernel)" >&2; exit 1; }
src=$KSRC/fs/smb/client
[ -f "$src/smb2pdu.c" ] || { echo "cifs: no SMB client source at $src" >&2; exit 1; }

patches=("$here"/*.patch)
out=$here/build
want="$src $KDIR $(cat "${patches[@]}" "$0" | sha256sum | cut -c1-16)"
if [ ! -f "$out/.source" ] || [ "$(cat "$out/.source")" != "$want" ]; then
	rm -rf "$out"
	# The sources include "../common/..." and "../../nls/...": keep the
	# kernel's layout.
	mkdir -p "$out/fs/smb" "$out/fs/nls"
	cp -r "$src" "$out/fs/smb/client"
	cp -r "$KSRC/fs/smb/common" "$out/fs/smb/common"
	cp "$KSRC"/fs/nls/*.h "$out/fs/nls/"
	for p in "${patches[@]}"; do
		patch -s -d "$out" -p1 < "$p"
	done
	sed 's/^obj-$(CONFIG_CIFS) /obj-m /' "$src/Makefile" > "$out/fs/smb/client/Kbuild"
	grep -q '^obj-m += cifs.o' "$out/fs/smb/client/Kbuild" || { echo "cifs: unexpected $src/Makefile" >&2; exit 1; }
	echo "$want" > "$out/.source"
fi
make -C "$KDIR" M="$out/fs/smb/client" "${KMAKE_ARGS[@]}" modules
