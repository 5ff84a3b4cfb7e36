#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Build the C iw_cm with the port mapper client fixed: the test kernel's
# own iwcm.c, iwpm_util.c and iwpm_msg.c (as drivers/infiniband/core/
# Makefile links them into iw_cm.ko), the two iwpm files with the same
# patches the Rust iw_cm builds them with
# (drivers/infiniband/core/iw_cm/iwpm/*.patch), as an out-of-tree iw_cm.ko
# in tools/testing/iw_cm_c/build/ (never committed).  iwcm.c is not
# changed.
#
# What it is for: the kernel's port mapper client oopses when iwpmd answers
# a registration before the request's buffer is set, so the stock C iw_cm
# cannot run the port mapper tests (iwpmd.sh, iwpm_requests.sh).  With this
# module in place of the kernel's (tools/vm/run.sh IWCM_C_IWCM=iwpm-fixed)
# they run against iwcm.c's own logic: its iw_cm_map(), which adopts a
# mapped address the port mapper never filled in.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../kernel/env.sh"

[ -f "$KDIR/Module.symvers" ] || { echo "iw_cm_c: no test kernel at $KDIR (run: make kernel)" >&2; exit 1; }
src=$KSRC/drivers/infiniband/core
for f in iwcm.c iwcm.h iwpm_util.c iwpm_util.h iwpm_msg.c; do
	[ -f "$src/$f" ] || { echo "iw_cm_c: no $f in $src" >&2; exit 1; }
done
patches=$IWCM_TOP/drivers/infiniband/core/iw_cm/iwpm

out=$here/build
# The sources are copied and patched again when the kernel tree, a source
# or a patch changed; make runs every time (Kbuild rebuilds what changed).
key=$( { echo "$KDIR"; cat "$src/iwcm.c" "$src/iwcm.h" "$src/iwpm_util.c" \
	"$src/iwpm_util.h" "$src/iwpm_msg.c" "$patches"/*.patch "$0"; } | sha256sum | cut -c1-16)
if [ "$(cat "$out/.key" 2>/dev/null)" != "$key" ]; then
	rm -rf "$out"
	mkdir -p "$out"
	cp "$src/iwcm.c" "$src/iwcm.h" "$src/iwpm_util.h" "$out/"
	for f in iwpm_util.c iwpm_msg.c; do
		patch -s --fuzz=0 --no-backup-if-mismatch -r - -o "$out/$f" "$src/$f" "$patches/$f.patch"
	done
	cat > "$out/Kbuild" <<'KB'
obj-m := iw_cm.o
iw_cm-y := iwcm.o iwpm_util.o iwpm_msg.o
ccflags-y += -I$(srctree)/drivers/infiniband/core
KB
	echo "$key" > "$out/.key"
fi
make -s -C "$KDIR" M="$out" "${KMAKE_ARGS[@]}" modules
echo "iw_cm_c: $out/iw_cm.ko (iwcm.c with the port mapper client fixed)"
