#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# siw unplug soak: micro-cycles without nvme, repeated until a deadline.
# Runs as root inside the test VM (through tools/stress/soak.sh) or on a
# test machine.
#
# One micro-cycle:
#   1. siw link add on a dummy netdev (lib.sh's iwcm_setup);
#   2. connected and moving traffic: an rping pair, a ucmatose pair (the
#      client reconnecting in a loop) and the Rust sample ULP (role=both, an
#      nvme-rdma-shaped host with NQ I/O queues + 1 admin queue connected to
#      its own target), its device-removal variant drawn at random per cycle
#      (own queue first/last, QP/cm_id order, in the handler or in work);
#   3. `rdma link delete` under that traffic; siw has no
#      disassociate_ucontext, so the user-space processes are SIGKILLed
#      0-300 ms after the delete starts (the delete waits for them);
#   4. everything released: the delete returns (bounded), the sample
#      rmmods, the dummy netdev goes.
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
# positive (../shared/FACTS.md) once per boot: this script accepts exactly
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
tmp=$(mktemp -d)
cycles=0
failed=0
leaks=0
splats=0
slowest=0
declare -a fails=()

log() { echo "soak: $*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
sample_field() { sed -n "s/^$2 //p" "$SAMPLE_DBG/$1" 2>/dev/null | head -n1; }
sample_recvs() { sed -n 's/^q[0-9]* .* recvs \([0-9]*\) .*/\1/p' "$SAMPLE_DBG/host" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
pick() { local a=("$@"); echo "${a[RANDOM % ${#a[@]}]}"; }

# ---------------------------------------------------------------- set-up
[ -f "$SAMPLE_KO" ] || { log "no sample ULP at $SAMPLE_KO (make modules)"; exit 1; }
load_iw_cm || { log "cannot load iw_cm ($IWCM_IMPL)"; exit 1; }
for m in rdma_cm rdma_ucm dummy; do
	modprobe "$m" || { log "modprobe $m failed"; exit 1; }
done
load_siw || { log "cannot load siw ($IWCM_SIW)"; exit 1; }
for d in $(modinfo -F depends "$SAMPLE_KO" 2>/dev/null | tr , ' '); do modprobe "$d"; done
base_cmids=$(iwcm_cm_ids)
# Read at the start: the boot lines may leave the ring buffer in a long run.
kasan=$(dmesg | grep -q "KernelAddressSanitizer initialized" && echo yes || echo no)
t_start=$(now)
deadline=$(awk -v a="$t_start" -v d="$duration" 'BEGIN { printf "%d", a + d }')
log "IWCM_IMPL=$IWCM_IMPL duration=${duration}s seed=$seed sample_io_queues=$nq cm_ids baseline '${base_cmids:-n/a}' kernel $(uname -r)"

# A cycle takes well under a minute; none starts in the last one.
while [ $(( $(date +%s) + 60 )) -le "$deadline" ]; do
	cycles=$((cycles + 1))
	cyc=$cycles
	t_cyc=$(now)
	dm0=$(dmesg | wc -l)
	cfail=()
	own=$(pick first last); order=$(pick qp cmid); ctx=$(pick handler work)
	iwcm_setup >"$tmp/setup.log" 2>&1 || cfail+=("siw setup")

	# Connected, moving traffic: rping pair, ucmatose pair, sample ULP.
	churn=()
	rping -s -a "$IWCM_ADDR" -C 1000000 >"$tmp/rping-s.log" 2>&1 & churn+=($!)
	ucmatose -c 4 -C 100000 >"$tmp/ucm-s.log" 2>&1 & churn+=($!)
	sample=0
	if insmod "$SAMPLE_KO" role=both addr="$IWCM_ADDR" nr_io_queues="$nq" queue_depth=8 \
		own_queue="$own" order="$order" context="$ctx" 2>"$tmp/insmod.log" &&
	   [ "$(sample_field host live)" = $((nq + 1)) ]; then
		sample=1
	else
		cfail+=("sample ULP not connected ($(head -c 200 "$tmp/insmod.log"))")
		[ -d /sys/module/rust_rdma_ulp ] && sample=1
	fi
	rping -c -v -a "$IWCM_ADDR" -C 1000000 >"$tmp/rping-c.log" 2>&1 & churn+=($!)
	( while :; do ucmatose -s "$IWCM_ADDR" -c 4 -C 20 >/dev/null 2>&1 || sleep 0.1; done ) &
	churn+=($!)
	r0=$(sample_recvs)
	iwcm_wait_for 10 bash -c "grep -q 'ping data' $tmp/rping-c.log" || cfail+=("rping client never pinged")
	r1=$(sample_recvs)
	[ "$sample" = 0 ] || [ "$r1" -gt "$r0" ] || cfail+=("sample ULP traffic not moving ($r0 -> $r1 echoes)")

	# The unplug, under traffic.
	t0=$(now)
	timeout 120 rdma link delete "$IWCM_RDEV" &
	del=$!
	sleep "0.$((RANDOM % 3))$((RANDOM % 10))"
	for p in "${churn[@]}"; do kill -9 "$p" 2>/dev/null; done
	pkill -9 -x rping; pkill -9 -x ucmatose
	wait "$del"
	drc=$?
	dsecs=$(since "$t0")
	for p in "${churn[@]}"; do wait "$p" 2>/dev/null; done
	[ "$drc" -eq 0 ] || cfail+=("rdma link delete status $drc")
	awk -v a="$dsecs" -v b="$slowest" 'BEGIN { exit !(a > b) }' && slowest=$dsecs
	if [ "$sample" = 1 ]; then
		[ "$(sample_field host live)" = 0 ] || cfail+=("sample host still has $(sample_field host live) live queues")
		rmmod rust_rdma_ulp 2>"$tmp/rmmod.log" || cfail+=("rmmod rust_rdma_ulp: $(cat "$tmp/rmmod.log")")
	fi
	ip link del "$IWCM_NETDEV" 2>/dev/null

	# Gates.
	if ! stress_cmids_back "$base_cmids"; then
		leaks=$((leaks + 1)); cfail+=("cm_ids $(iwcm_cm_ids) != baseline $base_cmids")
	fi
	if stress_rdma_ids_left; then
		leaks=$((leaks + 1)); cfail+=("rdma_cm ids left")
		rdma resource show cm_id | head -n 10 | sed 's/^/soak:   /'
	fi
	s=$(stress_new_splats "$dm0")
	if [ -n "$s" ]; then
		splats=$((splats + 1)); cfail+=("kernel splat")
		printf '%s\n' "$s" | head -20 | sed 's/^/soak:   dmesg: /'
	fi
	if [ "$leak_every" -gt 0 ] && [ $((cyc % leak_every)) -eq 0 ] && ! stress_kmemleak; then
		leaks=$((leaks + 1)); cfail+=("kmemleak")
	fi
	pings=$(grep -c "ping data" "$tmp/rping-c.log" 2>/dev/null)
	if [ ${#cfail[@]} -eq 0 ]; then
		log "cycle $cyc ok ($(since "$t_cyc") s): sample own_queue=$own order=$order context=$ctx, echoes $r0->$r1, rping ${pings:-0} pings, delete ${dsecs} s"
	else
		failed=$((failed + 1))
		fails+=("cycle $cyc: ${cfail[*]}")
		log "cycle $cyc FAILED ($(since "$t_cyc") s): ${cfail[*]} (own_queue=$own order=$order context=$ctx, delete ${dsecs} s)"
		tail -n 5 "$tmp/setup.log" 2>/dev/null | sed 's/^/soak:   setup: /'
	fi
done

# ---------------------------------------------------------------- the end
end_fail=()
if ! rmmod rdma_ucm rdma_cm iw_cm 2>"$tmp/rmmod.log"; then
	end_fail+=("rmmod rdma_ucm rdma_cm iw_cm: $(cat "$tmp/rmmod.log")")
fi
modprobe -r siw 2>/dev/null
rmmod siw 2>/dev/null
if ! stress_kmemleak; then
	leaks=$((leaks + 1)); end_fail+=("kmemleak at the end")
fi
s=$(stress_new_splats 0)
if [ -n "$s" ]; then
	end_fail+=("kernel splat(s) during the run")
	printf '%s\n' "$s" | head -20 | sed 's/^/soak:   dmesg: /'
fi
lockdep=$(cat /proc/sys/kernel/debug_locks 2>/dev/null || echo '?')
secs=$(since "$t_start")

echo
echo "soak summary: impl=$IWCM_IMPL seed=$seed kernel=$(uname -r) kasan=$kasan"
echo "soak cycles: $cycles"
echo "soak seconds: $secs"
echo "soak cycles per hour: $(awk -v c="$cycles" -v s="$secs" 'BEGIN { printf "%.0f", s > 0 ? c * 3600 / s : 0 }')"
echo "soak failed cycles: $failed"
echo "soak splats: $splats"
echo "soak leaks: $leaks"
echo "soak slowest delete: $slowest s"
echo "soak lockdep still on at the end (debug_locks): $lockdep"
for f in "${fails[@]}" "${end_fail[@]}"; do echo "soak FAIL $f"; done
rm -rf "$tmp"
[ "$failed" -eq 0 ] && [ ${#end_fail[@]} -eq 0 ] && [ "$cycles" -gt 0 ]
