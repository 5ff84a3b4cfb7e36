#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Build the test kernel (bzImage + modules) from Debian's linux-source package
# and the checked-in config fragments into the cache directory of env.sh.
# Reused when a finished build with the same key is present.
#
# The configuration is lean: allnoconfig, then kvm_guest.config,
# base.fragment (what the VM's userspace needs) and config.fragment (what the
# tests need: RDMA, NVMe-oF, Rust, KASAN, lockdep, kmemleak, ...).  The time
# from nothing (extraction, configuration, build, module install) is printed
# and kept in $KCACHE/build-seconds.
set -euo pipefail
. "$(dirname "$0")/env.sh"
t0=$(date +%s)

if [ -f "$KCACHE/.done" ]; then
	echo "kernel: reusing $KCACHE"
	exit 0
fi
iwcm_extract_source || exit 1

mkdir -p "$KDIR"
jobs=$(( $(nproc) + 1 ))
km() { make -C "$KSRC" O="$KDIR" "${KMAKE_ARGS[@]}" "$@"; }

echo "kernel: configuring $KDIR (allnoconfig + kvm_guest.config + $(iwcm_fragments | xargs -n1 basename | xargs))"
# shellcheck disable=SC2046
cat "$KSRC/kernel/configs/kvm_guest.config" $(iwcm_fragments) > "$KDIR/iwcm-allconfig"
# kvm_guest.config's disk/net/graphics lines are overridden on purpose:
# kconfig's "override: reassigning" notes for them are not news.
km -s KCONFIG_ALLCONFIG="$KDIR/iwcm-allconfig" allnoconfig 2>&1 | { grep -v "override: reassigning" || true; }
km -s olddefconfig

# Every option the fragments ask for must have survived olddefconfig.
bad=0
for f in $(iwcm_fragments); do
	while IFS= read -r line; do
		case "$line" in CONFIG_*=*) ;; *) continue ;; esac
		opt=${line%%=*}; val=${line#*=}
		if [ "$val" = n ]; then
			grep -q "^$opt=" "$KDIR/.config" && { echo "kernel: $opt should be unset"; bad=1; }
		else
			grep -qx "$line" "$KDIR/.config" || { echo "kernel: $line did not stick: $(grep "^$opt=\|# $opt " "$KDIR/.config")"; bad=1; }
		fi
	done < "$f"
done
[ $bad -eq 0 ] || { echo "kernel: config fragment not satisfied (is Rust available? try: make -C $KSRC O=$KDIR ${KMAKE_ARGS[*]} rustavailable)" >&2; exit 1; }

start=$(date +%s)
echo "kernel: building bzImage and modules with -j$jobs (tens of minutes on 2 cores; log: $KCACHE/build.log)"
set +e
km -j"$jobs" bzImage modules 2>&1 | tee "$KCACHE/build.log" |
	awk '/error|Error/ {print; fflush(); next} NR % 250 == 0 {printf "kernel: [%s] %d steps: %s\n", strftime("%H:%M:%S"), NR, $0; fflush()}'
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
	tail -n 40 "$KCACHE/build.log" >&2
	echo "kernel: build failed (rc=$rc)" >&2
	exit 1
fi
rm -rf "$KMODS"
km -s INSTALL_MOD_PATH="$KMODS" modules_install >/dev/null
end=$(date +%s)
echo "$((end - t0))" > "$KCACHE/build-seconds"
touch "$KCACHE/.done"
echo "kernel: compiled in $(( (end - start) / 60 )) min $(( (end - start) % 60 )) s;" \
	"from nothing (extract, configure, build, install) $(( (end - t0) / 60 )) min $(( (end - t0) % 60 )) s: $KDIR/arch/x86/boot/bzImage"
