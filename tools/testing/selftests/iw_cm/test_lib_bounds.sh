#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Host unit tests of the selftests' bounds (lib.sh), run by make hosttest:
# iwcm_bounded returns a command's own status, output and errors, and 124
# within its bound (plus SIGTERM's and SIGKILL's grace) for a command that
# ignores SIGTERM, whose children go too, and never passes on the
# runner's descriptors 3 and 4; iwcm_stop_all ends such a process without waiting for
# it longer than its own bound.  (A task asleep uninterruptibly in the
# kernel, which these bounds leave behind, cannot be made here without a
# kernel: the VM tests meet it.)  Prints cargo's summary line for
# tools/check.sh.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${KSELFTEST_DIR:-}" ]; then
	# shellcheck source=/dev/null
	. "$here/../../../kernel/env.sh"
	export KSELFTEST_DIR=$KSRC/tools/testing/selftests
fi
[ -r "$KSELFTEST_DIR/kselftest/ktap_helpers.sh" ] ||
	{ echo "test_lib_bounds: no kselftest helpers at $KSELFTEST_DIR (make kernel first)" >&2; exit 1; }
# shellcheck source=lib.sh
. "$here/lib.sh" >/dev/null
IWCM_TMP=$(mktemp -d)
IWCM_T0=$(__iwcm_now)
trap 'rm -rf "$IWCM_TMP"' EXIT

pass=0
fail=0
t() {	# t NAME CMD...: one test
	local name=$1
	shift
	if "$@"; then
		echo "test $name ... ok"
		pass=$((pass + 1))
	else
		echo "test $name ... FAILED"
		fail=$((fail + 1))
	fi
}

own_status_and_output() {
	local out rc
	out=$(iwcm_bounded 10 sh -c 'echo out; echo err >&2; exit 3' 2>"$IWCM_TMP/err")
	rc=$?
	[ $rc -eq 3 ] && [ "$out" = out ] && [ "$(cat "$IWCM_TMP/err")" = err ]
}

children_killed_too() {
	local rc
	iwcm_bounded 1 sh -c "sleep 60 & echo \$! > $IWCM_TMP/child; wait" >/dev/null 2>&1
	rc=$?
	[ $rc -eq 124 ] && [ -s "$IWCM_TMP/child" ] && iwcm_wait_for 5 iwcm_exited "$(cat "$IWCM_TMP/child")"
}

runner_fds_closed() {
	# A command left running must not hold descriptors 3 and 4 (the
	# kselftest runner's output pipe).
	local l
	l=$( { iwcm_bounded 5 sh -c 'readlink /proc/$$/fd/3 /proc/$$/fd/4'; } 3>/dev/zero 4>/dev/zero 2>/dev/null)
	[ -z "$l" ]
}

term_ignored_is_killed() {
	local t0 rc secs
	t0=$SECONDS
	iwcm_bounded 1 sh -c 'trap "" TERM; while :; do sleep 0.2; done' >/dev/null 2>&1
	rc=$?
	secs=$((SECONDS - t0))
	[ $rc -eq 124 ] && [ $secs -le 15 ]
}

stop_all_ends_term_ignoring() {
	local p t0
	iwcm_spawn p "$IWCM_TMP/p.log" sh -c 'trap "" TERM; while :; do sleep 0.2; done'
	t0=$SECONDS
	iwcm_stop_all 2>/dev/null
	[ $((SECONDS - t0)) -le 12 ] && iwcm_exited "$p" && [ ${#IWCM_PIDS[@]} -eq 0 ]
}

t iwcm_bounded_own_status_and_output own_status_and_output
t iwcm_bounded_term_ignored_is_killed term_ignored_is_killed
t iwcm_bounded_children_killed_too children_killed_too
t iwcm_bounded_runner_fds_closed runner_fds_closed
t iwcm_stop_all_ends_term_ignoring stop_all_ends_term_ignoring
echo "test result: $([ $fail -eq 0 ] && echo ok || echo FAILED). $pass passed; $fail failed; 0 ignored"
[ $fail -eq 0 ]
