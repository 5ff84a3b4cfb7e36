#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Build the test rdma_cm: the test kernel's own rdma_cm (cma.c and its
# trace/configfs parts), copied from its source tree and patched with the
# fixes in this folder (see each patch's message), as an out-of-tree
# rdma_cm.ko in tools/testing/rdma_cm/build/ (never committed).  The VM
# (tools/vm/run.sh) puts it in place of the kernel's rdma_cm.ko for every
# test, with the C and the Rust iw_cm alike; IWCM_RDMA_CM=stock keeps the
# kernel's.
#
#   build.sh            build/rdma_cm.ko (the fixes)
#   build.sh --delay    also build-delay/{upstream,fixed}/rdma_cm.ko: the
#                       kernel's rdma_cm and the fixed one, each with a
#                       module parameter release_delay_ms that sleeps
#                       between cma_release_dev()'s two puts (the window
#                       of 0001) when called on a workqueue worker (a
#                       ULP's release work, ucma's close work; never the
#                       thread that removes the device, which must run
#                       on; each sleep is logged), for repro-gid-race.sh.
#                       Never loaded by the other tests.  The sleep drops
#                       rdma_cm's global lock (cma_process_remove() takes
#                       it for every id: a sleep holding it would keep the
#                       removal from running on, and the window would
#                       open or not by timing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../kernel/env.sh"

[ -f "$KDIR/Module.symvers" ] || { echo "rdma_cm: no test kernel at $KDIR (run: make kernel)" >&2; exit 1; }
src=$KSRC/drivers/infiniband/core
[ -f "$src/cma.c" ] || { echo "rdma_cm: no rdma_cm source at $src" >&2; exit 1; }

# prepare OUT PATCHES...: a copy of the core sources with PATCHES applied
# and a Kbuild that builds rdma_cm.ko only (as drivers/infiniband/core/Makefile
# does for CONFIG_INFINIBAND_ADDR_TRANS).
prepare() {
	local out=$1
	shift
	rm -rf "$out"
	mkdir -p "$out"
	cp "$src"/*.c "$src"/*.h "$out"/
	local p
	for p in "$@"; do
		patch -s -d "$out" -p4 < "$p"
	done
	cat > "$out/Kbuild" <<'KB'
obj-m := rdma_cm.o
CFLAGS_cma_trace.o += -I$(src)
rdma_cm-y := cma.o cma_trace.o
rdma_cm-$(CONFIG_INFINIBAND_ADDR_TRANS_CONFIGFS) += cma_configfs.o
KB
}

# add_delay FILE FIRST: a release_delay_ms parameter and an msleep right
# after the first of cma_release_dev()'s two puts (FIRST: the line that
# ends it).
add_delay() {
	python3 - "$1" "$2" <<'PY'
import sys
path, first = sys.argv[1], sys.argv[2]
s = open(path).read()
start = s.index("static void cma_release_dev(struct rdma_id_private *id_priv)\n{")
end = s.index("\n}\n", start)
body = s[start:end]
i = body.index(first) + len(first)
body = body[:i] + ("\n\tif (release_delay_ms && (current->flags & PF_WQ_WORKER)) {"
                   "\n\t\tmutex_unlock(&lock);"
                   "\n\t\tpr_info(\"release_delay_ms: %u ms between the puts\\n\", release_delay_ms);"
                   "\n\t\tmsleep(release_delay_ms);"
                   "\n\t\tmutex_lock(&lock);"
                   "\n\t}") + body[i:]
param = ("/* Test only (tools/testing/rdma_cm/build.sh --delay). */\n"
         "static unsigned int release_delay_ms;\n"
         "module_param(release_delay_ms, uint, 0644);\n\n")
s = s[:start] + param + body + s[end:]
if "#include <linux/delay.h>" not in s:
    s = s.replace("#include <linux/module.h>\n", "#include <linux/module.h>\n#include <linux/delay.h>\n", 1)
open(path, "w").write(s)
PY
}

patches=("$here"/*.patch)
out=$here/build
want="$src $KDIR $(cat "${patches[@]}" "$0" | sha256sum | cut -c1-16)"
if [ ! -f "$out/.source" ] || [ "$(cat "$out/.source")" != "$want" ]; then
	prepare "$out" "${patches[@]}"
	echo "$want" > "$out/.source"
fi
make -C "$KDIR" M="$out" "${KMAKE_ARGS[@]}" modules

if [ "${1:-}" = --delay ]; then
	d=$here/build-delay
	if [ ! -f "$d/.source" ] || [ "$(cat "$d/.source")" != "$want" ]; then
		prepare "$d/upstream"
		add_delay "$d/upstream/cma.c" "cma_dev_put(id_priv->cma_dev);"
		prepare "$d/fixed" "${patches[@]}"
		add_delay "$d/fixed/cma.c" "id_priv->id.route.addr.dev_addr.sgid_attr = NULL;
	}"
		echo "$want" > "$d/.source"
	fi
	make -C "$KDIR" M="$d/upstream" "${KMAKE_ARGS[@]}" modules
	make -C "$KDIR" M="$d/fixed" "${KMAKE_ARGS[@]}" modules
fi
