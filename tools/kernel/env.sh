# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Sourced by the build and VM scripts: where the test kernel lives.
#
# The test kernel is cached outside the repository, keyed by kernel version,
# flavour and a hash of the config fragments and toolchain:
#   $IWCM_CACHE/kernel/<version>-<flavour>-<hash>/{build,mods,.done}
# Two flavours, chosen by IWCM_KFLAVOUR:
#   lean (default)  KASAN + lockdep + kmemleak, what make demo and most of
#                   make check boot
#   ulp             lean plus tools/kernel/ulp.fragment: NFS/RDMA, SMB
#                   Direct, iSER (the ULP selftests; tools/ulp-tree.sh
#                   builds the modules for it in a copy of the repository)
#   trace           lean plus tools/kernel/trace.fragment: the irqsoff
#                   latency tracer, for make bench's irqsoff group
#                   (tools/bench/bench.sh boots it in a second VM)

IWCM_TOP=${IWCM_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
IWCM_CACHE=${IWCM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/iwcm}
KVER_SERIES=${KVER_SERIES:-7.3}
IWCM_KFLAVOUR=${IWCM_KFLAVOUR:-lean}
case "$IWCM_KFLAVOUR" in
lean) FLAVOUR=lean-kasan ;;
ulp) FLAVOUR=lean-kasan-ulp ;;
trace) FLAVOUR=lean-kasan-trace ;;
*) echo "env.sh: IWCM_KFLAVOUR must be lean, ulp or trace, not '$IWCM_KFLAVOUR'" >&2; return 1 2>/dev/null || exit 1 ;;
esac
LLVM_SUFFIX=${LLVM_SUFFIX:--19}
RUSTC_BIN=${RUSTC_BIN:-/usr/bin/rustc}
BINDGEN_BIN=${BINDGEN_BIN:-$(command -v bindgen 2>/dev/null || echo "$HOME/.cargo/bin/bindgen")}
KSRC_TARBALL=$(ls /usr/src/linux-source-"$KVER_SERIES".tar.* 2>/dev/null | head -n1 || true)
KSRC_PKGVER=$(dpkg-query -W -f='${Version}' "linux-source-$KVER_SERIES" 2>/dev/null || echo unknown)

iwcm_fragments() {
	echo "$IWCM_TOP/tools/kernel/base.fragment"
	echo "$IWCM_TOP/tools/kernel/config.fragment"
	[ "$IWCM_KFLAVOUR" != ulp ] || echo "$IWCM_TOP/tools/kernel/ulp.fragment"
	[ "$IWCM_KFLAVOUR" != trace ] || echo "$IWCM_TOP/tools/kernel/trace.fragment"
}

iwcm_kernel_key() {
	{
		echo "$KSRC_PKGVER $FLAVOUR $LLVM_SUFFIX"
		"$RUSTC_BIN" --version 2>/dev/null
		"$BINDGEN_BIN" --version 2>/dev/null
		for f in $(iwcm_fragments); do cat "$f"; done
	} | sha256sum | cut -c1-12
}

KCACHE=$IWCM_CACHE/kernel/$KSRC_PKGVER-$FLAVOUR-$(iwcm_kernel_key)
KSRC=$IWCM_CACHE/src/linux-source-$KSRC_PKGVER
KDIR=$KCACHE/build
KMODS=$KCACHE/mods
KMAKE_ARGS=(LLVM="$LLVM_SUFFIX" RUSTC="$RUSTC_BIN" BINDGEN="$BINDGEN_BIN")

# iwcm_extract_source: unpack linux-source-$KVER_SERIES into $KSRC once
# (the test kernel's build and tools/distro/ both build from it).
iwcm_extract_source() {
	[ -n "$KSRC_TARBALL" ] || { echo "kernel: linux-source-$KVER_SERIES not installed (run tools/setup-deps.sh)" >&2; return 1; }
	[ ! -f "$KSRC/.extracted" ] || return 0
	mkdir -p "$IWCM_CACHE"
	# (One extraction at a time: make kernel and make distro share it.)
	flock "$IWCM_CACHE/src-extract.lock" bash -c '
		[ ! -f "$1/.extracted" ] || exit 0
		echo "kernel: extracting $2"
		rm -rf "$1.tmp" && mkdir -p "$1.tmp" &&
			tar -xf "$2" -C "$1.tmp" --strip-components=1 &&
			rm -rf "$1" && mv "$1.tmp" "$1" && touch "$1/.extracted"' _ "$KSRC" "$KSRC_TARBALL"
}
