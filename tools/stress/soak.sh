#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# `make soak DURATION=100m`: the siw unplug soak (tools/stress/siw-soak.sh)
# in the test VM (KASAN, lockdep, kmemleak) with our iw_cm, until the time
# is up, in boots of at most IWCM_SOAK_BOOT (default 30m) each, so that one
# boot's failure does not end the soak.  Prints per-boot summaries and the
# totals: cycles done, cycles per hour, failed cycles, splats, leaks.
#
#   tools/stress/soak.sh DURATION      DURATION: 90s, 100m, 2h (default 10m)
#
# Environment: IWCM_SOAK_BOOT (boot length), IWCM_SOAK_SEED (first boot's
# seed; every boot its own seed after it), IWCM_SOAK_VMS (VMs side by side,
# default 1: on 2 cores a second TCG guest uses the time the first spends
# waiting; lanes get 1 vCPU each unless IWCM_VM_SMP says otherwise), IWCM_SOAK_IO_QUEUES (sample ULP I/O queues,
# default 2), IWCM_IMPL (default rust).  Exit status non-zero when any
# cycle, gate or VM run failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$top" || exit 1

secs_of() {	# secs_of 90s|100m|2h|3600 -> seconds
	case "$1" in
	*h) echo $(( ${1%h} * 3600 )) ;;
	*m) echo $(( ${1%m} * 60 )) ;;
	*s) echo "${1%s}" ;;
	*[!0-9]*|'') echo "soak: bad duration '$1' (90s, 100m, 2h)" >&2; return 1 ;;
	*) echo "$1" ;;
	esac
}
total=$(secs_of "${1:-10m}") || exit 2
chunk=$(secs_of "${IWCM_SOAK_BOOT:-30m}") || exit 2
seed=${IWCM_SOAK_SEED:-$(date +%s)}
impl=${IWCM_IMPL:-rust}
vms=${IWCM_SOAK_VMS:-1}
case "$vms" in [1-9]) ;; *) echo "soak: IWCM_SOAK_VMS must be 1-9" >&2; exit 2 ;; esac
# Lanes side by side get one vCPU each (tools/vm/run.sh IWCM_VM_SMP):
# under TCG, two 2-vCPU guests on 2 host cores preempt each other's lock
# holders; measured here, a cycle took 95 s with 2 vCPUs and 48 s with 1.
[ "$vms" -gt 1 ] && export IWCM_VM_SMP=${IWCM_VM_SMP:-1}
commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ "$(git -C "$top" status --porcelain 2>/dev/null | grep -v '^??' | head -c1)" ] && commit="$commit+dirty"
[ "$total" -ge 120 ] || { echo "soak: DURATION must be at least 2m (a boot needs time to run cycles)" >&2; exit 2; }
tmp=$(mktemp -d)
lock_base=$(bash -c '. tools/kernel/env.sh; echo "$IWCM_CACHE"')/soak-vm
echo "soak: $impl iw_cm, ${total}s in boots of up to ${chunk}s, $vms VM(s) side by side (${IWCM_VM_SMP:-2} vCPU each), first seed $seed, commit $commit"

# (After the set-up above: a lane's first boot needs the whole of a
# 180 s soak, make check's.)
t0=$(date +%s)
# lane N: boots one after another until the time is up; its totals go to
# $tmp/lane-N ("boots cycles failed splats leaks bad_boots") and its notes
# to $tmp/lane-N.notes.  IWCM_SOAK_VMS lanes run side by side, each VM with
# its own lock (tools/vm/run.sh serialises VMs on one lock by default).
lane() {
	local ln=$1 boots=0 cycles=0 failed=0 splats=0 leaks=0 bad_boots=0
	local left d s log rc c f sp lk tag=""
	[ "$vms" -gt 1 ] && tag="[vm$ln] "
	: > "$tmp/lane-$ln.notes"
	while :; do
		left=$(( total - ($(date +%s) - t0) ))
		# A boot costs about a minute before its first cycle: not worth
		# it with less than three left (a lane's first boot always runs:
		# DURATION is at least two minutes).
		[ "$left" -ge 180 ] || [ "$boots" -eq 0 ] || break
		[ ! -e "$tmp/stop" ] || break
		d=$(( left < chunk ? left : chunk ))
		d=$(( d - 60 ))	# boot and shutdown
		boots=$((boots + 1))
		# Boot B of lane L uses SEED + (B-1)*VMS + (L-1): every boot its own seed.
		s=$((seed + (boots - 1) * vms + ln - 1))
		log=$tmp/lane-$ln.log
		IWCM_VM_LOCK=$([ "$vms" -gt 1 ] && echo "${IWCM_VM_LOCK:-$lock_base}-$ln.lock" || echo "${IWCM_VM_LOCK:-}") \
		tools/vm/run.sh --name "soak-$ln-$boots" --timeout $((d + 600)) --allow-rdma-cm-lockdep -- \
			env IWCM_IMPL="$impl" tools/stress/siw-soak.sh -d "$d" -s "$s" -q "${IWCM_SOAK_IO_QUEUES:-2}" 2>&1 |
			tee "$log" | sed -u 's/\r$//' | grep --line-buffered -E "^soak|^VM: |^splat-check" | sed -u "s/^/$tag/"
		rc=${PIPESTATUS[0]}
		field() { tr -d '\r' < "$log" | sed -n "s/^soak $1: //p" | tail -n1; }
		c=$(field cycles); f=$(field "failed cycles"); sp=$(field splats); lk=$(field leaks)
		if [ -z "$c" ]; then
			bad_boots=$((bad_boots + 1))
			echo "${tag}boot $boots (seed $s): no soak summary (VM exit $rc)" >> "$tmp/lane-$ln.notes"
		else
			cycles=$((cycles + c)); failed=$((failed + f)); splats=$((splats + sp)); leaks=$((leaks + lk))
			if [ "$rc" -ne 0 ]; then
				bad_boots=$((bad_boots + 1))
				echo "${tag}boot $boots (seed $s): VM exit $rc ($(tr -d '\r' < "$log" | grep -E '^soak FAIL|splat\(s\)|^VM: (HANG|kernel splat)' | head -n 3 | tr '\n' ';'))" >> "$tmp/lane-$ln.notes"
			fi
		fi
		# A splat the guest did not see (the VM's own check) counts too;
		# one the guest counted is not counted twice.
		if [ "${sp:-0}" = 0 ] && grep -q "^VM: kernel splat" "$log"; then
			splats=$((splats + 1))
		fi
		echo "$boots $cycles $failed $splats $leaks $bad_boots" > "$tmp/lane-$ln"
	done
	echo "$boots $cycles $failed $splats $leaks $bad_boots" > "$tmp/lane-$ln"
}
pids=()
# Ctrl-C or TERM stops every lane (each runs in a process group of its
# own: its run.sh, whose timeout passes the signal on to QEMU) and prints
# the totals of what ran.
stop() {
	touch "$tmp/stop"
	for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
}
trap stop INT TERM
for ln in $(seq 1 "$vms"); do
	set -m
	lane "$ln" &
	pids+=($!)
	set +m
	# The boots of the lanes a little apart (their first minutes are the busiest).
	[ "$ln" -lt "$vms" ] && sleep 20
done
# (wait returns early when a signal's trap ran: wait again for the lanes.)
while ! wait "${pids[@]}"; do
	[ -e "$tmp/stop" ] || break
	kill -0 "${pids[@]}" 2>/dev/null || break
done
trap - INT TERM
boots=0 cycles=0 failed=0 splats=0 leaks=0 bad_boots=0
declare -a notes=()
for ln in $(seq 1 "$vms"); do
	read -r b c f sp lk bb < "$tmp/lane-$ln" || { b=0 c=0 f=0 sp=0 lk=0 bb=1; notes+=("vm$ln: no result"); }
	boots=$((boots + b)); cycles=$((cycles + c)); failed=$((failed + f))
	splats=$((splats + sp)); leaks=$((leaks + lk)); bad_boots=$((bad_boots + bb))
	while IFS= read -r n; do notes+=("$n"); done < "$tmp/lane-$ln.notes"
done
rm -rf "$tmp"
secs=$(( $(date +%s) - t0 ))
echo
echo "soak totals ($impl iw_cm, commit $commit, kernel $(bash -c '. tools/kernel/env.sh; basename "$KCACHE"')):"
echo "  VMs side by side: $vms"
echo "  boots:           $boots ($bad_boots failed)"
echo "  cycles done:     $cycles in ${secs} s"
echo "  cycles per hour: $(awk -v c="$cycles" -v s="$secs" 'BEGIN { printf "%.0f", (s > 0 ? c * 3600 / s : 0) }')"
echo "  failed cycles:   $failed"
echo "  splats:          $splats"
echo "  leaks:           $leaks"
for n in "${notes[@]}"; do echo "  FAIL $n"; done
[ "$boots" -gt 0 ] && [ "$cycles" -gt 0 ] && [ "$failed" -eq 0 ] && [ "$splats" -eq 0 ] &&
	[ "$leaks" -eq 0 ] && [ "$bad_boots" -eq 0 ]
