#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Boot the test kernel in QEMU with the host root read-only over 9p, run one
# command inside, and return its exit status.
#
#   tools/vm/run.sh [options] -- command [args...]
#     --name NAME          results folder name (results/NAME-<time>/)
#     --timeout SECONDS    guest-side watchdog: sysrq-w then power off (default 900)
#     --allow-rdma-cm-lockdep
#                          accept rdma_cm's handler_mutex lockdep report
#                          (Documentation/iw_cm.rst); every other splat stays fatal
#     --allow-rdma-cm-lockdep-after MARKER
#                          the same, only below the console's first line holding
#                          MARKER (the boot's last test draws it)
#     --allow-upstream-siw accept the reports of upstream siw's own faults that a
#                          tools/testing/siw patch fixes, each by its signature
#                          (splat-check.py: 0002's lockdep report, 0006's leaked
#                          endpoint, 0010's KASAN read of a flushed WR); for a
#                          boot with IWCM_SIW=stock only
#     --no-kmemleak        skip the kmemleak scan at the end
#
# The console log is saved as results/NAME-<time>/console.log.  Any kernel
# splat in it fails the run; a guest that does not finish is reported as a
# hang (exit 124).  Environment:
# IWCM_ACCEL=tcg|kvm to skip the KVM probe, IWCM_RESULTS_DIR,
# IWCM_RDMA_CM=patched|stock and IWCM_RDMA_CM_KO (which rdma_cm.ko the guest
# loads; default the test rdma_cm of tools/testing/rdma_cm/),
# IWCM_C_IWCM=stock|iwpm-fixed (the C iw_cm the guest's modprobe loads:
# the kernel's, or tools/testing/iw_cm_c/'s iwcm.c with the port mapper
# client fixed, put in its place; forwarded to the tests),
# IWCM_ISERT=patched|stock and IWCM_ISERT_KO, IWCM_SMBDIRECT and
# IWCM_SMBDIRECT_KO, IWCM_CIFS and IWCM_CIFS_KO (on the ULP kernel: which
# ib_isert.ko, smbdirect.ko and cifs.ko; default the test ones of
# tools/testing/isert/, smbdirect/ and cifs/; forwarded),
# IWCM_ISER_RTR_FORCE=1 (iser.sh's RTR-peer case also where it is skipped),
# IWCM_VM_SMP (vCPUs, default 2), IWCM_VM_LOCK (lock file that serialises VM runs; default
# $IWCM_CACHE/vm.lock: give a long soak its own to run beside other runs).
# Another kernel than the test kernel (tools/distro/vm-test.sh: Debian's):
# IWCM_VM_KERNEL (its bzImage), IWCM_VM_KREL (its release), IWCM_VM_KMODS
# (a folder with lib/modules/<release>/, shared as "kmods"), IWCM_VM_INITRD
# (an initramfs that mounts the 9p root itself and runs the init= program:
# for a kernel with 9p and overlayfs as modules).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../kernel/env.sh"

name=vm
timeout=900
allow=()
nokmemleak=0
while [ $# -gt 0 ]; do
	case "$1" in
	--name) name=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--allow-rdma-cm-lockdep) allow+=(--allow-rdma-cm-lockdep); shift ;;
	--allow-rdma-cm-lockdep-after) allow+=(--allow-rdma-cm-lockdep-after "$2"); shift 2 ;;
	--allow-upstream-siw) allow+=(--allow-upstream-siw); shift ;;
	--no-kmemleak) nokmemleak=1; shift ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: $0 [options] -- command..." >&2; exit 2; }

if [ -n "${IWCM_VM_KERNEL:-}" ]; then
	bzimage=$IWCM_VM_KERNEL
	krel=${IWCM_VM_KREL:?IWCM_VM_KREL: the release of $IWCM_VM_KERNEL}
	KMODS=${IWCM_VM_KMODS:?IWCM_VM_KMODS: the modules of $IWCM_VM_KERNEL}
	[ -f "$bzimage" ] || { echo "VM: no kernel at $bzimage" >&2; exit 2; }
else
	bzimage=$KDIR/arch/x86/boot/bzImage
	[ -f "$KCACHE/.done" ] || { echo "VM: no test kernel at $KCACHE (run: make kernel)" >&2; exit 2; }
	krel=$(cat "$KDIR/include/config/kernel.release")
fi
initrd=()
[ -z "${IWCM_VM_INITRD:-}" ] || initrd=(-initrd "$IWCM_VM_INITRD")

results_root=${IWCM_RESULTS_DIR:-$IWCM_TOP/results}
res=$results_root/$name-$(date +%Y%m%d-%H%M%S)-$$
mkdir -p "$res"
printf '%s\n' "$@" > "$res/argv"
pwd > "$res/cwd"
# rdma_cm: the test rdma_cm (tools/testing/rdma_cm/: the kernel's plus its
# fixes) replaces the kernel's rdma_cm.ko in the guest, as the test siw
# replaces siw, unless IWCM_RDMA_CM=stock; IWCM_RDMA_CM_KO names another
# build (repro-gid-race.sh).
rdma_cm_ko=${IWCM_RDMA_CM_KO:-}
case "${IWCM_RDMA_CM:-patched}" in
stock) rdma_cm_ko= ;;
patched)
	if [ -z "$rdma_cm_ko" ]; then
		# build.sh does nothing when the module is up to date with the
		# kernel and the patches; one build at a time (soak lanes).
		rdma_cm_ko=$IWCM_TOP/tools/testing/rdma_cm/build/rdma_cm.ko
		mkdir -p "$IWCM_CACHE"
		if ! flock "$IWCM_CACHE/rdma_cm-build.lock" \
			"$IWCM_TOP/tools/testing/rdma_cm/build.sh" > "$res/rdma_cm-build.log" 2>&1; then
			tail -n 20 "$res/rdma_cm-build.log" >&2
			echo "VM: test rdma_cm build failed (tools/testing/rdma_cm/build.sh)" >&2
			exit 2
		fi
	fi
	[ -f "$rdma_cm_ko" ] || { echo "VM: no test rdma_cm at $rdma_cm_ko" >&2; exit 2; } ;;
*) echo "VM: IWCM_RDMA_CM must be patched or stock, not '$IWCM_RDMA_CM'" >&2; exit 2 ;;
esac
[ -z "$rdma_cm_ko" ] || cp "$rdma_cm_ko" "$res/rdma_cm.ko"
# The C iw_cm: the kernel's, or iwcm.c with the port mapper client fixed
# (tools/testing/iw_cm_c/), put in place of the kernel's iw_cm.ko.
case "${IWCM_C_IWCM:-stock}" in
stock) ;;
iwpm-fixed)
	c_iwcm_ko=$IWCM_TOP/tools/testing/iw_cm_c/build/iw_cm.ko
	mkdir -p "$IWCM_CACHE"
	# Built and copied under the lock (another run may rebuild it).
	if ! flock "$IWCM_CACHE/iw_cm_c-build.lock" bash -c '"$1" && cp "$2" "$3"' _ \
		"$IWCM_TOP/tools/testing/iw_cm_c/build.sh" "$c_iwcm_ko" "$res/iw_cm.ko" \
		> "$res/iw_cm_c-build.log" 2>&1; then
		tail -n 20 "$res/iw_cm_c-build.log" >&2
		echo "VM: C iw_cm build failed (tools/testing/iw_cm_c/build.sh)" >&2
		exit 2
	fi ;;
*) echo "VM: IWCM_C_IWCM must be stock or iwpm-fixed, not '$IWCM_C_IWCM'" >&2; exit 2 ;;
esac
# Test ULP modules, on the ULP kernel: the kernel's own module plus the
# fixes in tools/testing/<name>/ (its build.sh; each patch is written for
# upstream), put in place of the kernel's by guest-init.sh, with either
# iw_cm.  IWCM_<NAME>=stock keeps the kernel's; IWCM_<NAME>_KO names
# another build (isert's repro-removal-race.sh).
#   isert      LIO's iSER target, ib_isert.ko (IWCM_ISERT, IWCM_ISERT_KO)
#   smbdirect  SMB Direct for cifs and ksmbd, smbdirect.ko
#              (IWCM_SMBDIRECT, IWCM_SMBDIRECT_KO)
#   cifs       the SMB client, cifs.ko (IWCM_CIFS, IWCM_CIFS_KO)
test_ulp_module() {	# test_ulp_module NAME MODULE BUILT_KO
	local name=$1 mod=$2 var ko_var choice ko
	var=IWCM_${name^^}
	ko_var=${var}_KO
	choice=${!var:-patched}
	ko=${!ko_var:-}
	case "$choice" in
	stock) ko= ;;
	patched)
		if [ -z "$ko" ]; then
			ko=$IWCM_TOP/tools/testing/$name/$3
			mkdir -p "$IWCM_CACHE"
			if ! flock "$IWCM_CACHE/$name-build.lock" \
				"$IWCM_TOP/tools/testing/$name/build.sh" > "$res/$name-build.log" 2>&1; then
				tail -n 20 "$res/$name-build.log" >&2
				echo "VM: test $name build failed (tools/testing/$name/build.sh)" >&2
				exit 2
			fi
		fi
		[ -f "$ko" ] || { echo "VM: no test $name at $ko" >&2; exit 2; } ;;
	*) echo "VM: $var must be patched or stock, not '$choice'" >&2; exit 2 ;;
	esac
	export "$var=$choice"
	[ -z "$ko" ] || cp "$ko" "$res/$mod.ko"
}
if [ "$IWCM_KFLAVOUR" = ulp ] && [ -z "${IWCM_VM_KERNEL:-}" ]; then
	test_ulp_module isert ib_isert build/ib_isert.ko
	test_ulp_module smbdirect smbdirect build/smbdirect/smbdirect.ko
	test_ulp_module cifs cifs build/fs/smb/client/cifs.ko
fi
# The guest's command, with the environment it gets (after the test ULP
# modules: test_ulp_module exports which of them is in place).
{
	echo "set -o pipefail"
	# The guest's HOME is /tmp: hand over where the kernel cache and the
	# repo are, and the test selection, instead of letting env.sh guess.
	for v in IWCM_CACHE IWCM_TOP KSRC IWCM_KFLAVOUR IWCM_IMPL IWCM_C_IWCM IWCM_ISERT IWCM_ISER_RTR_FORCE IWCM_SMBDIRECT IWCM_CIFS IWCM_TESTS IWCM_SIW IWCM_RUST_PARAMS IWCM_KUNIT_PARAMS IWCM_KUNIT_MIN_CM_IDS IWCM_TEST_TIMEOUT IWCM_SOAK_LIVE IWCM_QUICK IWCM_HOLD_COUNT IWCM_HOLD_READS IWCM_HOLD_SETUP_S IWCM_HOSTILE_SERVER_CASES IWCM_HOSTILE_CLIENT_CASES IWCM_HOSTILE_QUICK_SERVER_CASES IWCM_HOSTILE_QUICK_CLIENT_CASES IWCM_SIW_DYNDBG KSELFTEST_DIR; do
		[ -n "${!v:-}" ] && printf 'export %s=%q\n' "$v" "${!v}"
	done
	printf '%q ' "$@"; echo
} > "$res/cmd.sh"
# The selftests, built (the C tool, gcc: seconds here, most of a minute
# under TCG) and installed in the kselftest layout here, into the results
# share: guest-tests.sh copies that instead of running make in the guest
# (make and lib.mk's shell calls cost most of a minute per boot under
# TCG).  A failure here leaves the guest to build and install them.
kst=$KSRC/tools/testing/selftests
if flock "$IWCM_CACHE/selftests-build.lock" bash -c '
	set -e
	src=$1/tools/testing/selftests/iw_cm kst=$2 dst=$3
	make -s -C "$src" KSELFTEST_DIR="$kst"
	mkdir -p "$dst/iw_cm"
	cp -r "$kst/kselftest" "$kst/run_kselftest.sh" "$dst/"
	make -s -C "$src" KSELFTEST_DIR="$kst" OUTPUT="$dst/iw_cm" install INSTALL_PATH="$dst/iw_cm"
	make -s -C "$src" KSELFTEST_DIR="$kst" COLLECTION=iw_cm emit_tests > "$dst/kselftest-list.txt"
	# One file for the guest to read over 9p (file by file took 20 s).
	tar -C "$dst" -cf "$dst.tar" .
	rm -rf "$dst"
	' _ "$IWCM_TOP" "$kst" "$res/kselftest" >"$res/selftests-build.log" 2>&1; then
	:
else
	echo "VM: the selftests did not build or install on the host (the guest does it): $res/selftests-build.log"
fi
echo "$timeout" > "$res/guest-timeout"
[ $nokmemleak -eq 0 ] || touch "$res/no-kmemleak"

# One VM at a time on this machine (2 cores: a second TCG guest would only
# slow both and skew timings).  Waits for the other run to finish.
mkdir -p "$IWCM_CACHE"
lock=${IWCM_VM_LOCK:-$IWCM_CACHE/vm.lock}
exec 9>"$lock"
if ! flock -n 9; then
	echo "VM: waiting for another VM run to finish (lock $lock)"
	flock 9
fi

accel=${IWCM_ACCEL:-$("$here/kvm-probe.sh")}
# 4-level paging (la57=off, and no5lvl on the command line for KVM hosts
# with LA57): with 5-level paging, an interrupt that lands inside the boot
# CPU's identify_cpu() -- while its capability words, X86_FEATURE_LA57
# included, are cleared and read again -- makes KASAN see the 5-level
# direct map (0xff11...) as outside its shadow and report a false
# "wild-memory-access in do_raw_spin_lock" from handle_edge_irq at
# ~0.004 s, which also turns lockdep off for the boot.  Seen in 5 of 31
# TCG boots of the lean KASAN kernel with "-cpu max"; none with 4 levels.
cpu="-cpu max,la57=off"
[ "$accel" = kvm ] && cpu="-cpu host"

# Host-side limit: the guest watchdog plus boot and kmemleak time.
host_timeout=$((timeout + 180))
echo "VM: booting $krel ($accel), results in $res"
start=$(date +%s.%N)
set +e
# vCPUs: 2 by default (the KUnit stress and the races want two CPUs).
# IWCM_VM_SMP=1 for VMs run side by side (soak lanes): under TCG, two
# 2-vCPU guests on 2 host cores preempt each other's lock holders.
smp=${IWCM_VM_SMP:-2}
case "$smp" in [1-8]) ;; *) echo "VM: IWCM_VM_SMP must be 1-8, not '$smp'" >&2; exit 2 ;; esac
# A guest that dies before its init ran (nothing of ours was loaded yet)
# is booted once more: under TCG the kernel has been seen to Oops on an
# int3 in its own boot-time text patching (enqueue_timer, no module
# loaded).  The failed boot's console is kept as console-boot-failure.log.
for attempt in 1 2; do
	# kasan_multi_shot: every KASAN report is printed (by default only
	# the first of a boot; a later one would go unseen in the log).
	# kunit.enable/autorun: the lean kernel's allnoconfig base leaves
	# KUnit off by default (CONFIG_KUNIT_DEFAULT_ENABLED unset), and the
	# Rust iw_cm's suite runs at insmod only when it is on.
	# shellcheck disable=SC2086
	# --foreground: QEMU stays in the caller's process group, so that
	# Ctrl-C, or a soak lane stopped with its group, stops it too
	# (timeout otherwise moves it to a group of its own).
	timeout --foreground --signal=KILL "$host_timeout" qemu-system-x86_64 \
		-machine q35,accel="$accel" $cpu -smp "$smp" -m 3G \
		-display none -no-reboot -monitor none -nic none \
		-serial stdio \
		-kernel "$bzimage" "${initrd[@]}" \
		-append "console=ttyS0 root=hostroot rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=loose ro init=$here/guest-init.sh panic=-1 loglevel=6 printk.time=1 no5lvl kasan_multi_shot log_buf_len=16M kunit.enable=1 kunit.autorun=1" \
		-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
		-fsdev local,id=kmods,path="$KMODS",security_model=none,readonly=on \
		-device virtio-9p-pci,fsdev=kmods,mount_tag=kmods \
		-fsdev local,id=results,path="$res",security_model=none \
		-device virtio-9p-pci,fsdev=results,mount_tag=results \
		< /dev/null 2>&1 | tee "$res/console.log"
	qrc=${PIPESTATUS[0]}
	if [ $attempt -eq 1 ] && [ ! -f "$res/rc" ] && [ ! -f "$res/hang" ] &&
			[ "$qrc" -ne 137 ] && [ "$qrc" -ne 124 ] &&
			! grep -q "^VM: init reached" "$res/console.log"; then
		mv "$res/console.log" "$res/console-boot-failure.log"
		echo "VM: the guest died during boot, before its init ran (qemu exit $qrc; console in $res/console-boot-failure.log): booting once more"
		continue
	fi
	break
done
set -e
end=$(date +%s.%N)
secs=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')
echo "$secs" > "$res/seconds"

status=0
if [ -f "$res/hang" ]; then
	echo "VM: HANG: the command did not finish within ${timeout}s (blocked tasks above, in $res/console.log)"
	status=124
elif [ "$qrc" -eq 137 ] || [ "$qrc" -eq 124 ]; then
	echo "VM: HANG: QEMU killed by the host timeout after ${host_timeout}s"
	status=124
elif [ ! -f "$res/rc" ]; then
	echo "VM: the guest stopped without a result (qemu exit $qrc): crash or boot failure"
	status=125
else
	status=$(cat "$res/rc")
fi

# A module asked for in place of the kernel's (the test rdma_cm, the fixed
# C iw_cm): the guest must have put it there (guest-init.sh), or the run
# tested the kernel's.
for m in rdma_cm iw_cm ib_isert smbdirect cifs; do
	[ -f "$res/$m.ko" ] || continue
	if [ "$(cat "$res/$m-status" 2>/dev/null)" != replaced ]; then
		echo "VM: the $m.ko asked for was not put in place of the kernel's ($(cat "$res/$m-status" 2>/dev/null || echo "no status from the guest")): run fails"
		[ "$status" -ne 0 ] || status=1
	fi
done
if ! python3 "$here/splat-check.py" "${allow[@]}" "$res/console.log"; then
	echo "VM: kernel splat in the console log: run fails"
	[ "$status" -ne 0 ] || status=1
fi
echo "VM: finished in ${secs}s with status $status"
exit "$status"
