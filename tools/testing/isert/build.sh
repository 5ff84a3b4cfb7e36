#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Build the test isert: the ULP kernel's own LIO iSER target
# (drivers/infiniband/ulp/isert/), copied from its source tree and patched
# with the fixes in this folder (see each patch's message), as an
# out-of-tree ib_isert.ko in tools/testing/isert/build/ (never committed).
# The VM (tools/vm/run.sh) puts it in place of the ULP kernel's
# ib_isert.ko, with the C and the Rust iw_cm alike; IWCM_ISERT=stock keeps
# the kernel's.
#
#   build.sh            build/ib_isert.ko (the fixes)
#   build.sh --delay    also build-delay/{upstream,fixed}/ib_isert.ko: the
#                       kernel's isert and the fixed one, each with two
#                       module parameters that widen 0001's window, for
#                       repro-removal-race.sh (never loaded by the other
#                       tests): removal_delay_ms sleeps in the
#                       DEVICE_REMOVAL handler after it has started the
#                       connection's teardown and before its wait;
#                       release_delay_ms sleeps in isert_release_work()
#                       between setting ISER_CONN_DOWN and its put.  Each
#                       sleep is logged.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
IWCM_KFLAVOUR=ulp
. "$here/../../kernel/env.sh"

[ -f "$KDIR/Module.symvers" ] || { echo "isert: no ULP kernel at $KDIR (run: IWCM_KFLAVOUR=ulp make kernel)" >&2; exit 1; }
src=$KSRC/drivers/infiniband/ulp/isert
[ -f "$src/ib_isert.c" ] || { echo "isert: no isert source at $src" >&2; exit 1; }

# prepare OUT PATCHES...: a copy of the isert sources with PATCHES applied
# and a Kbuild that builds ib_isert.ko.
prepare() {
	local out=$1
	shift
	rm -rf "$out"
	mkdir -p "$out"
	cp "$src"/ib_isert.c "$src"/ib_isert.h "$out"/
	local p
	for p in "$@"; do
		patch -s -d "$out" -p5 < "$p"
	done
	echo "obj-m := ib_isert.o" > "$out/Kbuild"
}

# add_delays FILE: the two test-only sleeps (see above).
add_delays() {
	python3 - "$1" <<'PY'
import sys
path = sys.argv[1]
s = open(path).read()
def after(s, anchor, code):
    assert s.count(anchor) == 1, anchor
    return s.replace(anchor, anchor + code, 1)
s = after(s, "\t\tisert_conn->dev_removed = true;\n\t\tisert_disconnected_handler(cma_id, event->event);\n",
          "\t\tif (removal_delay_ms) {\n"
          "\t\t\tpr_info(\"removal_delay_ms: %u ms before the removal's wait\\n\", removal_delay_ms);\n"
          "\t\t\tmsleep(removal_delay_ms);\n"
          "\t\t}\n")
s = after(s, "\tisert_conn->state = ISER_CONN_DOWN;\n\tmutex_unlock(&isert_conn->mutex);\n",
          "\tif (release_delay_ms) {\n"
          "\t\tpr_info(\"release_delay_ms: %u ms between ISER_CONN_DOWN and the put\\n\", release_delay_ms);\n"
          "\t\tmsleep(release_delay_ms);\n"
          "\t}\n")
param = ("/* Test only (tools/testing/isert/build.sh --delay). */\n"
         "static unsigned int removal_delay_ms;\n"
         "module_param(removal_delay_ms, uint, 0644);\n"
         "static unsigned int release_delay_ms;\n"
         "module_param(release_delay_ms, uint, 0644);\n\n")
anchor = "static int isert_debug_level;"
assert s.count(anchor) == 1
s = s.replace(anchor, param + anchor, 1)
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
		add_delays "$d/upstream/ib_isert.c"
		prepare "$d/fixed" "${patches[@]}"
		add_delays "$d/fixed/ib_isert.c"
		echo "$want" > "$d/.source"
	fi
	make -C "$KDIR" M="$d/upstream" "${KMAKE_ARGS[@]}" modules
	make -C "$KDIR" M="$d/fixed" "${KMAKE_ARGS[@]}" modules
fi
