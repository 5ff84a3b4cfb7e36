#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Run the siw hot-unplug stress in the test VM with our iw_cm:
#   tools/stress/run-stress.sh [-c CYCLES] [-m IO_QUEUES] [-s SEED]
# The test kernel carries KASAN; the nvme-free soak is tools/stress/soak.sh.
# The VM's own splat gate and kmemleak scan apply on top of the script's
# per-cycle gates.  IWCM_IMPL=c runs it against the stock iw_cm.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cycles=20
args=()
while [ $# -gt 0 ]; do
	case "$1" in
	-c) cycles=$2; args+=(-c "$2"); shift 2 ;;
	-m|-s) args+=("$1" "$2"); shift 2 ;;
	*) echo "usage: $0 [-c cycles] [-m io_queues] [-s seed]" >&2; exit 2 ;;
	esac
done
# About 15 s per cycle under TCG, plus boot; generous guest watchdog.
timeout=$((cycles * 60 + 300))
cd "$top"
exec tools/vm/run.sh --name "stress-${IWCM_IMPL:-rust}-$cycles" --timeout "$timeout" -- \
	env IWCM_IMPL="${IWCM_IMPL:-rust}" tools/stress/unplug-stress.sh "${args[@]}"
