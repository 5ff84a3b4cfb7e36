#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Inside the test VM: load the chosen iw_cm and run the iw_cm selftest
# collection with the kernel's own kselftest runner (run_kselftest.sh,
# kselftest/runner.sh).  The KTAP goes to stdout and to
# $IWCM_RESULTS/ktap-IMPL.txt; the exit status is non-zero when any test
# failed (or none ran).
#
#   tools/vm/run.sh --name suite-c -- tools/vm/guest-tests.sh c
#   tools/vm/run.sh --name suite-rust -- tools/vm/guest-tests.sh rust
#
# Environment: KSELFTEST_DIR (the kernel's tools/testing/selftests; default
# from KSRC / tools/kernel/env.sh), IWCM_TESTS (space-separated test names
# to run instead of the whole collection), IWCM_RESULTS, IWCM_TEST_TIMEOUT
# (seconds each test may run, instead of the settings file's 1200: make
# check-all's KUnit boot of a million stress lifecycles).
set -u
impl=${1:-}
case "$impl" in
c|rust) ;;
*) echo "usage: $0 c|rust" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
export IWCM_TOP=$top IWCM_IMPL=$impl
if [ -z "${KSELFTEST_DIR:-}" ]; then
	# shellcheck source=/dev/null
	[ -n "${KSRC:-}" ] || . "$top/tools/kernel/env.sh"
	KSELFTEST_DIR=$KSRC/tools/testing/selftests
fi
export KSELFTEST_DIR
src=$top/tools/testing/selftests/iw_cm
results=${IWCM_RESULTS:-/tmp}
ktap=$results/ktap-$impl.txt

echo "# guest-tests: kernel $(uname -r), IWCM_IMPL=$impl, selftests from $src"
for f in run_kselftest.sh kselftest/runner.sh kselftest/ktap_helpers.sh; do
	if [ ! -r "$KSELFTEST_DIR/$f" ]; then
		echo "guest-tests: $KSELFTEST_DIR/$f missing" >&2
		exit 1
	fi
done

# The kselftest install layout in tmpfs (the repo is read-only here):
# BASE/run_kselftest.sh, BASE/kselftest/, BASE/iw_cm/, kselftest-list.txt;
# as tools/vm/run.sh installed it on the host when it could (make under
# TCG takes most of a minute), else built and installed here.
base=$(mktemp -d /tmp/kselftest.XXXXXX)
t_prep=$(date +%s.%N)
if [ -n "${IWCM_RESULTS:-}" ] && [ -s "$IWCM_RESULTS/kselftest.tar" ]; then
	tar -C "$base" -xf "$IWCM_RESULTS/kselftest.tar"
else
	cp -r "$KSELFTEST_DIR/kselftest" "$base/"
	cp "$KSELFTEST_DIR/run_kselftest.sh" "$base/"
	mkdir -p "$base/iw_cm"
	# The C tool as the host built it (tools/vm/run.sh), when it is
	# newer than its source.
	if [ -x "$src/rdma_disc" ] && [ "$src/rdma_disc" -nt "$src/rdma_disc.c" ]; then
		cp -p "$src/rdma_disc" "$base/iw_cm/"
	fi
	if ! make -s -C "$src" KSELFTEST_DIR="$KSELFTEST_DIR" OUTPUT="$base/iw_cm" \
			install INSTALL_PATH="$base/iw_cm" >"$base/make.log" 2>&1; then
		cat "$base/make.log"
		echo "guest-tests: building/installing the iw_cm selftests failed" >&2
		exit 1
	fi
	make -s -C "$src" KSELFTEST_DIR="$KSELFTEST_DIR" COLLECTION=iw_cm emit_tests \
		>"$base/kselftest-list.txt" || exit 1
fi
t_inst=$(date +%s.%N)

# The iw_cm under test first, so that rdma_cm binds to it.
if ! bash -c '. "$1/iw_cm/lib.sh" && load_iw_cm && modprobe rdma_cm && modprobe rdma_ucm && load_siw' \
		_ "$base"; then
	echo "guest-tests: cannot load iw_cm ($impl) and rdma_cm/rdma_ucm/siw" >&2
	exit 1
fi
grep -E "^(iw_cm|rdma_cm|rdma_ucm|siw|ib_core) " /proc/modules | sed 's/^/# module: /'
echo "# guest-tests: selftests installed in $(awk -v a="$t_prep" -v b="$t_inst" 'BEGIN {printf "%.1f", b - a}') s, modules loaded in $(awk -v a="$t_inst" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"

args=(-c iw_cm)
if [ -n "${IWCM_TESTS:-}" ]; then
	args=()
	for t in $IWCM_TESTS; do
		# Tests outside the default collection (TEST_PROGS_EXTENDED)
		# are installed too: list them so the runner accepts them.
		if ! grep -qx "iw_cm:$t" "$base/kselftest-list.txt"; then
			[ -x "$base/iw_cm/$t" ] || { echo "guest-tests: no test $t" >&2; exit 1; }
			echo "iw_cm:$t" >> "$base/kselftest-list.txt"
		fi
		args+=(-t "iw_cm:$t")
	done
fi
[ -z "${IWCM_TEST_TIMEOUT:-}" ] || args+=(-o "$IWCM_TEST_TIMEOUT")
start=$(date +%s.%N)
(cd "$base" && ./run_kselftest.sh "${args[@]}") 2>&1 | tee "$ktap"
rc=${PIPESTATUS[0]}
echo "# guest-tests: $impl suite took $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s, runner exit $rc"
if ! grep -qE "^(not )?ok [0-9]+ selftests: iw_cm:" "$ktap"; then
	echo "guest-tests: no test result in the KTAP output" >&2
	exit 1
fi
exit "$rc"
