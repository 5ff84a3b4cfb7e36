#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# One A/B case inside the test VM (started by tools/ab/ab-unplug.sh through
# tools/vm/run.sh): the iw_cm of IWCM_IMPL (c|rust), siw on a dummy netdev,
# the Rust sample ULP (1 admin + 8 I/O queues, traffic running) in one
# device-removal variant, then `rdma link delete`.  It observes; it does not
# judge:
#
#   completed  the delete returned: its time, the sample's torn-down counts,
#              rmmod of the sample, the cm_id count (Rust iw_cm);
#   deadlocked the delete was still blocked after AB_DELETE_TIMEOUT seconds:
#              whether the hung-task detector reported, then the blocked
#              tasks (sysrq w) saved to blocked-tasks.txt, and the VM is
#              powered off at once (the blocked tasks never finish).
#
#   ab-guest.sh OWN_QUEUE ORDER CONTEXT     (first|last qp|cmid handler|work)
#
# Writes $IWCM_RESULTS/ab-result.txt (key=value lines) and blocked-tasks.txt.
set -u
own=${1:?own_queue}
order=${2:?order}
ctx=${3:?context}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
export IWCM_TOP=$top
# siw endpoint accounting (lib.sh) logs two lines per endpoint: off for
# stress and benchmark runs.
export IWCM_SIW_EP_CHECK=${IWCM_SIW_EP_CHECK:-0}
if [ -z "${KSELFTEST_DIR:-}" ] && [ -n "${KSRC:-}" ]; then
	export KSELFTEST_DIR=$KSRC/tools/testing/selftests
fi
# shellcheck source=../testing/selftests/iw_cm/lib.sh
. "$top/tools/testing/selftests/iw_cm/lib.sh"

ko=${SAMPLE_KO:-$top/samples/rdma/rust_rdma_ulp/rust_rdma_ulp.ko}
io_queues=${AB_IO_QUEUES:-8}
deadline=${AB_DELETE_TIMEOUT:-45}
res=${IWCM_RESULTS:-/tmp}
out=$res/ab-result.txt
dbg=/sys/kernel/debug/rust_rdma_ulp
IWCM_TMP=$(mktemp -d /tmp/ab.XXXXXX)
: > "$out"

record() { echo "$1=$2" >> "$out"; echo "ab: $1=$2"; }
field() { sed -n "s/^$2 //p" "$dbg/$1" 2>/dev/null | head -n1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
hung_reports() { dmesg | grep -c "blocked for more than"; }
# The hung-task detector looks every 5 s (by default every
# hung_task_timeout_secs, 30 here: vm/guest-init.sh), so that a removal
# blocked since the delete is reported within 35 s, inside the 45 s bound;
# with one look every 30 s the report came at 30-60 s (make demo on
# Debian's kernel: blocked 46.8 s, no report yet).
[ -w /proc/sys/kernel/hung_task_check_interval_secs ] &&
	echo 5 > /proc/sys/kernel/hung_task_check_interval_secs

record variant "own_queue=$own order=$order context=$ctx"
record iw_cm "$IWCM_IMPL"
if ! iwcm_setup; then
	record result setup-failed
	exit 1
fi
record cm_ids_base "$(iwcm_cm_ids)"
for d in $(modinfo -F depends "$ko" 2>/dev/null | tr , ' '); do
	modprobe "$d"
done
t0=$(now)
if ! insmod "$ko" role=both addr="$IWCM_ADDR" nr_io_queues="$io_queues" \
	own_queue="$own" order="$order" context="$ctx"; then
	record result sample-load-failed
	dmesg | tail -n 30
	exit 1
fi
record connect_s "$(since "$t0")"
record live "$(field host live)/$((io_queues + 1))"
sleep 2
record echoes_before_unplug "$(sed -n 's/.* recvs \([0-9]*\) .*/\1/p' "$dbg/host" | awk '{ s += $1 } END { print s + 0 }')"

t0=$(now)
rdma link delete "$IWCM_RDEV" > "$IWCM_TMP/delete.log" 2>&1 &
del=$!
waited=0
while ! iwcm_exited "$del"; do
	if awk -v t="$(since "$t0")" -v d="$deadline" 'BEGIN { exit !(t >= d) }'; then
		waited=1
		break
	fi
	sleep 0.2
done

if [ $waited -eq 1 ]; then
	record result deadlocked
	record blocked_after_s "$(since "$t0")"
	record hung_task_reports "$(hung_reports)"
	record torn_down_at_stall "host $(field host torn_down)/$((io_queues + 1)), target $(field target torn_down)/$(field target accepted)"
	mark=$(dmesg | wc -l)
	echo w > /proc/sysrq-trigger
	sleep 2
	dmesg | tail -n +"$((mark + 1))" > "$res/blocked-tasks.txt"
	# The tasks in the hung-task reports too.
	dmesg | grep -A40 "blocked for more than" >> "$res/blocked-tasks.txt"
	record blocked_tasks_file blocked-tasks.txt
	sync
	echo "ab: powering off (the blocked tasks never finish)"
	echo o > /proc/sysrq-trigger
	sleep 30
	exit 1
fi

wait "$del"
drc=$?
record result completed
record delete_s "$(since "$t0")"
record delete_status "$drc"
record torn_down "host $(field host torn_down)/$((io_queues + 1)), target $(field target torn_down)/$(field target accepted)"
record removal_ms "$(field host removal_ms)"
record hung_task_reports "$(hung_reports)"
rmmod rust_rdma_ulp &
rm=$!
for _ in $(seq 150); do
	iwcm_exited "$rm" && break
	sleep 0.2
done
if ! iwcm_exited "$rm"; then
	record rmmod blocked
else
	wait "$rm"
	record rmmod "status $?"
fi
record cm_ids_after "$(iwcm_cm_ids)"
ip link del "$IWCM_NETDEV" 2>/dev/null
exit 0
