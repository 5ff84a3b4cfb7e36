#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Install everything the build and the VM tests need on a Debian 12 host.
# Idempotent: a second run only checks.  Needs root (or sudo).
set -euo pipefail

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

KVER_SERIES=${KVER_SERIES:-7.3}
stamp_ok() {
	command -v /usr/bin/rustc >/dev/null && [ -d /usr/lib/rustlib/src/rust ] &&
	[ -x /usr/bin/rustfmt ] && [ -x /usr/bin/clippy-driver ] &&
	command -v clang-19 >/dev/null && command -v qemu-system-x86_64 >/dev/null &&
	command -v rping >/dev/null && command -v ib_send_bw >/dev/null &&
	command -v nvme >/dev/null && command -v fio >/dev/null &&
	command -v pahole >/dev/null && command -v rdma >/dev/null && command -v patch >/dev/null &&
	command -v gnuplot >/dev/null &&
	ulp_tools_ok &&
	[ -f /usr/include/rdma/rdma_cma.h ] && [ -f /usr/include/infiniband/verbs.h ] &&
	ls /usr/src/linux-source-${KVER_SERIES}.tar.* >/dev/null 2>&1 &&
	bindgen_ok
}
# The userspace of the in-kernel ULPs' selftests (NFS/RDMA, SMB Direct,
# iSER), run in the guest from this root.
ulp_tools_ok() {
	[ -x /usr/sbin/rpc.nfsd ] && [ -x /usr/sbin/exportfs ] && [ -x /usr/sbin/rpcbind ] &&
	[ -x /sbin/mount.nfs ] && [ -x /usr/sbin/ksmbd.mountd ] && [ -x /sbin/mount.cifs ] &&
	[ -x /usr/sbin/iscsiadm ] && [ -x /usr/sbin/iscsid ] && command -v targetcli >/dev/null
}
bindgen_ok() {
	local b
	b=$(command -v bindgen 2>/dev/null || echo "$HOME/.cargo/bin/bindgen")
	[ -x "$b" ] && "$b" --version 2>/dev/null | grep -qE 'bindgen 0\.(7[1-9]|[89][0-9])'
}

if stamp_ok; then
	echo "setup-deps: all dependencies present"
	exit 0
fi

# One set-up at a time (two make targets started together would otherwise
# run apt-get and `cargo install` side by side); the second re-checks.
lockdir=${IWCM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/iwcm}
mkdir -p "$lockdir"
exec 8>"$lockdir/setup-deps.lock"
if ! flock -n 8; then
	echo "setup-deps: another set-up is running; waiting for it"
	flock 8
fi
if stamp_ok; then
	echo "setup-deps: all dependencies present"
	exit 0
fi

# The newer suite that carries linux-source-7.3, on the mirror this machine
# already uses.  Default release stays bookworm so nothing else upgrades.
mirror=$(grep -hoE '^(URIs:|deb) +[a-z]+://[^ ]+/debian/?( |$)' \
	/etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
	awk '{print $2}' | head -n1 || true)
if [ -z "$mirror" ]; then
	echo "setup-deps: cannot find the Debian mirror in the apt sources" >&2
	exit 1
fi
if [ ! -f /etc/apt/sources.list.d/iwcm-trixie-backports.sources ]; then
	$SUDO tee /etc/apt/sources.list.d/iwcm-trixie-backports.sources >/dev/null <<SRC
Types: deb
URIs: ${mirror}
Suites: trixie trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
echo 'APT::Default-Release "bookworm";' | $SUDO tee /etc/apt/apt.conf.d/99iwcm-default-release >/dev/null

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends \
	rustc-web rust-web-src rust-web-clippy rustfmt-web libclang-19-dev clang-19 lld-19 llvm-19 \
	flex bison bc libelf-dev libssl-dev cpio dwarves make gcc git xz-utils \
	qemu-system-x86 rdma-core rdmacm-utils ibverbs-utils ibverbs-providers perftest \
	nvme-cli fio iproute2 kmod busybox-static python3 rsync patch strace \
	librdmacm-dev libibverbs-dev gnuplot-nox
# The ULPs' userspace.  Their packages would start daemons (rpcbind,
# nfs-server, iscsid) on this host: policy-rc.d forbids that for the
# install (the guest starts its own).
prc=/usr/sbin/policy-rc.d
own_prc=0
if [ ! -e "$prc" ]; then
	printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$prc" >/dev/null
	$SUDO chmod 755 "$prc"
	own_prc=1
	trap '$SUDO rm -f "$prc"' EXIT
fi
$SUDO apt-get install -y -q --no-install-recommends \
	nfs-kernel-server nfs-common rpcbind ksmbd-tools cifs-utils open-iscsi targetcli-fb
[ $own_prc -eq 0 ] || { $SUDO rm -f "$prc"; trap - EXIT; }
# Only the source package comes from the newer suite ("pkg/suite", not "-t",
# which would upgrade libc and friends); its dependencies (binutils, xz-utils)
# come from bookworm.
$SUDO apt-get install -y -q --no-install-recommends "linux-source-${KVER_SERIES}/trixie-backports"

if ! bindgen_ok; then
	cargo install --locked bindgen-cli
fi
stamp_ok || { echo "setup-deps: dependencies still missing after install" >&2; exit 1; }
echo "setup-deps: done"
