#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Build the test provider: the test kernel's own siw, copied from its source
# tree and patched with the fixes in this folder (see each patch's message),
# as an out-of-tree siw.ko in tools/testing/siw/build/ (never committed).
# The VM tests load it instead of the kernel's siw.ko (lib.sh: load_siw),
# for the C and the Rust iw_cm alike.  Also builds flush_test/'s
# siw_flush_test.ko, the test of 0010 (selftests/iw_cm/siw_flush.sh), which
# runs against this siw and against upstream's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../kernel/env.sh"

[ -f "$KDIR/Module.symvers" ] || { echo "siw: no test kernel at $KDIR (run: make kernel)" >&2; exit 1; }
src=$KSRC/drivers/infiniband/sw/siw
[ -d "$src" ] || { echo "siw: no siw source at $src" >&2; exit 1; }

out=$here/build
stamp=$out/.source
want="$src $KDIR $(cat "$here"/*.patch | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
	rm -rf "$out"
	mkdir -p "$out"
	cp "$src"/*.c "$src"/*.h "$src"/Makefile "$out"/
	for p in "$here"/*.patch; do
		patch -s -d "$out" -p5 < "$p"
	done
	echo "$want" > "$stamp"
fi
make -C "$KDIR" M="$out" "${KMAKE_ARGS[@]}" CONFIG_RDMA_SIW=m modules
make -C "$KDIR" M="$here/flush_test" "${KMAKE_ARGS[@]}" modules
