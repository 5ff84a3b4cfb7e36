#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Host test (make hosttest): the one table of Documentation/environment.rst
# holds every environment variable the harness reads, and only those.
# The names read come from the tracked files of tools/, Makefile and
# samples/ (git grep, this file left out):
#   - ${NAME:-..}, ${NAME-..}, ${NAME:=..}, ${NAME:?..}, ${NAME:+..}: a
#     shell read with a default (or a test of it);
#   - the names tools/vm/run.sh forwards into the guest (its
#     "for v in IWCM_CACHE ...; do" loop);
#   - every IWCM_* token: also the ones read without a default, built by
#     name (run.sh's IWCM_<NAME>_KO) or handed to make;
#   - std::env::var("NAME") and env_u64("NAME") in the Rust host tests;
#   - make variables: NAME ?= in any makefile, and $(NAME) in the top
#     Makefile unless it sets NAME with :=;
# less IGNORE below.  Each name must be a row of the table (``NAME`` as
# the row's first cell).  A row whose name appears nowhere in tools/,
# Makefile, samples/ or a Kbuild file any more is stale.  Prints
# "ok: N variables documented", or one "missing: NAME (read in FILE)" or
# "stale: NAME" line each and exits 1 (2: cannot run).
set -euo pipefail
export LC_ALL=C	# one collation for sort and comm
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
doc=Documentation/environment.rst
self=tools/test_env_table.sh

# Names that are not the harness's environment inputs.
IGNORE=(
	HOME			# the user's home: IWCM_CACHE's and BINDGEN_BIN's defaults are under it (their rows);
				# dkms-make.sh fills it in when DKMS runs without one
	XDG_CACHE_HOME		# the XDG cache directory: only under IWCM_CACHE's default (its row says so)
	BASE_DIR		# the kernel's kselftest runner sets it; lib.sh looks for ktap_helpers.sh there (KSELFTEST_DIR's row)
	MAKE			# make's own ($(MAKE) in the Makefile)
	MAKEFILE_LIST		# make's own
	IWCM_F_CONNECT_WAIT	# iwcm.c's cm_id flag, named in comments and a test's message
	IWCM_F_DROP_EVENTS	# iwcm.c's cm_id flag, named in comments
)

g() { git -c safe.directory="$top" -C "$top" "$@"; }
g rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
	{ echo "test_env_table: $top is not a git work tree (the test reads the tracked files with git grep)" >&2; exit 2; }
[ -r "$doc" ] || { echo "test_env_table: no $doc" >&2; exit 2; }
scope=(tools Makefile samples ":(exclude)$self")
# ggrep ARGS...: git grep -h -I ARGS over the scope; no match is no error.
ggrep() {
	local rc=0
	g grep -h -I "$@" -- "${scope[@]}" || rc=$?
	[ "$rc" -le 1 ] || { echo "test_env_table: git grep $* failed ($rc)" >&2; exit 2; }
}

forwarded=$(awk '/^[[:space:]]*for v in IWCM_/ {
		for (i = 4; i <= NF; i++) {
			w = $i; sub(/;$/, "", w)
			if (w == "do") break
			print w
			if ($i ~ /;$/) break
		}
	}' tools/vm/run.sh)
[ -n "$forwarded" ] ||
	{ echo "test_env_table: cannot find the pass-through list (for v in IWCM_CACHE ...) in tools/vm/run.sh" >&2; exit 2; }

read_names=$(
	{
		ggrep -o -E '\$\{[A-Z][A-Z0-9_]*:?[-=?+]' | sed -E 's/^\$\{//; s/:?[-=?+]$//'
		echo "$forwarded"
		ggrep -o -w -E 'IWCM_[A-Z0-9_]+'
		ggrep -o -E '(env::var(_os)?|env_u64)\("[A-Z][A-Z0-9_]*"' | sed -E 's/.*\("//; s/"$//'
		ggrep -o -E '^[A-Z][A-Z0-9_]*[[:space:]]*\?=' | sed -E 's/[[:space:]]*\?=$//'
		comm -23 <(grep -oE '\$\([A-Z][A-Z0-9_]*\)' Makefile | sed -E 's/^\$\(//; s/\)$//' | sort -u) \
			 <(sed -nE 's/^([A-Z][A-Z0-9_]*)[[:space:]]*:=.*/\1/p' Makefile | sort -u)
	} | sort -u)
ignore=$(printf '%s\n' "${IGNORE[@]}" | sort -u)
need=$(comm -23 <(echo "$read_names") <(echo "$ignore"))

[ "$(grep -c '^\.\. list-table::' "$doc")" -eq 1 ] ||
	{ echo "test_env_table: $doc must have exactly one list-table" >&2; exit 1; }
rows=$(sed -nE 's/^[[:space:]]*\* - ``([A-Za-z_][A-Za-z0-9_]*)``[[:space:]]*$/\1/p' "$doc")
[ -n "$rows" ] || { echo "test_env_table: no rows (\"* - \`\`NAME\`\`\") in $doc" >&2; exit 1; }

# Every upper-case word of the scope and of the Kbuild files (which read
# the make variables the scripts hand over): what a row may name.
words=$(g grep -h -I -o -w -E '[A-Z_][A-Z0-9_]*' -- "${scope[@]}" ':(glob)**/Kbuild' | sort -u || true)

bad=0
while read -r n; do
	[ -n "$n" ] || continue
	f=$(g grep -l -w -e "$n" -- "${scope[@]}" | sed -n 1p || true)
	echo "missing: $n (read in ${f:-?})"
	bad=1
done < <(comm -23 <(echo "$need") <(echo "$rows" | sort -u))
while read -r n; do
	[ -n "$n" ] || continue
	echo "duplicate: $n (more than one row)"
	bad=1
done < <(echo "$rows" | sort | uniq -d)
while read -r n; do
	[ -n "$n" ] || continue
	echo "stale: $n (a row of $doc, but nothing in tools/, Makefile, samples/ or a Kbuild file names it)"
	bad=1
done < <(comm -23 <(echo "$rows" | sort -u) <(echo "$words"))
while read -r n; do
	[ -n "$n" ] || continue
	echo "stale: $n (in $self's IGNORE, but nothing names it any more)"
	bad=1
done < <(comm -23 <(echo "$ignore") <(echo "$words"))
[ $bad -eq 0 ] || exit 1
echo "ok: $(echo "$rows" | sort -u | wc -l) variables documented"
