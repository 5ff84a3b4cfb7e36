#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Print "kvm" if a KVM guest of the test kernel really boots here, else "tcg".
# /dev/kvm can exist while nested virtualisation does not work (the guest
# then hangs at "Decompressing Linux..."), so the probe boots the kernel for
# real, once, and caches the answer per host and kernel.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../kernel/env.sh"
cache=$KCACHE/kvm-probe-$(hostname)
if [ -f "$cache" ]; then cat "$cache"; exit 0; fi
ans=tcg
if [ -w /dev/kvm ]; then
	out=$(timeout --signal=KILL 20 qemu-system-x86_64 -machine q35,accel=kvm -cpu host \
		-m 512M -display none -no-reboot -monitor none -serial stdio \
		-kernel "$KDIR/arch/x86/boot/bzImage" -append "console=ttyS0 panic=-1" \
		</dev/null 2>/dev/null | head -c 200000)
	# Any kernel line past the decompressor means the guest runs.
	if grep -q "Linux version" <<<"$out"; then ans=kvm; fi
fi
echo "$ans" > "$cache"
echo "$ans"
