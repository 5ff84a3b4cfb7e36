#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Host test (make hosttest): the bench groups `make demo` runs in its lean
# boot need nothing that boot lacks (tools/demo.sh --check-groups: a
# selection naming scale or irqsoff, which need a module and a kernel
# flavour of their own, failed make demo on 2026-12-07 after 26 minutes),
# and the check itself refuses what it must.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$here/groups.sh"
fails=0
t() {	# t WANT(0|1) GROUPS...: bench_groups_lean's verdict
	local want=$1 got
	shift
	bench_groups_lean "$@" >/dev/null
	got=$?
	if [ "$got" -eq "$want" ]; then
		echo "ok: bench_groups_lean $* -> $got"
	else
		echo "FAIL: bench_groups_lean $* -> $got, want $want"
		fails=$((fails + 1))
	fi
}
t 0 hol
t 0 cmtime ucmatose send_lat hol mem teardown
t 1 scale
t 1 hol irqsoff
t 1 bogus
t 1
for g in $BENCH_ALL_GROUPS; do
	bench_group_needs "$g" >/dev/null || { echo "FAIL: $g listed but unknown"; fails=$((fails + 1)); }
done
# Every group bench-guest.sh runs is listed, and no other.
run=$(grep -oE 'wanted [a-z_]+' "$here/bench-guest.sh" | awk '{ print $2 }' | sort -u | tr '\n' ' ')
all=$(echo "$BENCH_ALL_GROUPS" | tr ' ' '\n' | sort -u | tr '\n' ' ')
if [ "$run" = "$all" ]; then
	echo "ok: bench-guest.sh's groups are groups.sh's ($all)"
else
	echo "FAIL: bench-guest.sh runs '$run', groups.sh lists '$all'"
	fails=$((fails + 1))
fi
if out=$("$top/tools/demo.sh" --check-groups 2>&1); then
	echo "ok: $out"
else
	echo "FAIL: tools/demo.sh --check-groups: $out"
	fails=$((fails + 1))
fi
echo "test_groups: $fails failed"
[ $fails -eq 0 ]
