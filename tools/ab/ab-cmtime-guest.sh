#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Inside the test VM (tools/ab/ab-cmtime.sh runs it): connection setup and
# teardown speed of the stock C iw_cm and of ours in the same boot.  Each
# round loads one iw_cm (rdma_cm, rdma_ucm, the test siw, the siw link on
# dummy0), runs rdma-core's cmtime with AB_CONNS connections against a
# fresh cmtime server, and tears the stack down again; rounds alternate
# C/Rust and Rust/C (ABBA) so that drift in the VM cancels out.  Prints one
# line per measured step:
#
#   RESULT <impl> <round> <step> <us per connection>
#
# and "FAILED <impl> <round> <why>" for a round that did not complete.
# With AB_BASE_KO set, the "c" rounds load that build of the Rust iw_cm
# instead of the C one (ab-cmtime.sh --trace-cost).
# Exits non-zero when any round failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
export IWCM_TOP=$top
# siw endpoint accounting (lib.sh) logs two lines per endpoint: off for
# stress and benchmark runs.
export IWCM_SIW_EP_CHECK=${IWCM_SIW_EP_CHECK:-0}
if [ -z "${KSELFTEST_DIR:-}" ]; then
	# shellcheck source=/dev/null
	[ -n "${KSRC:-}" ] || . "$top/tools/kernel/env.sh"
	export KSELFTEST_DIR=$KSRC/tools/testing/selftests
fi
# shellcheck source=../testing/selftests/iw_cm/lib.sh
. "$top/tools/testing/selftests/iw_cm/lib.sh"

rust_ko=$IWCM_RUST_KO
rounds=${AB_ROUNDS:-5}
conns=${AB_CONNS:-200}
IWCM_TMP=$(mktemp -d /tmp/ab-cmtime.XXXXXX)
failed=0

# unload_stack: the siw link and everything that holds iw_cm.
unload_stack() {
	iwcm_teardown >/dev/null 2>&1
	modprobe -r rdma_ucm rdma_cm 2>/dev/null
	if [ -d /sys/module/iw_cm ]; then
		rmmod iw_cm 2>/dev/null || modprobe -r iw_cm 2>/dev/null
	fi
	! [ -d /sys/module/iw_cm ]
}

# one_round IMPL ROUND
one_round() {
	local impl=$1 r=$2 srv crc clog slog step us
	if ! unload_stack; then
		echo "FAILED $impl $r cannot unload the previous iw_cm"
		return 1
	fi
	IWCM_IMPL=$impl
	IWCM_RUST_KO=$rust_ko
	# AB_BASE_KO: the baseline ("c" rounds) is another build of ours.
	if [ "$impl" = c ] && [ -n "${AB_BASE_KO:-}" ]; then
		IWCM_IMPL=rust
		IWCM_RUST_KO=$AB_BASE_KO
	fi
	if ! iwcm_setup >"$IWCM_TMP/setup.log" 2>&1; then
		cat "$IWCM_TMP/setup.log"
		echo "FAILED $impl $r setup"
		return 1
	fi
	slog=$IWCM_TMP/server-$impl-$r.log
	clog=$IWCM_TMP/client-$impl-$r.log
	iwcm_spawn srv "$slog" cmtime -b "$IWCM_ADDR"
	if ! iwcm_wait_listen 7471; then
		echo "FAILED $impl $r cmtime server did not listen"
		iwcm_stop_all
		return 1
	fi
	timeout -k 5 300 cmtime -s "$IWCM_ADDR" -c "$conns" >"$clog" 2>&1
	crc=$?
	iwcm_stop_all
	if [ $crc -ne 0 ] || grep -qiE "fail|error|event: " "$clog" "$slog"; then
		sed 's/^/  /' "$clog" | tail -n 20
		echo "FAILED $impl $r cmtime client exit $crc"
		return 1
	fi
	# "connect      : 1685.63  330.07  51235.00  16856.27": the last
	# column is microseconds per connection.
	while read -r step us; do
		echo "RESULT $impl $r $step $us"
	done < <(awk -F: '/^(create id|resolve addr|resolve route|create qp|connect|disconnect|destroy) *:/ {
		name = $1; gsub(/ +$/, "", name); gsub(/ /, "_", name)
		n = split($2, f, " "); print name, f[n] }' "$clog")
	return 0
}

echo "ab-cmtime: kernel $(uname -r), $rounds rounds of cmtime -c $conns per iw_cm"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then order="c rust"; else order="rust c"; fi
	for impl in $order; do
		one_round "$impl" "$r" || failed=$((failed + 1))
	done
done
unload_stack
rm -rf "$IWCM_TMP"
echo "ab-cmtime: $failed failed round(s)"
[ $failed -eq 0 ]
