#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Host unit tests of the selftests' bounds and polling helpers (lib.sh),
# run by make hosttest: the clock, nap and rdma-output parsers that poll
# without starting processes;
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

# The polling helpers use builtins only (a process costs up to a second
# under TCG): the clock arithmetic, the nap, and the parsers of rdma's
# output, with rdma replaced by a function printing what rdma 6.x prints.
usec_and_elapsed() {
	local a b c e
	__iwcm_usec a 12.5
	__iwcm_usec b 7
	__iwcm_usec c 1.0000009
	e=$(__iwcm_elapsed "$(awk -v n="$EPOCHREALTIME" 'BEGIN { printf "%.6f", n - 1.54 }')")
	[ "$a" = 12500000 ] && [ "$b" = 7000000 ] && [ "$c" = 1000000 ] && [ "$e" = 1.5 ]
}

wait_status_and_bound() {
	local p rc t0
	sh -c 'exit 5' &
	iwcm_wait $! 10
	rc=$?
	[ $rc -eq 5 ] || return 1
	sleep 30 &
	p=$!
	t0=$EPOCHREALTIME
	iwcm_wait $p 1
	rc=$?
	kill $p
	wait $p 2>/dev/null
	[ $rc -eq 124 ] && [ "$(__iwcm_elapsed "$t0" | cut -d. -f1)" -lt 3 ]
}

nap_sleeps() {
	local t0 us
	t0=$EPOCHREALTIME
	__iwcm_nap 0.3
	__iwcm_usec us
	__iwcm_usec t0 "$t0"
	us=$((us - t0))
	[ $us -ge 250000 ] && [ $us -lt 2000000 ]
}

rdma() {	# (the parsers' input: rdma resource show cm_id)
	printf '%s\n' \
		"link siw0/- cm-idn 0 state LISTEN ps TCP comm [rpcrdma] src-addr 0.0.0.0:20049" \
		"link siw0/1 cm-idn 1 state LISTEN ps TCP pid 5 comm rping src-addr 192.168.77.1:7174 dst-addr 0.0.0.0:0" \
		"link siw1/1 cm-idn 2 lqpn 1 qp-type RC state CONNECT ps TCP pid 6 comm rping src-addr 192.168.78.1:7175 dst-addr 192.168.78.1:40000"
}
rdma_parsers() {
	local n
	iwcm_listening 7174 && iwcm_listening 20049 && ! iwcm_listening 717 &&
		! iwcm_listening 71745 && ! iwcm_listening 7175 || return 1
	n=$(iwcm_dev_cm_ids | wc -l)
	[ "$n" = 2 ]
}

log_has() {
	printf 'a\nrdma_disc server: listening on 1.2.3.4:5\nlast line without newline' > "$IWCM_TMP/log"
	iwcm_log_has "$IWCM_TMP/log" "listening on" && iwcm_log_has "$IWCM_TMP/log" "^last .*newline$" &&
		! iwcm_log_has "$IWCM_TMP/log" "connected to" && ! iwcm_log_has "$IWCM_TMP/nonexistent" .
}

t iwcm_usec_and_elapsed usec_and_elapsed
t iwcm_wait_status_and_bound wait_status_and_bound
t iwcm_nap_sleeps nap_sleeps
t iwcm_rdma_parsers rdma_parsers
t iwcm_log_has log_has
t iwcm_bounded_own_status_and_output own_status_and_output
t iwcm_bounded_term_ignored_is_killed term_ignored_is_killed
t iwcm_bounded_children_killed_too children_killed_too
t iwcm_bounded_runner_fds_closed runner_fds_closed
t iwcm_stop_all_ends_term_ignoring stop_all_ends_term_ignoring
echo "test result: $([ $fail -eq 0 ] && echo ok || echo FAILED). $pass passed; $fail failed; 0 ignored"
[ $fail -eq 0 ]
