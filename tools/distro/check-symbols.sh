#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Does a kernel export every symbol a module needs?  For each .ko given,
# its undefined symbols (nm -u) are looked up in the kernel's
# Module.symvers (vmlinux's and the in-tree modules' exports) and in the
# other .ko files given (a module set: iw_cm.ko, siw.ko, the sample ULP);
# the Rust ones (v0 mangling, _R...) are counted apart, since their names
# carry a hash of the compiler version and crate metadata and match only
# when the module was built with the kernel's own rustc and Rust
# artefacts (issue 14: Debian's 7.3.4+deb13 kernel, rustc 1.85.1).
#
#   tools/distro/check-symbols.sh SYMVERS MODULE.ko...
#
# Prints per module: needed, found, missing (Rust / C), then every missing
# name (demangled with rustfilt or c++filt --format=rust when installed).
# Exit status 0 when nothing is missing, 1 when something is, 2 on usage.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 Module.symvers MODULE.ko..." >&2; exit 2; }
symvers=$1
shift
[ -r "$symvers" ] || { echo "check-symbols: cannot read $symvers" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Module.symvers: CRC <tab> symbol <tab> module <tab> export type [<tab> ns]
awk -F'\t' '{ print $2 }' "$symvers" | sort -u > "$tmp/exported"
for ko in "$@"; do
	[ -r "$ko" ] || { echo "check-symbols: cannot read $ko" >&2; exit 2; }
	# What the module set itself defines (exported or not: modpost
	# resolves against the set's EXPORT_SYMBOLs; a defined global is the
	# upper bound).
	nm --defined-only "$ko" | awk '$2 ~ /^[A-Z]$/ { print $3 }'
done | sort -u > "$tmp/own"
sort -u "$tmp/exported" "$tmp/own" > "$tmp/available"

demangle() {
	if command -v rustfilt >/dev/null 2>&1; then rustfilt
	elif c++filt --help 2>&1 | grep -q rust; then c++filt --format=rust
	else cat
	fi
}

rc=0
for ko in "$@"; do
	# Undefined symbols; __this_module and the kernel's module stubs are
	# provided by modpost, not exported.
	nm -u "$ko" | awk '{ print $2 }' | grep -v -E '^(__this_module|__fentry__|__x86_return_thunk)$' |
		sort -u > "$tmp/needed"
	comm -23 "$tmp/needed" "$tmp/available" > "$tmp/missing"
	n=$(wc -l < "$tmp/needed")
	nr=$(grep -c '^_R' "$tmp/needed")
	m=$(wc -l < "$tmp/missing")
	mr=$(grep -c '^_R' "$tmp/missing")
	printf '%s: %d symbols needed (%d Rust), %d found, %d missing (%d Rust, %d C)\n' \
		"$(basename "$ko")" "$n" "$nr" "$((n - m))" "$m" "$mr" "$((m - mr))"
	if [ "$m" -gt 0 ]; then
		rc=1
		paste -d' ' "$tmp/missing" <(demangle < "$tmp/missing") |
			awk '{ if ($1 == $2) print "  missing: " $1; else { n = $1; $1 = ""; print "  missing: " n " (" substr($0, 2) ")" } }'
	fi
done
exit $rc
