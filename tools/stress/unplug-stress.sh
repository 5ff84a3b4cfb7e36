#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# siw hot-unplug stress.  Runs as root inside the test VM (through
# tools/vm/run.sh, see tools/stress/run-stress.sh) or on a real test machine.
#
# Per cycle: add a siw link on a dummy netdev, start the nvmet-rdma target
# (null_blk namespace), `nvme connect` with M I/O queues, fio with verify,
# rping/ucmatose/cmtime churn (and the Rust sample ULP when built and
# IWCM_STRESS_SAMPLE=1), wait a random delay, `rdma link delete` mid-I/O.
# siw has no disassociate_ucontext, so the user-space churn is SIGKILLed a
# random 0-300 ms after the delete starts (the delete waits for it).
# Then check, every cycle: the delete's time (bounded), errors seen by each
# client, fio verify mismatches, new kernel splats (hung task, lockdep,
# KASAN, WARNING...), the Rust iw_cm's live cm_id count back to baseline,
# no rdma_cm id left; every IWCM_STRESS_LEAK_EVERY cycles and at the end a
# kmemleak scan.  At the end the whole stack is unloaded with rmmod.
#
#   unplug-stress.sh [-c CYCLES] [-m IO_QUEUES] [-s SEED]
#
# Environment: IWCM_IMPL (c|rust, default rust), IWCM_STRESS_SAMPLE=1,
# IWCM_ALLOW_RDMA_CM_LOCKDEP=1 (accept rdma_cm's handler_mutex report).
# Prints a per-cycle line and a summary; exits non-zero on any failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cycles=20
ioq=2
seed=$$
while getopts "c:m:s:" o; do
	case $o in
	c) cycles=$OPTARG ;;
	m) ioq=$OPTARG ;;
	s) seed=$OPTARG ;;
	*) echo "usage: $0 [-c cycles] [-m io_queues] [-s seed]" >&2; exit 2 ;;
	esac
done
export IWCM_IMPL=${IWCM_IMPL:-rust}
# siw endpoint accounting (lib.sh) logs two lines per endpoint: off for
# stress and benchmark runs.
export IWCM_SIW_EP_CHECK=${IWCM_SIW_EP_CHECK:-0}
# lib.sh gives load_iw_cm, the siw bring-up and the process helpers.
# shellcheck source=/dev/null
. "$top/tools/kernel/env.sh" >/dev/null 2>&1
export KSELFTEST_DIR=${KSELFTEST_DIR:-$KSRC/tools/testing/selftests}
# shellcheck source=/dev/null
. "$top/tools/testing/selftests/iw_cm/lib.sh"
# shellcheck source=lib-stress.sh
. "$here/lib-stress.sh"
RANDOM=$seed

NQN=iwcm-stress-nqn
CFG=/sys/kernel/config/nvmet
SAMPLE_KO=$(ls "$top"/samples/rdma/*/*.ko 2>/dev/null | head -n1)
tmp=$(mktemp -d)
failed=0
slowest=0
slowest_cycle=0
leaks=0
splats=0
mismatches=0
declare -a fails=()

log() { echo "stress: $*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

nvmet_up() {
	mkdir -p "$CFG/subsystems/$NQN/namespaces/1" "$CFG/ports/1" || return 1
	echo 1 > "$CFG/subsystems/$NQN/attr_allow_any_host"
	echo /dev/nullb0 > "$CFG/subsystems/$NQN/namespaces/1/device_path"
	echo 1 > "$CFG/subsystems/$NQN/namespaces/1/enable" || return 1
	echo rdma > "$CFG/ports/1/addr_trtype"
	echo ipv4 > "$CFG/ports/1/addr_adrfam"
	echo "$IWCM_ADDR" > "$CFG/ports/1/addr_traddr"
	echo 4420 > "$CFG/ports/1/addr_trsvcid"
	[ -e "$CFG/ports/1/subsystems/$NQN" ] ||
		ln -s "$CFG/subsystems/$NQN" "$CFG/ports/1/subsystems/$NQN"
}
nvmet_down() {
	rm -f "$CFG/ports/1/subsystems/$NQN" 2>/dev/null
	rmdir "$CFG/ports/1" 2>/dev/null
	echo 0 > "$CFG/subsystems/$NQN/namespaces/1/enable" 2>/dev/null
	rmdir "$CFG/subsystems/$NQN/namespaces/1" "$CFG/subsystems/$NQN" 2>/dev/null
}
nvme_ctrl() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/subsysnqn" ] && grep -qx "$NQN" "$c/subsysnqn" && { basename "$c"; return 0; }
	done
	return 1
}

# ---------------------------------------------------------------- set-up
load_iw_cm || { log "cannot load iw_cm ($IWCM_IMPL)"; exit 1; }
for m in rdma_cm rdma_ucm dummy nvme-rdma nvmet nvmet-rdma; do
	modprobe "$m" || { log "modprobe $m failed"; exit 1; }
done
load_siw || { log "cannot load siw ($IWCM_SIW)"; exit 1; }
modprobe null_blk nr_devices=1 gb=1 memory_backed=1 || exit 1
[ -n "$SAMPLE_KO" ] && [ "${IWCM_STRESS_SAMPLE:-0}" = 1 ] && log "sample ULP: $SAMPLE_KO"
base_cmids=$(iwcm_cm_ids)
log "IWCM_IMPL=$IWCM_IMPL cycles=$cycles io_queues=$ioq seed=$seed cm_ids baseline '${base_cmids:-n/a}'"
t_start=$(now)

for cyc in $(seq 1 "$cycles"); do
	dm0=$(dmesg | wc -l)
	cfail=()
	if ! iwcm_setup >"$tmp/setup.log" 2>&1; then
		cfail+=("siw setup")
	fi
	nvmet_up || cfail+=("nvmet")
	ctrl= bdev=
	# A node of a vanished namespace must not stay behind as a regular
	# file (devtmpfs could not create the block device node again).
	for f in /dev/nvme*n*; do [ -f "$f" ] && { rm -f "$f"; cfail+=("regular file $f in /dev"); }; done
	# ctrl_loss_tmo: 0 (default) makes the host drop the controller on
	# the first error instead of reconnecting.  A host that reconnects
	# (IWCM_STRESS_CTRL_LOSS_TMO=3) can reach the target between
	# nvmet_rdma_remove_one() (which walks the queue list once) and
	# rdma_cm's removal of the listener: nvmet-rdma accepts a queue no one
	# removes, ib_unregister_device() WARNs in ib_cq_pool_cleanup() and
	# kmemleak reports the queue's CQ.  That race is nvmet-rdma's, on any
	# iw_cm (Documentation/known_issues.rst).
	if nvme connect -t rdma -a "$IWCM_ADDR" -s 4420 -n "$NQN" -i "$ioq" \
		--ctrl-loss-tmo="${IWCM_STRESS_CTRL_LOSS_TMO:-0}" >"$tmp/connect.log" 2>&1 &&
	   iwcm_wait_for 20 bash -c "ls /sys/class/nvme/*/subsysnqn >/dev/null 2>&1"; then
		ctrl=$(nvme_ctrl)
		t_ns=$(now)
		iwcm_wait_for 30 iwcm_nvme_bdev "$NQN" >/dev/null
		log "  namespace after $(since "$t_ns") s"
		if ! bdev=$(iwcm_nvme_bdev "$NQN"); then
			cfail+=("no namespace block device")
			log "  controllers: $(cat /sys/class/nvme/*/state 2>/dev/null | tr '\n' ' ')block: $(ls /sys/block | tr '\n' ' ')"
			for b in /sys/block/nvme*; do log "  $b: $(readlink -f "$b/device") $(cat "$b/device/subsysnqn" 2>&1)"; done
		fi
	else
		cfail+=("nvme connect")
		# What the queues looked like: nvme-cli's words, every rdma_cm
		# id and QP of the link (the target's queue that never answered
		# the Fabrics Connect shows its state), the kernel's last lines.
		sed 's/^/  connect: /' "$tmp/connect.log" | tail -n 5
		iwcm_rdma_query resource show cm_id | sed 's/^/  cm_id: /'
		iwcm_rdma_query resource show qp | sed 's/^/  qp: /'
		dmesg | tail -n +"$((dm0 + 1))" | tail -n 15 | sed 's/^/  dmesg: /'
	fi
	fio_pid=
	# The namespace must have a size before fio opens it (native
	# multipath may still be setting the head up right after connect).
	if [ -n "$bdev" ] && ! iwcm_wait_for 10 bash -c "[ -b /dev/$bdev ] && [ \"\$(cat /sys/block/$bdev/size)\" -gt 0 ]"; then
		cfail+=("namespace $bdev has no size")
		bdev=
	fi
	if [ -n "$bdev" ]; then
		fio --name=v --filename="/dev/$bdev" --ioengine=libaio --direct=1 \
			--rw=randwrite --bs=4k --iodepth=8 --size=32M --verify=crc32c \
			--verify_backlog=128 --time_based --runtime=30 \
			--allow_file_create=0 >"$tmp/fio.log" 2>&1 &
		fio_pid=$!
	fi
	# Connection churn from user space while the link goes away.
	churn=()
	rping -s -a "$IWCM_ADDR" -C 1000000 >"$tmp/rping-s.log" 2>&1 & churn+=($!)
	sleep 0.3
	rping -c -v -a "$IWCM_ADDR" -C 1000000 >"$tmp/rping-c.log" 2>&1 & churn+=($!)
	# ucmatose and cmtime default to the same port: cmtime gets 7472.
	ucmatose -c 10 -C 1000 >"$tmp/ucm-s.log" 2>&1 & churn+=($!)
	( while :; do cmtime -p 7472 -c 20 >/dev/null 2>&1 || sleep 0.1; done ) &
	churn+=($!)
	sleep 0.2
	( while :; do ucmatose -s "$IWCM_ADDR" -c 10 -C 10 >/dev/null 2>&1 || sleep 0.1; done ) &
	churn+=($!)
	( while :; do cmtime -s "$IWCM_ADDR" -p 7472 -c 20 >/dev/null 2>&1 || sleep 0.1; done ) &
	churn+=($!)
	sample_loaded=0
	if [ -n "$SAMPLE_KO" ] && [ "${IWCM_STRESS_SAMPLE:-0}" = 1 ]; then
		insmod "$SAMPLE_KO" role=target addr="$IWCM_ADDR" 2>/dev/null && sample_loaded=1
	fi
	# Mid-I/O: the random delay starts once fio's writes reach the device
	# (field 7 of the block stat, sectors written, of the multipath head
	# or its path device).
	if [ -n "$fio_pid" ] &&
	   ! iwcm_wait_for 15 bash -c "[ \"\$(cat /sys/block/nvme*n*/stat 2>/dev/null | awk '{ s += \$7 } END { print s + 0 }')\" -gt 0 ]"; then
		log "  fio wrote nothing to $bdev within 15 s"
	fi
	sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 1 + (r % 300) / 100 }')"

	t0=$(now)
	timeout 120 rdma link delete "$IWCM_RDEV" &
	del=$!
	sleep "0.$((RANDOM % 3))$((RANDOM % 10))"
	for p in "${churn[@]}"; do kill -9 "$p" 2>/dev/null; done
	pkill -9 -x rping; pkill -9 -x ucmatose; pkill -9 -x cmtime
	wait "$del"
	drc=$?
	dsecs=$(since "$t0")
	for p in "${churn[@]}"; do wait "$p" 2>/dev/null; done
	[ "$drc" -eq 0 ] || cfail+=("rdma link delete status $drc")
	if awk -v a="$dsecs" -v b="$slowest" 'BEGIN { exit !(a > b) }'; then
		slowest=$dsecs; slowest_cycle=$cyc
	fi

	# Clients: fio must end (errors after the unplug are expected), no
	# verify mismatch.
	ferr= fwrote=
	if [ -n "$fio_pid" ]; then
		iwcm_wait "$fio_pid" 90 || true
		iwcm_exited "$fio_pid" || { kill -9 "$fio_pid"; cfail+=("fio did not end"); }
		if grep -qiE "verify: bad|bad magic|verify failed" "$tmp/fio.log"; then
			mismatches=$((mismatches + 1)); cfail+=("fio verify mismatch")
		fi
		ferr=$(grep -oE "err= *[0-9]+" "$tmp/fio.log" | head -n1)
		fwrote=$(sed -n 's/.*issued rwts: total=[0-9]*,\([0-9]*\),.*/\1/p' "$tmp/fio.log" | head -n1)
		if [ "${fwrote:-0}" -eq 0 ]; then
			cfail+=("fio issued no writes")
			tail -n 15 "$tmp/fio.log" | sed 's/^/stress:   fio: /'
		fi
	fi
	nvme disconnect -n "$NQN" >/dev/null 2>&1
	iwcm_wait_for 20 bash -c "! ls /sys/class/nvme/*/subsysnqn >/dev/null 2>&1" || cfail+=("nvme controller left")
	nvmet_down
	[ "$sample_loaded" = 1 ] && { rmmod "$(basename "$SAMPLE_KO" .ko)" || cfail+=("sample rmmod"); }
	ip link del "$IWCM_NETDEV" 2>/dev/null

	# Gates.
	if ! stress_cmids_back "$base_cmids"; then
		leaks=$((leaks + 1)); cfail+=("cm_ids $(iwcm_cm_ids) != baseline $base_cmids")
	fi
	if stress_rdma_ids_left; then
		leaks=$((leaks + 1)); cfail+=("rdma_cm ids left")
	fi
	s=$(stress_new_splats "$dm0")
	if [ -n "$s" ]; then
		splats=$((splats + 1)); cfail+=("kernel splat")
		printf '%s\n' "$s" | head -20 | sed 's/^/stress:   dmesg: /'
	fi
	if [ "${IWCM_STRESS_LEAK_EVERY:-10}" -gt 0 ] && [ $((cyc % ${IWCM_STRESS_LEAK_EVERY:-10})) -eq 0 ] &&
	   ! stress_kmemleak; then
		leaks=$((leaks + 1)); cfail+=("kmemleak")
	fi
	rp=$(grep -c "ping data" "$tmp/rping-c.log" 2>/dev/null)
	if [ ${#cfail[@]} -eq 0 ]; then
		log "cycle $cyc ok: delete ${dsecs}s fio ${fwrote:-0} writes ${ferr:-no err= line} rping-client ${rp:-0} pings"
	else
		failed=$((failed + 1))
		fails+=("cycle $cyc: ${cfail[*]}")
		log "cycle $cyc FAILED: ${cfail[*]} (delete ${dsecs}s)"
		tail -5 "$tmp/setup.log" "$tmp/connect.log" 2>/dev/null | sed 's/^/stress:   /'
	fi
done

# ---------------------------------------------------------------- the end
end_fail=()
for f in /dev/nvme*n*; do [ -f "$f" ] && { rm -f "$f"; end_fail+=("regular file $f in /dev"); }; done
modprobe -r nvme-rdma nvmet-rdma nvmet null_blk 2>/dev/null
if ! rmmod rdma_ucm rdma_cm iw_cm 2>"$tmp/rmmod.log"; then
	end_fail+=("rmmod rdma_ucm rdma_cm iw_cm: $(cat "$tmp/rmmod.log")")
fi
modprobe -r siw 2>/dev/null
if ! stress_kmemleak; then
	leaks=$((leaks + 1)); end_fail+=("kmemleak at the end")
fi
s=$(stress_new_splats 0)
[ -z "$s" ] || { end_fail+=("kernel splat(s) during the run"); }

echo
echo "stress summary: impl=$IWCM_IMPL seed=$seed"
echo "  cycles run:     $cycles ($(since "$t_start") s)"
echo "  cycles failed:  $failed"
echo "  slowest delete: ${slowest} s (cycle $slowest_cycle)"
echo "  leaks:          $leaks"
echo "  splats:         $splats"
echo "  verify mismatches: $mismatches"
for f in "${fails[@]}" "${end_fail[@]}"; do echo "  FAIL $f"; done
rm -rf "$tmp"
[ "$failed" -eq 0 ] && [ ${#end_fail[@]} -eq 0 ]
