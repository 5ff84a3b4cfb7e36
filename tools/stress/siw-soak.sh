#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# siw unplug soak: micro-cycles without nvme, repeated until a deadline.
# Runs as root inside the test VM (through tools/stress/soak.sh) or on a
# test machine.
#
# One micro-cycle:
#   1. siw link add on the dummy netdev (set up once, as lib.sh's
#      iwcm_setup does);
#   2. connected and moving traffic: an rping pair (pinging), a ucmatose
#      pair (connected; both sides rerun in a loop) and the Rust sample ULP (role=both, an
#      nvme-rdma-shaped host with NQ I/O queues + 1 admin queue connected to
#      its own target), its device-removal variant drawn at random per cycle
#      (own queue first/last, QP/cm_id order, in the handler or in work);
#   3. `rdma link delete` under that traffic; siw has no
#      disassociate_ucontext, so the user-space processes are SIGKILLed
#      0-300 ms after the delete starts (the delete waits for them);
#   4. everything released: the delete returns (bounded), the sample
#      rmmods.
# Gates per cycle: the delete's status, the sample connected and moving,
# rping pinged, the live cm_id count back to its baseline, no rdma_cm id
# left, no new kernel splat (KASAN, lockdep, WARNING, hung task, ...);
# kmemleak every IWCM_SOAK_LEAK_EVERY cycles (default 10) and at the end,
# after the whole stack is unloaded.
#
#   siw-soak.sh -d SECONDS [-s SEED] [-q SAMPLE_IO_QUEUES]
#
# rdma_cm gives every id's handler_mutex one lockdep class, so the sample's
# in-handler teardown of its other queues draws rdma_cm's own lockdep false
# positive (Documentation/iw_cm.rst) once per boot: this script accepts exactly
# that report (IWCM_ALLOW_RDMA_CM_LOCKDEP=1); the VM's splat check
# (run.sh --allow-rdma-cm-lockdep) matches it narrowly.
#
# The last lines are a summary ("soak summary: ..."), machine-readable for
# tools/stress/soak.sh; exit status non-zero on any failed cycle or gate.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
duration=
seed=$$
nq=2
while getopts "d:s:q:" o; do
	case $o in
	d) duration=$OPTARG ;;
	s) seed=$OPTARG ;;
	q) nq=$OPTARG ;;
	*) echo "usage: $0 -d seconds [-s seed] [-q sample_io_queues]" >&2; exit 2 ;;
	esac
done
[ -n "$duration" ] || { echo "usage: $0 -d seconds [-s seed] [-q sample_io_queues]" >&2; exit 2; }
export IWCM_IMPL=${IWCM_IMPL:-rust}
export IWCM_ALLOW_RDMA_CM_LOCKDEP=1
# (siw endpoint accounting fills the kernel log over a long run: off)
export IWCM_SIW_EP_CHECK=${IWCM_SIW_EP_CHECK:-0}
# shellcheck source=/dev/null
. "$top/tools/kernel/env.sh" >/dev/null 2>&1
export KSELFTEST_DIR=${KSELFTEST_DIR:-$KSRC/tools/testing/selftests}
# shellcheck source=/dev/null
. "$top/tools/testing/selftests/iw_cm/lib.sh"
# shellcheck source=lib-stress.sh
. "$here/lib-stress.sh"
RANDOM=$seed

SAMPLE_KO=${SAMPLE_KO:-$top/samples/rdma/rust_rdma_ulp/rust_rdma_ulp.ko}
SAMPLE_DBG=/sys/kernel/debug/rust_rdma_ulp
leak_every=${IWCM_SOAK_LEAK_EVERY:-10}
# How long a cycle waits for the port, the first ping and ucmatose's
# connections before calling them lost: a liveness bound, not a speed
# check (a TCG guest sharing its host's cores with another one has taken
# over 20 s for an rping pair's first ping).
live_s=${IWCM_SOAK_LIVE:-90}
tmp=$(mktemp -d)
cycles=0
failed=0
leaks=0
splats=0
slowest=0
declare -a fails=()

log() { echo "soak: $*"; }
# Under TCG every exec costs a few hundred ms: the cycle uses bash builtins
# where it can (a read with a timeout on a pipe nobody writes to as sleep,
# sysfs/debugfs read with `read`).
exec {nap_fd}<> <(:)
nap() { read -r -t "$1" -u "$nap_fd" _; true; }
now() { printf '%(%s)T' -1; }
# wait_until SECONDS CMD...: poll CMD every 0.1 s.
wait_until() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		nap 0.1
	done
}
port_active() { local st; read -r st < "/sys/class/infiniband/$IWCM_RDEV/ports/1/state" 2>/dev/null && [ "$st" = "4: ACTIVE" ]; }
link_gone() { [ ! -e "/sys/class/infiniband/$IWCM_RDEV" ]; }
has() { local l; while IFS= read -r l; do [[ $l == *"$2"* ]] && return 0; done < "$1"; return 1; }
# sample_field FILE KEY: "KEY value" line of the sample's debugfs file.
sample_field() {
	local k v
	while read -r k v; do [ "$k" = "$2" ] && { echo "$v"; return; }; done < "$SAMPLE_DBG/$1" 2>/dev/null
}
# sample_echoes: the host queues' receive counts, summed.
sample_echoes() {
	local line n=0
	while IFS= read -r line; do
		[[ $line =~ ^q[0-9]+\ .*\ recvs\ ([0-9]+) ]] && n=$((n + BASH_REMATCH[1]))
	done < "$SAMPLE_DBG/host" 2>/dev/null
	echo "$n"
}
cmids() { local c=; [ -r "$IWCM_CMIDS" ] && read -r c < "$IWCM_CMIDS"; echo "$c"; }
cmids_back() { [ -z "$base_cmids" ] || [ "$(cmids)" = "$base_cmids" ]; }
pick() { local a=("$@"); echo "${a[RANDOM % ${#a[@]}]}"; }

# ---------------------------------------------------------------- set-up
[ -f "$SAMPLE_KO" ] || { log "no sample ULP at $SAMPLE_KO (make modules)"; exit 1; }
iwcm_setup >"$tmp/setup.log" 2>&1 || { cat "$tmp/setup.log"; log "siw/iw_cm set-up failed"; exit 1; }
rdma link delete "$IWCM_RDEV" || { log "rdma link delete after set-up failed"; exit 1; }
for d in $(modinfo -F depends "$SAMPLE_KO" 2>/dev/null | tr , ' '); do modprobe "$d"; done
base_cmids=$(cmids)
# Read at the start: the boot lines may leave the ring buffer in a long run.
kasan=$(dmesg | grep -q "KernelAddressSanitizer initialized" && echo yes || echo no)
# The kernel log of the whole run, for the per-cycle splat gate.
cat /dev/kmsg > "$tmp/kmsg.raw" &
kmsg_pid=$!
t_start=$(now)
deadline=$((t_start + duration))
log "IWCM_IMPL=$IWCM_IMPL duration=${duration}s seed=$seed sample_io_queues=$nq cm_ids baseline '${base_cmids:-n/a}' kernel $(uname -r) kasan $kasan"

raw_lines() { wc -l < "$tmp/kmsg.raw"; }

# A cycle takes well under a minute; none starts in the last one.
while [ $(( $(now) + 60 )) -le "$deadline" ]; do
	cycles=$((cycles + 1))
	cyc=$cycles
	t_cyc=$SECONDS
	k0=$(raw_lines)
	cfail=()
	own=$(pick first last); order=$(pick qp cmid); ctx=$(pick handler work)
	rdma link add "$IWCM_RDEV" type siw netdev "$IWCM_NETDEV" 2>"$tmp/link.log" || cfail+=("rdma link add: $(<"$tmp/link.log")")
	wait_until "$live_s" port_active || cfail+=("$IWCM_RDEV port not ACTIVE after $live_s s")

	# Connected, moving traffic: rping pair, ucmatose pair, sample ULP.
	churn=()
	rping -s -a "$IWCM_ADDR" -C 1000000 >"$tmp/rping-s.log" 2>&1 & churn+=($!)
	# ucmatose runs (2 connections, 10 messages each way), repeated.
	: >"$tmp/ucm-c.log"; : >"$tmp/ucm-s.log"
	( while :; do stdbuf -oL ucmatose -b "$IWCM_ADDR" -c 2 >>"$tmp/ucm-s.log" 2>&1 || nap 0.1; done ) & churn+=($!)
	sample=0
	if insmod "$SAMPLE_KO" role=both addr="$IWCM_ADDR" nr_io_queues="$nq" queue_depth=8 \
		own_queue="$own" order="$order" context="$ctx" 2>"$tmp/insmod.log" &&
	   [ "$(sample_field host live)" = $((nq + 1)) ]; then
		sample=1
	else
		cfail+=("sample ULP not connected ($(<"$tmp/insmod.log"))")
		[ -d /sys/module/rust_rdma_ulp ] && sample=1
	fi
	# Line-buffered: the gates read their progress while they run.
	stdbuf -oL rping -c -v -a "$IWCM_ADDR" -C 1000000 >"$tmp/rping-c.log" 2>&1 & churn+=($!)
	( while :; do stdbuf -oL ucmatose -s "$IWCM_ADDR" -c 2 >>"$tmp/ucm-c.log" 2>&1 || nap 0.1; done ) & churn+=($!)
	e0=$(sample_echoes)
	wait_until "$live_s" has "$tmp/rping-c.log" "ping data" || cfail+=("rping client never pinged (waited $live_s s)")
	# ucmatose prints this once its connections are ESTABLISHED.
	wait_until "$live_s" has "$tmp/ucm-c.log" "receiving data transfers" || cfail+=("ucmatose client never connected (waited $live_s s)")
	e1=$(sample_echoes)
	[ "$sample" = 0 ] || [ "$e1" -gt "$e0" ] || cfail+=("sample ULP traffic not moving ($e0 -> $e1 echoes)")

	# The unplug, under traffic.
	t0=$SECONDS
	rdma link delete "$IWCM_RDEV" 2>"$tmp/delete.log" &
	del=$!
	nap "0.$((RANDOM % 3))$((RANDOM % 10))"
	kill -9 "${churn[@]}" 2>/dev/null
	pkill -9 -x ucmatose
	if ! wait_until 120 link_gone; then
		cfail+=("rdma link delete still running after 120 s")
		echo w > /proc/sysrq-trigger
	fi
	wait "$del" 2>/dev/null
	drc=$?
	dsecs=$((SECONDS - t0))
	# (braces: bash's "Killed" job notices go to the redirected stderr)
	{ wait "${churn[@]}"; } 2>/dev/null
	[ "$drc" -eq 0 ] || cfail+=("rdma link delete status $drc: $(<"$tmp/delete.log")")
	[ "$dsecs" -gt "$slowest" ] && slowest=$dsecs
	if [ "$sample" = 1 ]; then
		live=$(sample_field host live)
		[ "${live:-0}" = 0 ] || cfail+=("sample host still has $live live queues")
		rmmod rust_rdma_ulp 2>"$tmp/rmmod.log" || cfail+=("rmmod rust_rdma_ulp: $(<"$tmp/rmmod.log")")
	fi

	# Gates.
	if ! wait_until 10 cmids_back; then
		leaks=$((leaks + 1)); cfail+=("cm_ids $(cmids) != baseline $base_cmids")
	fi
	if stress_rdma_ids_left; then
		leaks=$((leaks + 1)); cfail+=("rdma_cm ids left")
		rdma resource show cm_id | head -n 10 | sed 's/^/soak:   /'
	fi
	s=$(stress_new_splats "$k0" "$tmp/kmsg.raw")
	if [ -n "$s" ]; then
		splats=$((splats + 1)); cfail+=("kernel splat")
		printf '%s\n' "$s" | head -20 | sed 's/^/soak:   dmesg: /'
	fi
	if [ "$leak_every" -gt 0 ] && [ $((cyc % leak_every)) -eq 0 ] && ! stress_kmemleak; then
		leaks=$((leaks + 1)); cfail+=("kmemleak")
	fi
	if [ ${#cfail[@]} -eq 0 ]; then
		log "cycle $cyc ok ($((SECONDS - t_cyc)) s): sample own_queue=$own order=$order context=$ctx, echoes $e0->$e1, delete ${dsecs} s"
	else
		failed=$((failed + 1))
		fails+=("cycle $cyc: ${cfail[*]}")
		log "cycle $cyc FAILED ($((SECONDS - t_cyc)) s): ${cfail[*]} (own_queue=$own order=$order context=$ctx, delete ${dsecs} s)"
		for f in rping-s rping-c ucm-s ucm-c; do
			tail -n 4 "$tmp/$f.log" 2>/dev/null | sed "s/^/soak:   $f: /"
		done
	fi
done

# ---------------------------------------------------------------- the end
end_fail=()
kill "$kmsg_pid" 2>/dev/null
ip link del "$IWCM_NETDEV" 2>/dev/null
if ! rmmod rdma_ucm rdma_cm iw_cm 2>"$tmp/rmmod.log"; then
	end_fail+=("rmmod rdma_ucm rdma_cm iw_cm: $(cat "$tmp/rmmod.log")")
fi
modprobe -r siw 2>/dev/null
rmmod siw 2>/dev/null
if ! stress_kmemleak; then
	leaks=$((leaks + 1)); end_fail+=("kmemleak at the end")
fi
s=$(stress_new_splats 0 "$tmp/kmsg.raw")
if [ -n "$s" ]; then
	end_fail+=("kernel splat(s) during the run")
	printf '%s\n' "$s" | head -20 | sed 's/^/soak:   dmesg: /'
fi
lockdep=$(sed -n "s/^ *debug_locks: *//p" /proc/lockdep_stats 2>/dev/null)
secs=$(( $(now) - t_start ))

echo
echo "soak summary: impl=$IWCM_IMPL seed=$seed kernel=$(uname -r) kasan=$kasan"
echo "soak cycles: $cycles"
echo "soak seconds: $secs"
echo "soak cycles per hour: $(awk -v c="$cycles" -v s="$secs" 'BEGIN { printf "%.0f", (s > 0 ? c * 3600 / s : 0) }')"
echo "soak failed cycles: $failed"
echo "soak splats: $splats"
echo "soak leaks: $leaks"
echo "soak slowest delete: $slowest s"
echo "soak lockdep still on at the end (debug_locks): $lockdep"
for f in "${fails[@]}" "${end_fail[@]}"; do echo "soak FAIL $f"; done
rm -rf "$tmp"
[ "$failed" -eq 0 ] && [ ${#end_fail[@]} -eq 0 ] && [ "$cycles" -gt 0 ]
