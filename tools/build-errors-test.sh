#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The build against a tree that cannot build this project must stop at
# once with one clear line (rust/rdma/rdma.mk, the iw_cm Kbuild):
#   1. a kernel build tree without its rust/ artefacts (as a distribution's
#      headers-only package ships it): a symlink copy of the test kernel's
#      build tree without rust/;
#   2. a kernel source without the port mapper client (iwpm_util.c,
#      iwpm_msg.c): IWCM_IWPM_DIR pointed at an empty directory.
# Each must fail within seconds, print its line, and compile nothing.
# Prints "build-errors: N passed, N failed"; exit 1 on any failure.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=kernel/env.sh
. "$top/tools/kernel/env.sh" >/dev/null
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect NAME REGEX MAKE-ARGS...: make must fail, printing REGEX, compiling nothing.
expect() {
	local name=$1 re=$2 log=$tmp/$1.log t0 secs
	shift 2
	t0=$(date +%s)
	if make "$@" >"$log" 2>&1; then
		echo "build-errors: FAIL $name: the build went through"
		fail=$((fail + 1))
		return
	fi
	secs=$(( $(date +%s) - t0 ))
	if grep -qE "$re" "$log" && ! grep -qE "^ +(RUSTC|CC|BINDGEN) " "$log"; then
		echo "build-errors: ok $name (${secs} s): $(grep -oE "$re.*" "$log" | head -n1)"
		pass=$((pass + 1))
	else
		echo "build-errors: FAIL $name: no clear line, or it compiled first:"
		tail -n 15 "$log" | sed 's/^/    /'
		fail=$((fail + 1))
	fi
}

# 1. headers-only: the build tree without rust/.
ho=$tmp/headers-only
mkdir -p "$ho"
for e in "$KDIR"/* "$KDIR"/.config; do
	b=$(basename "$e")
	[ "$b" = rust ] || [ "$b" = Makefile ] || ln -s "$e" "$ho/$b"
done
printf 'export KBUILD_OUTPUT = %s\ninclude %s/Makefile\n' "$ho" "$(readlink -f "$KDIR/source")" > "$ho/Makefile"
expect headers-only "iw_cm: no Rust build artefacts in " -C "$ho" M="$top" "${KMAKE_ARGS[@]}" modules

# 2. no port mapper client sources.
mkdir -p "$tmp/empty"
expect no-iwpm "iw_cm: the port mapper client sources \(iwpm_util.c, iwpm_msg.c\) are not in " \
	-C "$KDIR" M="$top" "${KMAKE_ARGS[@]}" IWCM_IWPM_DIR="$tmp/empty" modules

echo "build-errors: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
