# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Per-cycle gates shared by the guest-side stress scripts
# (unplug-stress.sh: nvme-rdma; siw-soak.sh: siw micro-cycles).  Sourced
# after tools/testing/selftests/iw_cm/lib.sh.
#
#   stress_new_splats FROM_LINE [LOG]
#                                 splat lines of dmesg (or of LOG, a file the
#                                 kernel log is copied to) after line FROM_LINE
#   stress_cmids_back BASE        the Rust iw_cm's live cm_id count back to
#                                 BASE within 10 s (true when BASE is empty)
#   stress_rdma_ids_left          some rdma_cm id is still listed
#   stress_kmemleak               scan twice; print and clear any leak report;
#                                 false when a leak was reported
#
# IWCM_ALLOW_RDMA_CM_LOCKDEP=1 accepts rdma_cm's handler_mutex lockdep
# report (Documentation/iw_cm.rst) in stress_new_splats; the VM's own splat
# check (tools/vm/splat-check.py) matches it narrowly.

stress_splat_re='WARNING:|BUG:|Oops|INFO: task .* blocked|possible (recursive|circular) locking|inconsistent lock state|general protection|UBSAN:|KASAN:|kernel BUG|refcount_t:|unreferenced object|soft lockup|rcu.*stall'

__stress_log() { if [ -n "${1:-}" ]; then cat "$1"; else dmesg; fi; }
stress_new_splats() {
	local s
	s=$(__stress_log "${2:-}" | tail -n +"$(($1 + 1))" | grep -E "$stress_splat_re")
	if [ -n "$s" ] && [ "${IWCM_ALLOW_RDMA_CM_LOCKDEP:-0}" = 1 ] &&
	   __stress_log "${2:-}" | tail -n +"$(($1 + 1))" | grep -q "handler_mutex"; then
		s=$(grep -vE "possible (recursive|circular) locking" <<<"$s")
	fi
	printf '%s' "$s"
}

stress_cmids_back() {
	[ -z "$1" ] && return 0
	iwcm_wait_for 10 bash -c "[ \"\$(tr -d ' \n' < $IWCM_CMIDS)\" = $1 ]"
}

stress_rdma_ids_left() {
	rdma resource show cm_id 2>/dev/null | grep -q .
}

stress_kmemleak() {
	[ -w /sys/kernel/debug/kmemleak ] || return 0
	echo scan > /sys/kernel/debug/kmemleak
	echo scan > /sys/kernel/debug/kmemleak
	if grep -q "unreferenced object" /sys/kernel/debug/kmemleak; then
		head -60 /sys/kernel/debug/kmemleak | sed 's/^/stress:   kmemleak: /'
		echo clear > /sys/kernel/debug/kmemleak
		return 1
	fi
	return 0
}
