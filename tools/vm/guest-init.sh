#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# PID 1 of the test VM (tools/vm/run.sh).  The host root is mounted read-only
# over 9p; this makes the test kernel's modules visible at /usr/lib/modules,
# mounts the writable results share, runs $RESULTS/cmd.sh and powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp TERM=dumb LANG=C.UTF-8

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
# The host's /tmp stays reachable (a repository cloned there) before the
# guest gets a /tmp of its own.
mount -t tmpfs tmpfs /mnt
mkdir -p /mnt/host-tmp
mount --bind /tmp /mnt/host-tmp
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /var/tmp
mount -t tmpfs tmpfs /var/log
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t debugfs debugfs /sys/kernel/debug
mount -t configfs configfs /sys/kernel/config
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
# devtmpfs has no /dev/std* links (udev makes them): without them a write
# to /dev/stdout (kselftest's runner logs there) creates a regular file.
for i in 0:stdin 1:stdout 2:stderr; do
	[ -e "/dev/${i#*:}" ] || ln -s "/proc/self/fd/${i%%:*}" "/dev/${i#*:}"
done

mkdir -p /mnt/kmods /mnt/results /mnt/etc-upper /mnt/etc-work
mount -t 9p -o trans=virtio,version=9p2000.L,ro kmods /mnt/kmods
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 results /mnt/results
# The test kernel's modules appear at /usr/lib/modules/<release> (an overlay
# over the host's /usr/lib, which has none).
# With a test rdma_cm.ko in the results share (run.sh: the kernel's
# rdma_cm plus tools/testing/rdma_cm/*.patch), a C iw_cm.ko (run.sh
# IWCM_C_IWCM=iwpm-fixed: tools/testing/iw_cm_c/), a test ib_isert.ko or
# smbdirect.ko (the ULP kernel: tools/testing/isert/, smbdirect/), the
# overlay gets a tmpfs
# upper layer and each such module takes the in-tree one's place, so that
# every modprobe (rdma_ucm's, nvme-rdma's, the tests') loads it.
if [ -f /mnt/results/rdma_cm.ko ] || [ -f /mnt/results/iw_cm.ko ] || [ -f /mnt/results/ib_isert.ko ] ||
	[ -f /mnt/results/smbdirect.ko ] || [ -f /mnt/results/cifs.ko ]; then
	mkdir -p /mnt/lib-upper /mnt/lib-work
	mount -t overlay overlay -o lowerdir=/mnt/kmods/lib:/usr/lib,upperdir=/mnt/lib-upper,workdir=/mnt/lib-work /usr/lib
	for m in rdma_cm iw_cm ib_isert smbdirect cifs; do
		[ -f /mnt/results/$m.ko ] || continue
		dir=drivers/infiniband/core
		case $m in
		rdma_cm) what="the test rdma_cm (tools/testing/rdma_cm/)" ;;
		iw_cm) what="the C iw_cm with the port mapper client fixed (tools/testing/iw_cm_c/)" ;;
		ib_isert) what="the test isert (tools/testing/isert/)"; dir=drivers/infiniband/ulp/isert ;;
		smbdirect) what="the test smbdirect (tools/testing/smbdirect/)"; dir=fs/smb/smbdirect ;;
		cifs) what="the test cifs (tools/testing/cifs/)"; dir=fs/smb/client ;;
		esac
		cm=/usr/lib/modules/$(uname -r)/kernel/$dir/$m.ko
		# (run.sh fails the run unless this says "replaced".)
		if [ -f "$cm" ] && cp /mnt/results/$m.ko "$cm"; then
			echo replaced > /mnt/results/$m-status
			echo "VM: $m: $what in place of the kernel's"
		else
			echo "no uncompressed $cm to replace" > /mnt/results/$m-status
			echo "VM: $m: cannot replace the kernel's $cm (not a module, or compressed)"
		fi
	done
else
	mount -t overlay overlay -o lowerdir=/mnt/kmods/lib:/usr/lib /usr/lib
fi
# A writable /etc for tools that write there (nvme-cli's hostnqn, ...).
mount -t overlay overlay -o lowerdir=/etc,upperdir=/mnt/etc-upper,workdir=/mnt/etc-work /etc
hostname iwcm-vm
ip link set lo up
echo 1 > /proc/sys/kernel/sysrq
# The hung-task detector at the test kernel's 30 s
# (CONFIG_DEFAULT_HUNG_TASK_TIMEOUT, tools/kernel/config.fragment) on any
# kernel: Debian's defaults to 120 s, longer than make demo's and the A/B
# runs' bound on a blocked removal (AB_DELETE_TIMEOUT, 45 s).
[ -w /proc/sys/kernel/hung_task_timeout_secs ] && echo 30 > /proc/sys/kernel/hung_task_timeout_secs
# Memory registration (ib_umem_get) pins user memory against
# RLIMIT_MEMLOCK; a test machine runs RDMA tools without that limit.  (The
# ucmatose/cmtime creation failures once blamed on it were siw's mmap key
# bug: tools/testing/siw/.)
ulimit -l unlimited
export IWCM_RESULTS=/mnt/results

# The command's working directory and repository, when they live in the
# host's /tmp: the same paths in the guest, bound from the host.
for p in "$(cat /mnt/results/cwd 2>/dev/null)" \
	 "$(sed -n 's/^export IWCM_TOP=//p' /mnt/results/cmd.sh 2>/dev/null)"; do
	case "$p" in
	/tmp/?*)
		d=${p#/tmp/}; d=/tmp/${d%%/*}
		if [ -d "/mnt/host-tmp/${d#/tmp/}" ] && ! mountpoint -q "$d"; then
			mkdir -p "$d" && mount --bind "/mnt/host-tmp/${d#/tmp/}" "$d"
		fi ;;
	esac
done

timeout=$(cat /mnt/results/guest-timeout 2>/dev/null || echo 600)
(
	sleep "$timeout"
	echo "VM: guest timeout after ${timeout}s: blocked tasks follow"
	echo w > /proc/sysrq-trigger
	sleep 2
	echo "VM: HANG" > /mnt/results/hang
	sync
	echo o > /proc/sysrq-trigger
) &
watchdog=$!

echo "VM: init reached at $(cut -d' ' -f1 /proc/uptime) s"
cd "$(cat /mnt/results/cwd)" 2>/dev/null || cd /
bash /mnt/results/cmd.sh
rc=$?
kill "$watchdog" 2>/dev/null
echo "VM: command exited with status $rc at $(cut -d' ' -f1 /proc/uptime) s"

if [ -e /sys/kernel/debug/kmemleak ] && [ ! -e /mnt/results/no-kmemleak ]; then
	# kmemleak reports no object younger than its minimum age (5 s): wait
	# that out, or a leak made by the last test's own teardown goes
	# unseen.  Two scans: an object must look unreferenced twice to be
	# reported.
	sleep 6
	# A kmemleak that turned itself off (out of memory for its metadata,
	# an internal error) refuses a scan (EPERM) and found nothing: the
	# boot fails (splat-check.py).
	if echo scan 2>/dev/null > /sys/kernel/debug/kmemleak &&
		! dmesg | grep -q "kmemleak: Kernel memory leak detector disabled"; then
		sleep 1
		echo scan > /sys/kernel/debug/kmemleak
		cat /sys/kernel/debug/kmemleak
	else
		echo "VM: debug facility off at the end: kmemleak"
	fi
fi
# lockdep turns itself off after its first report (splat-check.py excuses
# that only after a report it accepted) or on an internal limit: either
# way nothing after it was checked.
if [ -r /proc/lockdep_stats ]; then
	dl=$(sed -n 's/^ *debug_locks: *//p' /proc/lockdep_stats)
	[ "$dl" = 1 ] || echo "VM: debug facility off at the end: lockdep (debug_locks ${dl:-unknown})"
fi
dmesg > /mnt/results/dmesg.txt 2>/dev/null
echo "$rc" > /mnt/results/rc
sync
umount /mnt/results
echo o > /proc/sysrq-trigger
# Power-off runs asynchronously and takes the 9p root away: anything that
# has to exec a program now fails, and an init that exits panics the guest.
# Wait with a shell builtin.
while :; do :; done
