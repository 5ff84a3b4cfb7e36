# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The metric groups of tools/bench/bench-guest.sh and what each needs
# beyond the lean test kernel and `make modules siw rdma_cm` (the test
# siw, the test rdma_cm, the selftests' helpers), for bench.sh, which
# builds and boots what they need, and tools/demo.sh, which runs a named
# few of them in its own boot.  Sourced; no side effects.

BENCH_ALL_GROUPS="cmtime ucmatose send_lat hol mem teardown scale irqsoff"

# bench_group_needs GROUP: what GROUP needs beyond the lean kernel and its
# modules, empty for nothing; non-zero for an unknown group.
bench_group_needs() {
	case "$1" in
	cmtime | ucmatose | send_lat | hol | mem | teardown) ;;
	scale) echo "tools/bench/iw_cm_scale/iw_cm_scale.ko (bench.sh builds it)" ;;
	irqsoff) echo "the trace kernel (IWCM_KFLAVOUR=trace, a boot of its own: bench.sh) and iw_cm_scale.ko" ;;
	*) return 1 ;;
	esac
}

# bench_groups_lean GROUPS...: true when every group is known and runs on
# the lean kernel with the modules alone; otherwise prints why, one line
# per group, and returns 1.  At least one group.
bench_groups_lean() {
	local g needs bad=0
	[ $# -gt 0 ] || { echo "no bench group named"; return 1; }
	for g in "$@"; do
		if ! needs=$(bench_group_needs "$g"); then
			echo "unknown bench group '$g' (known: $BENCH_ALL_GROUPS)"
			bad=1
		elif [ -n "$needs" ]; then
			echo "bench group '$g' needs $needs"
			bad=1
		fi
	done
	return $bad
}
