#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The ULP flavour of the test kernel (tools/kernel/ulp.fragment: NFS/RDMA,
# SMB Direct, iSER) and the out-of-tree modules built against it: our
# iw_cm.ko, the sample ULP, the test siw and the test rdma_cm.  Modules
# built against the lean kernel must not be loaded into this one (other
# struct layouts, another Rust `kernel` crate), and Kbuild builds an
# external module in its source folder, so they are built in a copy of the
# repository's tracked files: $KCACHE/tree of the ULP kernel (rsync keeps
# the times, make rebuilds what changed).  That copy's tools/vm/run.sh
# boots the ULP kernel with its modules (tools/check.sh's ULP jobs).
# The same for the trace flavour (IWCM_KFLAVOUR=trace: the irqsoff tracer,
# make bench's irqsoff group): its own copy under its own $KCACHE.
#
#   tools/ulp-tree.sh        build what is missing; the copy's path is the
#                            last line of the output
#
# Environment: IWCM_KFLAVOUR=trace for the trace flavour (else ulp); as
# tools/kernel/env.sh (IWCM_CACHE, ...).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# (Any flavour but trace means ulp, as before: callers may have lean in
# their environment.)
[ "${IWCM_KFLAVOUR:-}" = trace ] || IWCM_KFLAVOUR=ulp
export IWCM_KFLAVOUR
# shellcheck source=/dev/null
. "$top/tools/kernel/env.sh"

"$top/tools/kernel/build-kernel.sh" >&2
tree=$KCACHE/tree
mkdir -p "$tree"
# The tracked files present in the work tree (as tools/distro/build.sh).
git -c safe.directory="$top" -C "$top" ls-files -z |
	(cd "$top" && while IFS= read -r -d '' f; do [ ! -e "$f" ] || printf '%s\0' "$f"; done) |
	rsync -a --from0 --files-from=- "$top/" "$tree/"
t=$(date +%s)
if ! make -C "$tree" modules siw rdma_cm > "$KCACHE/tree-build.log" 2>&1; then
	tail -n 30 "$KCACHE/tree-build.log" >&2
	echo "ulp-tree: module build against the $IWCM_KFLAVOUR kernel failed ($KCACHE/tree-build.log)" >&2
	exit 1
fi
echo "ulp-tree: modules built against $KDIR in $(( $(date +%s) - t )) s" >&2
echo "$tree"
