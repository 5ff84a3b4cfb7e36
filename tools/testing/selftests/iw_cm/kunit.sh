#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The Rust iw_cm's KUnit suite (rust_iw_cm: the glue against a fake iWARP
# provider) lives in iw_cm_kunit.ko and runs when that module is loaded.
# iw_cm.ko carries only the in-place suites of its pure functions
# (IWCM_INPLACE_SUITES: #[kunit_tests] at the end of cm_id/portmap.rs,
# state.rs and cm_id/table.rs), which KUnit runs when iw_cm.ko is loaded.  This test
# first loads iw_cm.ko alone and checks that it says nothing but those
# suites' KTAP, registers no other suite and depends on nothing of
# KUnit's, and reports the in-place suites' results; then it loads the
# test module (IWCM_KUNIT_PARAMS), reports its KTAP results from debugfs,
# and unloads it.  Skips with the C iw_cm, which has no such suite.
# The concurrency stress runs when IWCM_KUNIT_PARAMS asks for it
# (stress_lifecycles=N, make check 75000; with stress_peak=M, make
# check-all's 1,000,000 lifecycles beside 10,000 live cm_ids): every
# lifecycle must have run (none cut short by its time budget,
# stress_budget_s, of which KUnit's case timeout is raised to fit) and
# the live count must have reached M.
. "$(dirname "$0")/lib.sh"

RES=/sys/kernel/debug/kunit/rust_iw_cm/results
# The suites of iw_cm.ko itself (its pure functions, tested in place).
IWCM_INPLACE_SUITES="rust_iw_cm_portmap rust_iw_cm_state rust_iw_cm_table"

# kunit_case_counts SUITE < RESULTS: "PLAN RAN SKIPPED" of SUITE's own
# cases in KUnit's KTAP (the lines at the indentation of its "# Subtest:").
kunit_case_counts() {
	awk -v suite="$1" '
		!found && $0 ~ "^[[:space:]]*# Subtest: " suite "$" { found = 1; match($0, /^[[:space:]]*/); ind = substr($0, 1, RLENGTH); next }
		!found { next }
		substr($0, 1, length(ind)) != ind { next }
		{ rest = substr($0, length(ind) + 1) }
		rest ~ /^[[:space:]]/ { next }
		rest ~ /^1\.\.[0-9]+$/ && plan == "" { plan = substr(rest, 4) }
		rest ~ /^(not )?ok [0-9]+ / { ran++; if (rest ~ /# SKIP/) skipped++ }
		END { printf "%s %d %d\n", plan, ran, skipped }'
}

IWCM_FINISH_CHECKS=0
iwcm_init kunit 11 modinfo insmod rmmod
[ "$IWCM_IMPL" = rust ] || iwcm_skip_all "kunit: the KUnit suite belongs to the Rust iw_cm (IWCM_IMPL=$IWCM_IMPL)"
# A KUnit that is built in but disabled (kunit.enable=0, the default of a
# kernel without CONFIG_KUNIT_DEFAULT_ENABLED) runs nothing: a failure,
# not a skip, or the suite would silently stop running.
if [ "$(cat /sys/module/kunit/parameters/enable 2>/dev/null)" = N ]; then
	ktap_test_fail "KUnit is disabled on this kernel: boot with kunit.enable=1 kunit.autorun=1"
	ktap_finished
fi
# A kernel without KUnit builds no test module (a skip); one with KUnit
# must have it (a failure: the suite would silently stop running).
if [ ! -f "$IWCM_KUNIT_KO" ]; then
	[ -d /sys/module/kunit ] || iwcm_skip_all "kunit: this kernel has no KUnit, so no $IWCM_KUNIT_KO"
	ktap_test_fail "kunit: no $IWCM_KUNIT_KO on a kernel with KUnit (make modules builds it)"
	ktap_finished
fi

# iw_cm.ko alone: loaded fresh, it must print nothing but the KTAP of its
# in-place suites (and the kernel's own one-time "loading out-of-tree
# module taints kernel"), register no suite but those and depend on
# nothing of KUnit's (the depends check matters on a CONFIG_KUNIT=m
# kernel, where #[kunit_tests] compiles no suite; with =y there is no
# kunit module).
[ -d /sys/module/iw_cm ] && rmmod rdma_ucm rdma_cm iw_cm 2>/dev/null
if [ -d /sys/module/iw_cm ]; then
	ktap_test_fail "iw_cm.ko alone: cannot unload the iw_cm already loaded for a fresh insmod"
	ktap_finished
fi
mark=$(dmesg | wc -l)
if ! load_iw_cm; then
	# (With ours under test, a module that does not load is broken.)
	ktap_test_fail "kunit: cannot load the Rust iw_cm ($IWCM_RUST_KO)"
	ktap_finished
fi
sleep 1
# Only iw_cm's own lines and KUnit's count: another subsystem's line in
# that second (seen: "clocksource: Watchdog remote CPU 1 read timed out"
# under TCG) is shown, not held against iw_cm.ko.
# KUnit's KTAP lines at this insmod are those of iw_cm.ko's in-place
# suites (their results are checked below, from debugfs).
new=$(dmesg | tail -n +"$((mark + 1))" | sed -E 's/^\[ *[0-9.]+\] ?//' |
	grep -vE '^(iw_cm: )?loading out-of-tree module taints kernel\.$' |
	grep -vE '^ *(KTAP version [0-9]+|1\.\.[0-9]+|# .*|(not )?ok [0-9]+ .*)$' || true)
ours='^(iw_cm|iwpm|rust_iw_cm|kunit|KTAP)|^ *(# Subtest|(not )?ok [0-9])'
said=$(printf '%s\n' "$new" | grep -E "$ours" || true)
printf '%s\n' "$new" | grep -vE "$ours" | grep -v '^$' |
	while IFS= read -r l; do ktap_print_msg "(another subsystem meanwhile: $l)"; done
deps=$(modinfo -F depends "$IWCM_RUST_KO")
quiet=1
[ -z "$said" ] || { quiet=0; printf '%s\n' "$said" | while IFS= read -r l; do ktap_print_msg "iw_cm.ko said: $l"; done; }
[ ! -e /sys/kernel/debug/kunit/rust_iw_cm ] || { quiet=0; ktap_print_msg "iw_cm.ko registered the rust_iw_cm suite"; }
[[ ,$deps, != *,kunit,* ]] || { quiet=0; ktap_print_msg "iw_cm.ko depends on: $deps"; }
iwcm_check "iw_cm.ko alone runs only its in-place tests: silent at insmod but their KTAP, no rust_iw_cm suite, depends '$deps'" [ $quiet -eq 1 ]

# The in-place suites' results, as KUnit wrote them at that insmod.
inplace=0 inplace_bad=0 inplace_missing=
for s in $IWCM_INPLACE_SUITES; do
	r=/sys/kernel/debug/kunit/$s/results
	if [ ! -r "$r" ]; then
		inplace_missing="$inplace_missing $s"
		continue
	fi
	while IFS= read -r l; do ktap_print_msg "$l"; done < "$r"
	inplace=$((inplace + $(grep -cE "^ +(not )?ok [0-9]+ " "$r")))
	inplace_bad=$((inplace_bad + $(grep -cE "^ +not ok [0-9]+ " "$r")))
	grep -qE "^ok [0-9]+ $s\b" "$r" || inplace_bad=$((inplace_bad + 1))
done
[ -z "$inplace_missing" ] || ktap_print_msg "iw_cm.ko registered no suite:$inplace_missing"
iwcm_check "iw_cm.ko in-place KUnit suites ($IWCM_INPLACE_SUITES): $inplace cases, $inplace_bad failed" \
	eval '[ -z "$inplace_missing" ] && [ "$inplace" -ge 2 ] && [ "$inplace_bad" -eq 0 ]'

# A stress given more time than KUnit's case timeout leaves (its budget
# plus a minute for the rest of its case) gets that timeout raised for
# this load, and put back after.
kparam() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<" $IWCM_KUNIT_PARAMS "; }
budget=$(kparam stress_budget_s)
ktimeout=/sys/module/kunit/parameters/timeout
old_timeout=
if [ -n "$budget" ] && [ -w "$ktimeout" ] && [ $((budget + 60)) -gt "$(cat "$ktimeout")" ]; then
	old_timeout=$(cat "$ktimeout")
	echo $((budget + 60)) > "$ktimeout"
	ktap_print_msg "KUnit case timeout raised from $old_timeout s to $((budget + 60)) s (stress_budget_s=$budget)"
fi
mark=$(dmesg | wc -l)
# shellcheck disable=SC2086
if ! insmod "$IWCM_KUNIT_KO" $IWCM_KUNIT_PARAMS; then
	ktap_test_fail "insmod $IWCM_KUNIT_KO $IWCM_KUNIT_PARAMS"
	ktap_finished
fi
[ -z "$old_timeout" ] || echo "$old_timeout" > "$ktimeout"
if [ ! -r "$RES" ]; then
	rmmod iw_cm_kunit
	ktap_test_fail "kunit: no $RES (the test kernel has CONFIG_KUNIT_DEBUGFS: tools/kernel/config.fragment)"
	ktap_finished
fi

while IFS= read -r l; do ktap_print_msg "$l"; done < "$RES"
# The suite's cases, at its own indentation (a parameterised case's own
# results sit deeper): as many as the suite's plan, none skipped.
counts=$(kunit_case_counts rust_iw_cm < "$RES")
read -r plan total skipped <<<"$counts"
bad=$(grep -cE "^ +not ok [0-9]+ " "$RES")
iwcm_check "rust_iw_cm KUnit: every case of the suite's plan ran ($total of ${plan:-no plan})" \
	eval '[ -n "$plan" ] && [ "$plan" -gt 0 ] && [ "$total" -eq "$plan" ]'
if [ "${skipped:-0}" -gt 0 ]; then
	grep -E "^ +ok [0-9]+ .*# SKIP" "$RES" | while IFS= read -r l; do ktap_print_msg "skipped: $l"; done
fi
iwcm_check "rust_iw_cm KUnit: no case skipped (${skipped:-?})" [ "${skipped:-1}" -eq 0 ]
suite_ok=$(grep -cE '^ok [0-9]+ rust_iw_cm' "$RES")
good=0
[ "$bad" -eq 0 ] && [ "$suite_ok" -eq 1 ] && good=1
iwcm_check "rust_iw_cm KUnit: no failed case ($bad failed), suite ok" [ "$good" -eq 1 ]

# The suite's kernel log: between its KTAP header and its totals only KTAP
# lines may appear, plus
#  - the provider faults bad_provider_input_matrix injects on purpose (with
#    the fault expected, iw_cm logs them at info level and does not WARN),
#    and its summary line;
#  - the port mapper client's notice that no iwpmd runs (printed by the C
#    iw_cm's first listen too);
#  - concurrency_stress's seed line and its summary when nothing was bad
#    (its expected provider faults are counted, not logged);
#  - the CLOSE iw_cm delivers itself when the fake provider reports none
#    after a disconnect before ESTABLISHED
#    (an_aborted_accept_hears_close_within_the_bound).
# Anything else (a fixture feeding the kernel's port mapper a sockaddr of
# no family, a warning of iw_cm's that no case expects) fails here.
window=$(dmesg | tail -n +"$((mark + 1))" | sed -n '/# Subtest: rust_iw_cm/,/# rust_iw_cm: pass:/p')
stray=$(printf '%s\n' "$window" | sed -E 's/^\[ *[0-9.]+\] ?//' |
	# The fault injection a case arms on purpose (fail_nth on fail_iw_cm,
	# requests_are_handed_back_without_allocating): its report and stack
	# dump, up to the stack's end.  Another fault attribute's stays.
	awk '/^[[:space:]]*FAULT_INJECTION: forcing a failure/ { held = $0; next }
	     held != "" { if ($0 ~ /^[[:space:]]*name fail_iw_cm,/) skip = 1; else print held; held = "" }
	     skip { if ($0 ~ /<\/TASK>/) skip = 0; next }
	     { print }' |
	grep -vE '^ *(KTAP version|1\.\.[0-9]|(not )?ok [0-9]+ |#|$)' |
	grep -vE '^iw_cm(_kunit)?: (provider event .* dropped|provider event [0-9]+ on a cm_id that is not connecting, accepting or listening|unknown provider event [0-9]+|bad provider input: .* 0 bad|provider event -?[0-9]+ \(status -?[0-9]+, private data length [0-9]+\) malformed \(faults 0x[0-9a-f]+\): (refused|delivered with the faulty fields dropped or corrected)|event contents: [0-9]+ cases, 0 bad|rem_ref without a matching add_ref: ignored|cm_id [0-9]+: no CLOSE from the provider [0-9]+ ms after a disconnect before ESTABLISHED: closed by iw_cm|concurrency stress: seed 0x[0-9a-f]+ \(replay: iw_cm_kunit\.stress_seed=0x[0-9a-f]+\), [0-9]+ lifecycles on [0-9]+ workers, [0-9]+ cm_ids kept alive|concurrency stress: [0-9]+ lifecycles .*: 0 bad|concurrency stress: skipped \(iw_cm_kunit\.stress_lifecycles=0\))$' |
	grep -v '^iwpm_register_pid: Unable to send a nlmsg' |
	# The clocksource watchdog's complaint when a TCG guest's vCPU was
	# descheduled on a loaded host (seen during the minutes of the
	# concurrency stress): the host's timing, not the suite's.
	grep -vE '^(clocksource: |tsc: Marking TSC unstable|sched_clock: Marking unstable)' |
	# CONFIG_DEBUG_STACK_USAGE's note when a task (here a KUnit case's
	# thread) exits with a new deepest stack: information, not a fault.
	grep -vE '^[A-Za-z0-9_/:.-]+ \([0-9]+\) used greatest stack depth: [0-9]+ bytes left$' || true)
[ -n "$window" ] || ktap_print_msg "the suite's lines are no longer in the kernel log"
# The concurrency stress runs only when asked for (IWCM_KUNIT_PARAMS=
# stress_lifecycles=N, as make check does): a stress that was asked
# for and did not run fails; one nobody asked for is reported as skipped.
stress=$(printf '%s\n' "$window" | grep -oE 'concurrency stress: [0-9]+ lifecycles \([0-9]+ cm_ids\) on [0-9]+ CPUs in [0-9]+ ms' | head -n1)
# Its summary's peak: "peak live cm_ids P (asked M, K parked)".
peak=$(printf '%s\n' "$window" | sed -n 's/.*concurrency stress: [0-9]* lifecycles .* peak live cm_ids \([0-9]*\) (asked.*/\1/p' | head -n1)
if [[ " $IWCM_KUNIT_PARAMS " == *" stress_lifecycles="[1-9]* ]]; then
	iwcm_check "KUnit concurrency stress ran (${stress:-did not run})" [ -n "$stress" ]
	# All of them: a stress out of time (its budget, stress_budget_s)
	# starts no more lifecycles and fails here too, whatever else it says.
	asked=$(kparam stress_lifecycles)
	done_n=$(sed -n 's/^concurrency stress: \([0-9]*\) lifecycles.*/\1/p' <<<"$stress")
	iwcm_check "KUnit concurrency stress ran every lifecycle asked for: ${done_n:-none} of $asked" [ "${done_n:-0}" -eq "$asked" ]
	# Each of its lifecycles is an active cm_id or a listener with its
	# children: the cm_ids are what iw_cm created, drove and freed.
	# 100,000 for make check's 75,000 lifecycles; a smaller stress asked
	# for by hand needs at least one cm_id per lifecycle.
	ids=$(sed -n 's/.*(\([0-9]*\) cm_ids).*/\1/p' <<<"$stress")
	min_ids=${IWCM_KUNIT_MIN_CM_IDS:-$(( asked >= 75000 ? 100000 : asked ))}
	iwcm_check "KUnit concurrency stress drove at least $min_ids cm_ids (${ids:-none})" [ "${ids:-0}" -ge "$min_ids" ]
	# With stress_peak=M, M cm_ids alive at once (the case checks it
	# too; its summary says how many were).
	want_peak=$(kparam stress_peak)
	if [ "${want_peak:-0}" -gt 0 ]; then
		iwcm_check "KUnit concurrency stress held at least $want_peak cm_ids alive at once (peak ${peak:-not reported})" [ "${peak:-0}" -ge "$want_peak" ]
	else
		ktap_print_msg "KUnit concurrency stress: peak live cm_ids ${peak:-not reported} (no stress_peak asked for)"
		ktap_test_skip "KUnit concurrency stress peak: no stress_peak asked for"
	fi
else
	ktap_test_skip "KUnit concurrency stress: not asked for (IWCM_KUNIT_PARAMS=stress_lifecycles=N)"
	ktap_test_skip "KUnit concurrency stress lifecycles: no stress asked for"
	ktap_test_skip "KUnit concurrency stress cm_id count: no stress asked for"
	ktap_test_skip "KUnit concurrency stress peak: no stress asked for"
fi
[ -z "$stray" ] || printf '%s\n' "$stray" | while IFS= read -r l; do ktap_print_msg "stray: $l"; done
clean=0
[ -n "$window" ] && [ -z "$stray" ] && clean=1
iwcm_check "rust_iw_cm KUnit: its kernel log holds only KTAP lines" [ "$clean" -eq 1 ]
iwcm_check "rmmod iw_cm_kunit, then iw_cm's cm_id count is 0 ($(iwcm_cm_ids))" \
	eval 'rmmod iw_cm_kunit && [ "$(iwcm_cm_ids)" = 0 ]'
iwcm_finish
