#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The whole check (`make check`), from a fresh Debian 12 machine:
#   1. tools/setup-deps.sh                  (packages, bindgen)
#   2. tools/kernel/build-kernel.sh         (test kernel, cached)
#   3. make modules                         (our Rust iw_cm, when the target exists),
#      then make rustfmtcheck and make clippy (no warning allowed)
#   4. make hosttest                        (host unit tests, when the target exists)
#      and tools/build-errors-test.sh (the build's messages for a tree
#      without Rust artefacts or without the port mapper sources)
#   5. the iw_cm selftests' C tool built on the host (gcc)
#   6. the VM jobs, one after another (IWCM_CHECK_LANES=2 runs two lanes
#      side by side, one vCPU per guest; on this 2-core host that was
#      slower in all: a 1-vCPU guest beside another ran a test's set-up
#      2.8 times slower than a 2-vCPU guest alone), four boots: ours on
#      the lean kernel (only when drivers/infiniband/core/iw_cm/iw_cm.ko
#      exists: the KUnit suite, the selftest CI collection -- the hostile
#      MPA peers with the test siw, the unplugs, the nvme-rdma unplug, the
#      remote peers against nvmet-rdma and rping -- and last the sample
#      ULP's in-handler removal); the C iw_cm's selftests of the
#      IWCM_CHECK_C_TESTS subset (iwcm.c built with the port mapper
#      client fixed: tools/testing/iw_cm_c/); the in-kernel ULPs with ours
#      (NFS/RDMA, SMB Direct, nvme-rdma, iSER through unplug, relink and
#      flaps); the harness's own negative tests (a kernel WARNING and a
#      KASAN report -- lkdtm -- must each fail the run, a command that
#      never ends must be reported as a hang, 124)
# check.sh --all (`make check-all`) adds what CI leaves out: the whole
# selftest collection and the fault storm and port mapper tests with ours,
# the in-kernel ULPs with the kernel's own iw_cm.ko, the whole C
# iw_cm suite, the nvme-rdma unplug with the C iw_cm, the KUnit stress at
# scale (a boot of its own: 1,000,000 lifecycles beside 10,000 live
# cm_ids, IWCM_CHECK_KUNIT_SCALE_S its time budget), the siw
# unplug soak (IWCM_CHECK_SOAK s, default 180), and the nvme-rdma
# hot-unplug stress (tools/stress/run-stress.sh, 20 cycles), the whole
# selftest collection with ours against the kernel's own siw (IWCM_SIW=stock:
# upstream siw's faults XFAIL, each naming its tools/testing/siw patch), rdma_cm's
# GID race (tools/testing/rdma_cm/repro-gid-race.sh: the kernel's order
# must oops, the test rdma_cm's must not; two boots), isert's
# DEVICE_REMOVAL race (tools/testing/isert/repro-removal-race.sh: the
# kernel's isert must free its connection early, the test isert's must
# not; three ULP-kernel boots), and runs every
# selftest in full: `make check` exports IWCM_QUICK=1, with which the
# longest loops are trimmed (rping's verified iterations, cmtime's and
# ucmatose's second runs, perftest's iterations, the rounds of
# accept_race, killed_listener and unload_race) and the hostile MPA
# peers run about half their cases (issue 10's inputs and one of each
# other kind); each test that trims says so in its output.
# The last lines are the per-part times and "N passed, N failed, N skipped";
# the exit status is 0 only when nothing failed and at least one VM suite ran.
#
# Environment: IWCM_CHECK_SUITE_TIMEOUT (guest watchdog per suite, s),
# IWCM_CHECK_ULP_TIMEOUT and IWCM_CHECK_ULP_TEST_TIMEOUT (a ULP boot's and
# each ULP test's bound, s: 1800, 600),
# IWCM_CHECK_LANES, IWCM_CHECK_VM_SMP, IWCM_CHECK_KUNIT_SMP (vCPUs of the
# KUnit boot, default 2), IWCM_CHECK_RUST_TESTS_A/_B,
# IWCM_CHECK_C_TESTS (the C iw_cm selftests of `make check`),
# IWCM_CHECK_SOAK (seconds of siw unplug soak in `make check-all`, default 180),
# IWCM_CHECK_KUNIT_SCALE_S (time budget of the KUnit stress at scale in
# `make check-all`, s, default 3000),
# IWCM_CHECK_STRESS_CYCLES (nvme stress cycles of --all, default 20).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
all=0
part_sel=
case "${1:-}" in
--all) all=1; part_sel=${2:-} ;;
'') ;;
*) echo "usage: $0 [--all [PART]]" >&2; exit 2 ;;
esac
# make check-all PART=N: one part of check-all, each meant to fit in an
# hour on a 2-core TCG host (the jobs' times in each part's comment are
# from make check's own jobs where they share one; the rest are
# estimates until a part has run whole).  Together the parts are check-all.
#   1 ours   our whole selftest collection and the KUnit boot with the
#            nvme-rdma unplug, remote peers, fault storm, iwpmd, sample
#   2 c      the C iw_cm reference: its whole suite, the nvme-rdma unplug,
#            the port mapper tests
#   3 upstream  the headline claims against the kernel's own siw: the
#            hostile peers where C oopses (hostile_peer_upstream.sh) and
#            the whole collection with upstream siw (XFAILs naming
#            tools/testing/siw/ patches)
#   4 ulps   the in-kernel ULPs with each iw_cm
#   5 scale  the KUnit stress at scale (1,000,000 lifecycles)
#   6 repro  the test-module reproducers (rdma_cm's GID race, isert's
#            removal race), the unplug stress and soak, the harness's own
#            negative tests
#   7 users  each iw_cm with the kernel's own siw, rdma_cm, isert,
#            smbdirect and cifs: the selftests' connection paths, the
#            nvme-rdma unplug and the in-kernel ULPs
check_all_parts=(
	"suite_rust kunit_rust"
	"suite_c_all nvme_unplug_c iwpm_c"
	"hostile_upstream_rust suite_stock_siw_rust"
	"ulp_rust ulp_c"
	"kunit_scale_rust"
	"gid_race isert_race stress_rust soak_rust neg"
	"users_rust users_c"
)
check_all_names=(ours c upstream ulps scale repro users)
if [ -n "$part_sel" ]; then
	for i in "${!check_all_names[@]}"; do
		[ "$part_sel" = "$((i + 1))" ] || [ "$part_sel" = "${check_all_names[$i]}" ] || continue
		part_jobs=${check_all_parts[$i]}
	done
	if [ -z "${part_jobs:-}" ]; then
		echo "check: no check-all part '$part_sel' (1-${#check_all_parts[@]} or: ${check_all_names[*]})" >&2
		exit 2
	fi
fi
# Forwarded into the guest by tools/vm/run.sh.
if [ $all -eq 1 ]; then
	export IWCM_QUICK=0
else
	export IWCM_QUICK=${IWCM_QUICK:-1}
fi
jobdir=
passed=0
failed=0
skipped=0
suites_run=0
summary=()
failed_cases=()
parts=()
t_all=$(date +%s)
t_part=$t_all
part_name=
part() {	# part NAME: the time since the last part() goes to the previous part
	local now
	now=$(date +%s)
	[ -n "$part_name" ] && parts+=("$(printf '%6d s  %s' $((now - t_part)) "$part_name")")
	part_name=$1
	t_part=$now
}
stamp=$(date +%Y%m%d-%H%M%S)
export IWCM_RESULTS_DIR=${IWCM_RESULTS_DIR:-$top/results/check-$stamp}
mkdir -p "$IWCM_RESULTS_DIR"
suite_timeout=${IWCM_CHECK_SUITE_TIMEOUT:-4800}

say() { printf '%s\n' "check: $*"; }
# Results: in the main shell they go straight into the counters; inside a
# VM job (a lane's subshell, below) into the job's result file, which
# finish() reads.  Lines: "pass|fail|skip<TAB>what", "count<TAB>P F S<TAB>
# what", "case<TAB>failed case", "suite<TAB>".
result() {
	if [ -n "$jobdir" ]; then
		printf '%s\n' "$1" >> "$jobdir/$job_id.res"
		return
	fi
	local kind a b c d e
	IFS=$'\t' read -r kind a b <<<"$1"
	case $kind in
	pass|fail|skip)
		case $kind in
		pass) passed=$((passed + 1)) ;;
		fail) failed=$((failed + 1)) ;;
		skip) skipped=$((skipped + 1)) ;;
		esac
		summary+=("$(printf '%-4s %s' "$kind" "$a")") ;;
	count)
		read -r c d e <<<"$a"
		passed=$((passed + c)); failed=$((failed + d)); skipped=$((skipped + e))
		summary+=("$b") ;;
	case) failed_cases+=("$a") ;;
	suite) suites_run=$((suites_run + 1)) ;;
	esac
}
record() {	# record pass|fail|skip WHAT
	result "$1"$'\t'"$2"
	say "$1: $2"
}
finish() {
	local rc=0
	echo
	say "---- summary (results in $IWCM_RESULTS_DIR) ----"
	printf '  %s\n' "${summary[@]}"
	part ""
	say "---- per-part times ($([ $all -eq 1 ] && echo check-all || echo check)) ----"
	printf '  %s\n' "${parts[@]}"
	# Last, next to the counts: CI shows only the tail of the output.
	if [ ${#failed_cases[@]} -gt 0 ]; then
		say "---- what failed ----"
		printf '  %s\n' "${failed_cases[@]}"
	fi
	say "total time $(( $(date +%s) - t_all )) s"
	if [ "$suites_run" -eq 0 ]; then
		say "no VM test suite ran: the check cannot pass"
		rc=1
	fi
	[ "$failed" -eq 0 ] || rc=1
	echo "$passed passed, $failed failed, $skipped skipped"
	exit "$rc"
}
# make_has_target T: the top-level Makefile defines target T.
make_has_target() {
	[ -f "$top/Makefile" ] || return 1
	make -C "$top" -n "$1" >/dev/null 2>&1 && return 0
	! make -C "$top" -n "$1" 2>&1 | grep -qE "No rule to make target '$1'|No targets"
}
secs_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }
# ---------------------------------------------------------------- 1, 2
part "setup-deps"
say "== setup-deps"
if ! "$top/tools/setup-deps.sh"; then
	record fail "tools/setup-deps.sh"
	finish
fi
part "test kernel (build or cache)"
say "== test kernel (tools/kernel/build-kernel.sh)"
t=$(date +%s.%N)
if ! "$top/tools/kernel/build-kernel.sh"; then
	record fail "tools/kernel/build-kernel.sh"
	finish
fi
say "kernel ready after $(secs_since "$t") s"
# shellcheck source=/dev/null
. "$top/tools/kernel/env.sh"

# ---------------------------------------------------------------- 3
part "modules, rustfmt, clippy"
say "== make modules"
if make_has_target modules; then
	t=$(date +%s.%N)
	if make -C "$top" modules siw rdma_cm; then
		record pass "make modules ($(secs_since "$t") s)"
		# Kernel Rust style: rustfmt with the kernel's config, clippy
		# (CLIPPY=1) with no warning.
		if make -C "$top" rustfmtcheck >"$IWCM_RESULTS_DIR/rustfmt.log" 2>&1; then
			record pass "make rustfmtcheck"
		else
			cat "$IWCM_RESULTS_DIR/rustfmt.log"
			record fail "make rustfmtcheck"
		fi
		t=$(date +%s.%N)
		make -C "$top" clippy >"$IWCM_RESULTS_DIR/clippy.log" 2>&1
		crc=$?
		nw=$(grep -cE '^(warning|error)(\[|:)' "$IWCM_RESULTS_DIR/clippy.log")
		if [ "$crc" -eq 0 ] && [ "$nw" -eq 0 ]; then
			record pass "make clippy: no warning ($(secs_since "$t") s)"
		else
			grep -A8 -E '^(warning|error)(\[|:)' "$IWCM_RESULTS_DIR/clippy.log" | head -n 80
			record fail "make clippy: exit $crc, $nw warnings/errors"
		fi
	else
		record fail "make modules"
	fi
else
	say "note: the top-level Makefile has no 'modules' target yet: Rust module build skipped"
	record skip "make modules: no such target yet"
fi

# ---------------------------------------------------------------- 4
part "host unit tests"
say "== make hosttest"
if make_has_target hosttest; then
	log=$IWCM_RESULTS_DIR/hosttest.log
	make -C "$top" hosttest 2>&1 | tee "$log"
	hrc=${PIPESTATUS[0]}
	# cargo: "test result: ok. 3 passed; 0 failed; 1 ignored; ..."
	read -r hp hf hi < <(grep -E "^test result:" "$log" | awk '
		{ for (i = 1; i <= NF; i++) {
			if ($(i+1) ~ /^passed/) p += $i
			if ($(i+1) ~ /^failed/) f += $i
			if ($(i+1) ~ /^ignored/) g += $i } }
		END { printf "%d %d %d\n", p, f, g }')
	say "hosttest: $hp passed, $hf failed, $hi ignored (make exit $hrc)"
	passed=$((passed + hp))
	failed=$((failed + hf))
	skipped=$((skipped + hi))
	summary+=("host unit tests: $hp passed, $hf failed, $hi ignored")
	if [ "$hrc" -ne 0 ] && [ "$hf" -eq 0 ]; then
		record fail "make hosttest exited $hrc"
	fi
else
	say "note: no 'hosttest' target in the top-level Makefile: host unit tests skipped"
fi

say "== build against trees that cannot build it: one clear line, at once"
log=$IWCM_RESULTS_DIR/build-errors.log
"$top/tools/build-errors-test.sh" 2>&1 | tee "$log"
if [ "${PIPESTATUS[0]}" -eq 0 ]; then
	record pass "build errors: headers-only tree and missing port mapper sources stop at once with one line"
else
	record fail "build errors: see $log"
fi

# ---------------------------------------------------------------- 5
part "selftests C tool"
say "== iw_cm selftests: build the C tool on the host"
if make -C "$top/tools/testing/selftests/iw_cm" KSELFTEST_DIR="$KSRC/tools/testing/selftests"; then
	record pass "selftests build (rdma_disc, gcc)"
else
	record fail "selftests build (rdma_disc, gcc)"
fi

# ---------------------------------------------------------------- 6, 7
# The VM part: jobs, each one or more boots of the test kernel, run by
# IWCM_CHECK_LANES lanes side by side (default 2: one per host core).  A
# lane takes the next job off the list (longest first) until none is
# left; each lane's guests get IWCM_CHECK_VM_SMP vCPUs (default 1: under
# TCG two 2-vCPU guests on 2 host cores preempt each other's lock holders)
# and a VM lock of their own.  A job's whole output goes to
# $IWCM_RESULTS_DIR/jobs/NAME.out; its "check:" lines are printed when it
# ends.
vm() {	# vm NAME LOG run.sh-args...: run a VM, its output to LOG and stdout
	# (vm_top: the tree whose run.sh boots, default this one; the ULP
	# jobs give tools/ulp-tree.sh's copy, built for the ULP kernel)
	local name=$1 log=$2
	shift 2
	"${vm_top:-$top}/tools/vm/run.sh" --name "$name" "$@" 2>&1 | tee "$log"
	return "${PIPESTATUS[0]}"
}
boot_info() {	# boot_info LOG: how long the VM took to boot
	local init host
	init=$(sed -n 's/.*VM: init reached at \([0-9.]*\) s.*/\1/p' "$1" | head -n1)
	host=$(sed -n 's/.*VM: finished in \([0-9.]*\)s.*/\1/p' "$1" | tail -n1)
	echo "VM boot: init reached at ${init:-?} s guest uptime; whole VM run ${host:-?} s"
}

job_neg() {
	# One boot for the three: lkdtm's WARNING and READ_AFTER_FREE (KASAN),
	# then a command that never ends.  The hang is the run's status (124);
	# run.sh's splat check runs after it all the same, prints every report
	# it matched under its "splat-check:" line and says the run fails.
	say "== harness negative tests: a kernel WARNING and a KASAN report (lkdtm WARNING, READ_AFTER_FREE) must fail the run, a command that never ends is a hang (exit 124)"
	local log=$IWCM_RESULTS_DIR/neg.out t rc splat_lines failing
	t=$(date +%s.%N)
	vm neg "$log" --timeout 30 --no-kmemleak -- \
		bash -c 'modprobe lkdtm && echo WARNING > /sys/kernel/debug/provoke-crash/DIRECT &&
			echo READ_AFTER_FREE > /sys/kernel/debug/provoke-crash/DIRECT && sleep 1000'
	rc=$?
	say "$(boot_info "$log")"
	splat_lines=$(sed -n '/^splat-check: .*console.log/,$p' "$log")
	failing=0
	grep -q "^VM: kernel splat in the console log: run fails" "$log" && failing=1
	if [ $failing -eq 1 ] && grep -qE "^ +WARNING: " <<<"$splat_lines"; then
		record pass "harness: lkdtm WARNING fails the run (splat printed)"
	else
		record fail "harness: lkdtm WARNING fails the run (exit $rc)"
	fi
	if [ $failing -eq 1 ] && grep -qE "^ +BUG: KASAN: [a-z-]*use-after-free" <<<"$splat_lines"; then
		record pass "harness: lkdtm READ_AFTER_FREE's KASAN report fails the run (splat printed)"
	else
		record fail "harness: lkdtm READ_AFTER_FREE's KASAN report fails the run (exit $rc; is the kernel built with KASAN?)"
	fi
	if [ "$rc" -eq 124 ] && grep -q "VM: HANG" "$log"; then
		record pass "harness: sleep 1000 with --timeout 30 reported as a hang (exit 124, $(secs_since "$t") s)"
	else
		record fail "harness: sleep 1000 with --timeout 30 reported as a hang (exit $rc)"
	fi
}

# suite IMPL [NAME TESTS RUN.SH-OPTIONS...]: run the selftests in a VM and
# count the KTAP top-level results; NAME/TESTS select a boot of its own for
# the named (extended) selftests.
suite() {
	local impl=$1 name=${2:-suite-$1} tests=${3:-} log res ktap rc np nf ns
	shift; shift; shift
	log=$IWCM_RESULTS_DIR/$name.out
	say "== iw_cm selftests in the VM, IWCM_IMPL=$impl${IWCM_SIW:+, IWCM_SIW=$IWCM_SIW}${tests:+ ($tests)}"
	vm "$name" "$log" --timeout "$suite_timeout" "$@" -- \
		env IWCM_TESTS="$tests" "${vm_top:-$top}/tools/vm/guest-tests.sh" "$impl"
	rc=$?
	result suite
	say "$(boot_info "$log")"
	res=$(sed -n 's/.*results in \(.*\)$/\1/p' "$log" | head -n1)
	ktap=$res/ktap-$impl.txt
	if [ -z "$res" ] || [ ! -s "$ktap" ]; then
		record fail "suite $name: no KTAP output (VM exit $rc)"
		grep -A6 -E "^splat-check: |^VM: (HANG|the guest stopped)" "$log" | head -n 30 |
			while IFS= read -r l; do result "case"$'\t'"[$name] $l"; done
		return
	fi
	# Top-level results are the unindented lines of the runner.
	np=$(grep -cE "^ok [0-9]+ selftests: iw_cm: [^#]*$" "$ktap")
	# XFAIL: a known failure outside iw_cm, reported by the test with its
	# reason; counted as skipped, never as passed.
	ns=$(grep -cE "^ok [0-9]+ selftests: iw_cm: .*# (SKIP|XFAIL)" "$ktap")
	nf=$(grep -cE "^not ok [0-9]+ selftests: iw_cm: " "$ktap")
	say "suite $name: per-test durations:"
	awk '/^# selftests: iw_cm: / { t = $4 }
	     /^# # [a-z_]+: duration [0-9.]+ s/ { printf "check:   %-28s %8s s\n", t, $(NF-1) }' "$ktap"
	grep -E "^(not )?ok [0-9]+ selftests: iw_cm: " "$ktap" | sed "s/^/check:   [$name] /"
	# Each failed case by name, for the summary (CI shows only its tail).
	awk '/^# selftests: iw_cm: / { t = $4 }
		/^# not ok [0-9]+ / { sub(/^# not ok [0-9]+ /, ""); print t ": " $0 }' "$ktap" | head -n 20 |
		while IFS= read -r l; do result "case"$'\t'"[$name] $l"; done
	result "count"$'\t'"$np $nf $ns"$'\t'"suite $name ($impl): $np passed, $nf failed, $ns skipped (VM exit $rc)"
	say "suite $name: $np passed, $nf failed, $ns skipped (VM exit $rc)"
	# Every test asked for has its result, and every SKIP or XFAIL, a
	# whole test's or one inside a passing test, is one this job declares
	# (tools/vm/expected-skips.txt): a result nobody looked at is not a
	# pass.
	local want undeclared
	want=$(wc -w <<<"${tests:-}")
	if [ "$want" -gt 0 ] && [ $((np + nf + ns)) -ne "$want" ]; then
		record fail "suite $name: $((np + nf + ns)) test results for the $want tests asked for"
	fi
	if ! undeclared=$(python3 "$top/tools/vm/check_skips.py" "$name" "$ktap"); then
		record fail "suite $name: a SKIP or XFAIL no job declares (tools/vm/expected-skips.txt)"
		grep '^undeclared: ' <<<"$undeclared" | head -n 20 |
			while IFS= read -r l; do result "case"$'\t'"[$name] $l"; done
	fi
	say "suite $name: $(tail -n1 <<<"$undeclared")"
	if [ $((np + nf + ns)) -eq 0 ]; then
		record fail "suite $name: no test result"
	elif [ "$rc" -ne 0 ] && [ "$nf" -eq 0 ]; then
		# Every test passed but the VM run failed: a kernel splat
		# (run.sh's splat check, kmemleak), a hang or a crash.
		record fail "suite $name: VM run failed (exit $rc) although every test passed: see $res/console.log"
		# Each report's first lines and, for kmemleak, the allocation's
		# backtrace (not its hex dump).
		grep -A16 -E "^splat-check: |^VM: (HANG|the guest stopped)" "$log" |
			grep -vE "hex dump|^ *([0-9a-f]{2} ){8}|^--$" | head -n 30 |
			while IFS= read -r l; do result "case"$'\t'"[$name] $l"; done
	fi
}

# The C iw_cm selftests whose expectations encode the most iw_cm
# semantics (rping, disconnect and reject, the killed listener, the
# hostile MPA peers with the test siw: the C iw_cm must turn each into the
# error event the Rust one gives): a boot of about ten minutes, run by hand
# (IWCM_CHECK_JOBS=suite_c_ci) when a test's expectations change; CI's
# make check leaves the C reference to check-all's part 2, which runs the
# whole C suite (job suite_c_all).
c_ci_tests=${IWCM_CHECK_C_TESTS:-rping.sh disconnect.sh reject_listener.sh hostile_peer.sh killed_listener.sh}
# Ours in make check, one boot of the lean kernel (two vCPUs): first the
# module's KUnit suite with its multi-CPU lifecycle stress (75,000
# lifecycles, about 106,000 cm_ids; kunit.sh requires 100,000), then the
# connection paths, the hostile MPA peers (issue 10's inputs and one case
# of each other kind), the half-open and flushed siw unplugs, the killed
# listener, a stuck handler (no other id's events stall), the
# observability (tracepoints), rmmod racing siw's last reference, the
# nvme-rdma unplug, the remote peers that never let a connection be
# established against nvmet-rdma and rping (remote_peer.sh, with
# panic_on_warn=1), and last the sample ULP's in-handler removal (own
# queue first: the variant that deadlocks the C iw_cm), whose rdma_cm
# handler_mutex lockdep report is accepted only below its start (lockdep
# is off after a report, so nothing runs after it).  The held table at
# 1,000 connections (hold_scale), the connection flood, the cm_id table
# test, the fault storm and the port mapper tests run in check-all's part
# 1 (ours), with the rest of the collection: under TCG on this 2-core
# machine the check with them, and the ULPs with the C iw_cm, did not
# finish within CI's 90 minutes (2026-12-07: 5,076 s of VM jobs before the
# last two).
rust_ci_tests=${IWCM_CHECK_RUST_TESTS:-kunit.sh rping.sh disconnect.sh reject_listener.sh hostile_peer.sh siw_halfopen_unplug.sh siw_flush.sh killed_listener.sh stuck_handler.sh trace_events.sh unload_race.sh nvme_unplug.sh remote_peer.sh sample_unplug.sh}
rust_tests_a=${IWCM_CHECK_RUST_TESTS_A:-hostile_peer.sh siw_halfopen_unplug.sh siw_flush.sh killed_listener.sh cm_table.sh connect_flood.sh hold_scale.sh stuck_handler.sh trace_events.sh unload_race.sh module_unload.sh}
rust_tests_b=${IWCM_CHECK_RUST_TESTS_B:-siw_bringup.sh rping.sh accept_race.sh ucmatose.sh cmtime.sh rdma_server_client.sh perftest.sh kill_teardown.sh disconnect.sh reject_listener.sh provider_load.sh}

job_suite_c_ci() {
	# With iwcm.c built with the port mapper client fixed
	# (tools/testing/iw_cm_c/: iwcm.c itself unchanged, so every event a
	# ULP sees is the kernel's; the kernel's own client oopses on a quick
	# registration answer); the kernel's own iw_cm.ko runs the ULP tests
	# (ulp_c).  make check-all: the whole C suite with the kernel's
	# module, and the port mapper tests in a boot of their own.
	IWCM_C_IWCM=iwpm-fixed suite c suite-c-ci "$c_ci_tests"
}
job_suite_c_all() { suite c; }
job_nvme_unplug_c() {
	# The in-tree ULP's unplug (nvmet-rdma + nvme-rdma, fio with
	# verify, then rdma link delete) with the C iw_cm too.
	suite c nvme-unplug-c "nvme_unplug.sh"
}
job_iwpm_c() {
	# The port mapper tests with iwcm.c (iwpmd killed mid-burst and
	# restarted; requests freed once answered): the kernel's port mapper
	# client oopses on a quick registration answer, so the C iw_cm here is
	# iwcm.c built with the client fixed as in ours
	# (tools/testing/iw_cm_c/), in place of the kernel's.
	IWCM_C_IWCM=iwpm-fixed suite c iwpm-c "iwpmd.sh iwpm_requests.sh"
}
# The in-kernel ULPs (NFS/RDMA, SMB Direct, nvme-rdma, iSER) through
# unplug, relink and link flaps, with each iw_cm, on the ULP flavour of the test kernel
# (tools/kernel/ulp.fragment) with the modules tools/ulp-tree.sh built for
# it in a copy of this tree.
# iser.sh runs with the test isert (tools/testing/isert/: the kernel's plus
# 0001, the DEVICE_REMOVAL handler waits for its connection's release;
# 0002, a failed control PDU taken off its connection's list; 0003,
# the cm_id destroyed after the QP and the device's resources; and 0004,
# a connection never established released), which
# tools/vm/run.sh puts in place of the kernel's; make check-all shows
# 0001's race with the kernel's isert (job isert_race).
ulp_tests=${IWCM_CHECK_ULP_TESTS:-nfs_rdma.sh smb_direct.sh nvme_flap.sh iser.sh}
ulp_tests_c=$ulp_tests
ulp_suite() {	# ulp_suite IMPL TESTS [NAME [RUN.SH-OPTIONS...]]
	local impl=$1 tests=$2 name=${3:-ulp-$1}
	shift 2; shift || true
	if [ -z "$ulp_tree" ]; then
		record fail "ULP selftests ($1): no ULP kernel and modules (tools/ulp-tree.sh failed above)"
		return
	fi
	# Bounds that a ULP hung in the kernel cannot stretch: 600 s a test
	# (each takes 2-3 minutes under TCG; the test's own bounds leave a
	# task in D state behind, logged, rather than wait for it) and
	# 1800 s the boot, so that one hang costs the check minutes, not
	# the rest of CI's time.
	local suite_timeout=${IWCM_CHECK_ULP_TIMEOUT:-1800}
	vm_top=$ulp_tree IWCM_KFLAVOUR=ulp IWCM_TEST_TIMEOUT=${IWCM_CHECK_ULP_TEST_TIMEOUT:-600} \
		suite "$impl" "$name" "$tests" "$@"
}
job_ulp_rust() { ulp_suite rust "$ulp_tests"; }
job_ulp_c() { ulp_suite c "$ulp_tests_c"; }
# The users' world (check-all part 7, users): each iw_cm with the kernel's
# own siw, rdma_cm, isert, smbdirect and cifs -- none of tools/testing/'s
# patched modules, which every other boot loads in their place (the test
# siw and rdma_cm everywhere, isert, smbdirect and cifs in the ULP boots:
# each fixes a fault of the kernel's module that a test meets, named in its
# patch) -- on the ULP kernel: the connection paths, the nvme-rdma unplug
# and the in-kernel ULPs through unplug, relink and flaps.  Where a
# kernel module fails, the test's result is an XFAIL naming the patch in
# tools/testing/ that fixes it (tools/vm/expected-skips.txt: both iw_cms
# alike); run.sh accepts upstream siw's own reports by their signatures
# (--allow-upstream-siw) and nothing else.
users_tests=${IWCM_CHECK_USERS_TESTS:-rping.sh disconnect.sh reject_listener.sh killed_listener.sh nvme_unplug.sh nfs_rdma.sh smb_direct.sh nvme_flap.sh iser.sh}
users_suite() {	# users_suite IMPL
	IWCM_SIW=stock IWCM_RDMA_CM=stock IWCM_ISERT=stock IWCM_SMBDIRECT=stock IWCM_CIFS=stock \
		ulp_suite "$1" "$users_tests" "users-$1" --allow-upstream-siw
}
job_users_rust() { users_suite rust; }
job_users_c() { users_suite c; }
job_suite_rust() { suite rust; }
job_suite_rust_ci() {
	IWCM_KUNIT_PARAMS=stress_lifecycles=75000 suite rust suite-rust-ci "$rust_ci_tests" \
		--allow-rdma-cm-lockdep-after "# selftests: iw_cm: sample_unplug.sh"
}
job_suite_rust_a() { suite rust suite-rust-a "$rust_tests_a"; }
job_suite_rust_b() { suite rust suite-rust-b "$rust_tests_b"; }
job_kunit_rust() {
	# The module's KUnit suite with its multi-CPU lifecycle stress
	# (75,000 of its lifecycles -- an active cm_id, or a listener and its
	# children -- about 106,000 cm_ids, each created, driven and
	# destroyed; kunit.sh requires 100,000; off at a plain insmod), the
	# nvme-rdma unplug, remote peers that never let a connection be
	# established against nvmet-rdma and rping (remote_peer.sh, with
	# panic_on_warn=1), the fail_iw_cm fault-injection storm, and
	# rdma-core's iwpmd: killed mid-burst and restarted (no adopted
	# address of another family), the port mapper requests freed once
	# answered (iw_cm unloaded, kmemleak scanned), and last the sample
	# ULP's in-handler removal (own queue first: the variant that
	# deadlocks the C iw_cm), whose rdma_cm handler_mutex lockdep report
	# is accepted only below its start (lockdep is off after a report, so
	# nothing runs after it).  Two vCPUs whatever the lanes use.
	IWCM_VM_SMP=${IWCM_CHECK_KUNIT_SMP:-2} IWCM_KUNIT_PARAMS=stress_lifecycles=75000 \
		suite rust kunit-nvme-fault-iwpm-sample-rust \
		"kunit.sh nvme_unplug.sh remote_peer.sh fault_storm.sh iwpmd.sh iwpm_requests.sh sample_unplug.sh" \
		--allow-rdma-cm-lockdep-after "# selftests: iw_cm: sample_unplug.sh"
}
job_kunit_scale_rust() {
	# make check-all: the KUnit stress at scale, in a boot of its own
	# (issue 25): 1,000,000 lifecycles (about 1.4 million cm_ids created,
	# driven and destroyed) beside 10,000 cm_ids kept alive at once
	# (stress_peak; idle, listening and connected, evicted at random),
	# on the KASAN kernel as every boot.  kunit.sh fails unless every
	# lifecycle ran (none cut short by the time budget), the live count
	# reached 10,000 and nothing is left; it raises KUnit's case timeout
	# to the budget plus a minute.  Measured under TCG on 2 vCPUs
	# (2026-12-06): 100,000 lifecycles with the 10,000 kept alive in
	# 100 s, so about 1,000 s (17 min) for this one; the budget
	# (stress_budget_s, IWCM_CHECK_KUNIT_SCALE_S) is three times that,
	# and the kselftest runner's and the VM's timeouts follow it.
	local budget=${IWCM_CHECK_KUNIT_SCALE_S:-3000}
	local suite_timeout=$((budget + 1200 > suite_timeout ? budget + 1200 : suite_timeout))
	IWCM_VM_SMP=${IWCM_CHECK_KUNIT_SMP:-2} IWCM_TEST_TIMEOUT=$((budget + 600)) \
		IWCM_KUNIT_PARAMS="stress_lifecycles=1000000 stress_peak=10000 stress_budget_s=$budget" \
		suite rust kunit-scale-rust "kunit.sh"
}
job_hostile_upstream_rust() {
	# make check-all: hostile MPA peers against upstream siw (issue 10:
	# ours survives what oopses the C iw_cm), a boot of its own, since
	# upstream siw's BH-unsafe sk_callback_lock primes lockdep against
	# later tests (make check runs it last in suite_rust_ci's boot).
	suite rust hostile-upstream-rust "hostile_peer_upstream.sh"
}
job_suite_stock_siw_rust() {
	# make check-all: the whole selftest collection (job suite_rust's)
	# with ours against the kernel's own, unpatched siw (IWCM_SIW=stock),
	# a boot of its own.  Where upstream siw itself fails (a fault that a
	# tools/testing/siw patch fixes), the test reports an XFAIL naming
	# that patch, only with IWCM_SIW=stock; a case that would crash
	# upstream siw is not run there (XFAIL with its patch); the splat
	# check accepts only upstream siw's own reports, each by its
	# signature (splat-check.py --allow-upstream-siw: 0002's lockdep
	# report, 0006's leaked endpoint).  Documentation/testing.rst has
	# the table.
	IWCM_SIW=stock suite rust suite-stock-siw-rust "" --allow-upstream-siw
}
job_gid_race() {
	# rdma_cm's GID attribute race under unplug (tools/testing/rdma_cm/
	# 0001), its window widened: the kernel's order must oops in
	# free_gid_work, the test rdma_cm's must not.  Two short boots.
	say "== tools/testing/rdma_cm/repro-gid-race.sh"
	local log=$IWCM_RESULTS_DIR/repro-gid-race.out n l
	"$top/tools/testing/rdma_cm/repro-gid-race.sh" 2>&1 | tee "$log" | grep -E "^(not )?ok [0-9]|^repro:"
	for n in 1 2; do
		l=$(grep -E "^(not )?ok $n " "$log" | head -n1)
		case "$l" in
		"ok "*) record pass "rdma_cm GID race: ${l#ok $n }" ;;
		*) record fail "rdma_cm GID race: ${l:-case $n did not run}" ;;
		esac
	done
}
job_isert_race() {
	# isert's DEVICE_REMOVAL race (tools/testing/isert/0001), its window
	# widened: the kernel's isert must free the connection under its
	# release with the C iw_cm, the test isert must pass iser.sh with
	# both iw_cms.  Three ULP-kernel boots.
	say "== tools/testing/isert/repro-removal-race.sh"
	local log=$IWCM_RESULTS_DIR/repro-isert-race.out n l
	"$top/tools/testing/isert/repro-removal-race.sh" 2>&1 | tee "$log" | grep -E "^(not )?ok [0-9]|^repro:"
	for n in 1 2 3; do
		l=$(grep -E "^(not )?ok $n " "$log" | head -n1)
		case "$l" in
		"ok "*) record pass "isert removal race: ${l#ok $n }" ;;
		*) record fail "isert removal race: ${l:-case $n did not run}" ;;
		esac
	done
}
job_soak_rust() {
	# The siw unplug soak (tools/stress/siw-soak.sh), short: rping,
	# ucmatose and the sample ULP connected, rdma link delete under
	# traffic, every gate per cycle.  `make soak DURATION=...` runs it long.
	local soak=${IWCM_CHECK_SOAK:-180} log rc sum
	say "== siw unplug soak, ${soak} s, IWCM_IMPL=rust"
	log=$IWCM_RESULTS_DIR/soak-rust.out
	IWCM_SOAK_BOOT=${soak}s "$top/tools/stress/soak.sh" "${soak}s" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	result suite
	sum=$(sed -n 's/^  \(cycles done\|failed cycles\|splats\|leaks\): *//p' "$log" | tr '\n' ',' | sed 's/,$//')
	if [ "$rc" -eq 0 ]; then
		record pass "soak rust: siw unplug micro-cycles, all gates green (cycles/failed/splats/leaks: $sum)"
	else
		record fail "soak rust: siw unplug micro-cycles (exit $rc; cycles/failed/splats/leaks: $sum)"
	fi
}
job_stress_rust() {
	# siw hot-unplug stress (tools/stress): nvmet-rdma + nvme-rdma with
	# fio verify, rping/ucmatose/cmtime churn, rdma link delete mid-I/O;
	# per-cycle gates (splats, cm_id count, rdma_cm ids, kmemleak every
	# 10 cycles) plus the VM's own splat gate.
	local ncyc=${IWCM_CHECK_STRESS_CYCLES:-20} log t rc sum
	say "== siw hot-unplug stress, $ncyc cycles, IWCM_IMPL=rust"
	log=$IWCM_RESULTS_DIR/stress-rust.out
	t=$(date +%s.%N)
	IWCM_IMPL=rust "$top/tools/stress/run-stress.sh" -c "$ncyc" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	result suite
	# The guest's lines come through the serial console with CRLF endings.
	sum=$(tr -d '\r' < "$log" | sed -n 's/^  \(cycles failed\|slowest delete\|leaks\|splats\|verify mismatches\): *//p' | tr '\n' ',' | sed 's/,$//')
	if [ "$rc" -eq 0 ] && tr -d '\r' < "$log" | grep -qE "^  cycles failed: +0$"; then
		record pass "stress rust: $ncyc unplug cycles, all gates green ($(secs_since "$t") s; failed/slowest/leaks/splats/mismatches: $sum)"
	else
		record fail "stress rust: $ncyc unplug cycles (exit $rc; $sum)"
	fi
}

# The job list, longest first (a lane takes the next one when it is free).
lanes=${IWCM_CHECK_LANES:-1}
case "$lanes" in [1-4]) ;; *) echo "check: IWCM_CHECK_LANES must be 1-4" >&2; exit 2 ;; esac
jobs=()
have_rust=0
[ -f "$top/drivers/infiniband/core/iw_cm/iw_cm.ko" ] && have_rust=1
if [ $have_rust -eq 1 ]; then
	[ $all -eq 1 ] && jobs+=(stress_rust kunit_scale_rust)
	if [ $all -eq 0 ]; then
		jobs+=(suite_rust_ci)
	elif [ "$lanes" -gt 1 ]; then
		jobs+=(suite_rust_a suite_rust_b)
	else
		jobs+=(suite_rust)
	fi
fi
# The C iw_cm reference (its selftests, the ULPs with the kernel's
# iw_cm.ko) runs in check-all (parts 2 and 4), not in make check: with it
# the check did not finish within CI's 90 minutes (2026-12-07, 5,400 s
# with two boots left).  IWCM_CHECK_JOBS=suite_c_ci runs make check's C
# subset by hand.
[ $all -eq 1 ] && jobs+=(suite_c_all nvme_unplug_c iwpm_c)
[ $have_rust -eq 1 ] && jobs+=(ulp_rust)
[ $all -eq 1 ] && jobs+=(ulp_c)
if [ $have_rust -eq 1 ]; then
	[ $all -eq 1 ] && jobs+=(kunit_rust)
	[ $all -eq 1 ] && jobs+=(hostile_upstream_rust suite_stock_siw_rust)
	[ $all -eq 1 ] && jobs+=(soak_rust gid_race isert_race)
	[ $all -eq 1 ] && jobs+=(users_rust users_c)
else
	say "note: drivers/infiniband/core/iw_cm/iw_cm.ko not built: the Rust iw_cm jobs are skipped"
	record skip "Rust iw_cm jobs: drivers/infiniband/core/iw_cm/iw_cm.ko not built"
fi
jobs+=(neg)
# PART (make check-all PART=N): that part's jobs.
# IWCM_CHECK_JOBS="suite_rust_ci neg ...": only these jobs (a developer's
# re-run of part of the check; the static parts still run).
if [ -n "${part_jobs:-}" ]; then
	read -ra jobs <<<"$part_jobs"
	say "check-all part $part_sel: ${jobs[*]}"
fi
if [ -n "${IWCM_CHECK_JOBS:-}" ]; then
	read -ra jobs <<<"$IWCM_CHECK_JOBS"
	for j in "${jobs[@]}"; do
		declare -F "job_$j" >/dev/null || { echo "check: no job '$j' (IWCM_CHECK_JOBS)" >&2; exit 2; }
	done
fi

part "ULP kernel and modules"
ulp_tree=
if [[ " ${jobs[*]} " != *" ulp_"[rc]* ]] && [[ " ${jobs[*]} " != *" users_"* ]]; then
	say "note: no ULP job in the list: the ULP kernel is not built"
else
	say "== the ULP flavour of the test kernel and our modules for it (tools/ulp-tree.sh)"
	t=$(date +%s.%N)
	if ulp_tree=$("$top/tools/ulp-tree.sh" 2>&1 | tee "$IWCM_RESULTS_DIR/ulp-tree.log" | tail -n1) &&
			[ -d "$ulp_tree/tools/vm" ]; then
		record pass "ULP kernel and modules ready ($(secs_since "$t") s; $(grep -h "^kernel: \(reusing\|compiled\)" "$IWCM_RESULTS_DIR/ulp-tree.log" | head -n1))"
	else
		tail -n 20 "$IWCM_RESULTS_DIR/ulp-tree.log"
		record fail "ULP kernel and modules (tools/ulp-tree.sh, log $IWCM_RESULTS_DIR/ulp-tree.log)"
		ulp_tree=
	fi
fi

part "VM jobs (${#jobs[@]} jobs in $lanes lanes)"
say "== VM jobs, $lanes lane(s) side by side: ${jobs[*]}"
jobs_dir=$IWCM_RESULTS_DIR/jobs
mkdir -p "$jobs_dir"
echo 0 > "$jobs_dir/next"
: > "$jobs_dir/times"
lane() {	# lane N: run jobs off the list until none is left
	local ln=$1 i name id t0 secs out
	if [ "$lanes" -gt 1 ]; then
		export IWCM_VM_LOCK=$IWCM_CACHE/check-lane-$ln.lock
		export IWCM_VM_SMP=${IWCM_CHECK_VM_SMP:-1}
	fi
	while :; do
		i=$(flock "$jobs_dir/next.lock" bash -c 'i=$(cat "$1"); echo $((i + 1)) > "$1"; echo "$i"' _ "$jobs_dir/next")
		[ "$i" -lt "${#jobs[@]}" ] || break
		name=${jobs[$i]}
		id=$(printf '%02d' "$i")-$name
		out=$jobs_dir/$id.out
		t0=$(date +%s)
		{ flock 8; say "[lane $ln] $name: started at $(date +%H:%M:%S)"; } 8>"$jobs_dir/stdout.lock"
		( jobdir=$jobs_dir
		  job_id=$id
		  : > "$jobdir/$job_id.res"
		  "job_$name" ) >"$out" 2>&1
		secs=$(($(date +%s) - t0))
		printf '%6d s  %s (lane %s)\n' "$secs" "$name" "$ln" >> "$jobs_dir/times"
		# The job's own summary lines, in one piece.
		{ say "[lane $ln] $name: done in $secs s (log $out)"
		  grep -E "^check: " "$out" | grep -v "^check: == " | sed 's/^check: /check:   /'
		} > "$out.summary"
		{ flock 8; cat "$out.summary"; } 8>"$jobs_dir/stdout.lock"
	done
}
lane_pids=()
for ((l = 1; l <= lanes; l++)); do
	lane "$l" &
	lane_pids+=($!)
	sleep 5
done
trap 'kill "${lane_pids[@]}" 2>/dev/null; pkill -P $$ 2>/dev/null' INT TERM
wait "${lane_pids[@]}"
while IFS= read -r l; do parts+=("$l"); done < "$jobs_dir/times"
for f in "$jobs_dir"/*.res; do
	[ -e "$f" ] || continue
	while IFS= read -r l; do result "$l"; done < "$f"
done
[ $all -eq 1 ] || say "(make check-all adds the rest of our selftests with the fault storm and the port mapper, the ULPs with the C iw_cm, the whole C iw_cm suite, the nvme-rdma unplug with the C iw_cm, the KUnit stress at 10^6 lifecycles with 10,000 live cm_ids, the siw unplug soak, the nvme-rdma stress and rdma_cm's GID race)"

finish
