# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The Rust iw_cm: user entry point.  See README.md.
#
#   make deps       install the build/test dependencies (Debian 12)
#   make kernel     build the lean KASAN test kernel into the cache (prints its time)
#   make            build the out-of-tree modules against the test kernel
#   make siw        build the test provider (tools/testing/siw/)
#   make rdma_cm    build the test rdma_cm (tools/testing/rdma_cm/)
#   make check      the test command: everything, from nothing, ends "N passed, N failed"
#   make check-all  make check plus the whole C iw_cm suite and the nvme-rdma stress
#   make soak DURATION=100m   siw unplug soak in the VM until the time is up
#   make bench      C against Rust iw_cm in one VM boot (ABBA): ratios, report, plots
#   make ulp-loop BOOTS=20 [TESTS="nfs_rdma.sh ..."]   the in-kernel ULP selftests,
#                   boot after boot with each iw_cm (tools/stress/ulp-loop.sh)
#   make demo       the main command: build, boot, load our iw_cm, run the scenarios
#   make vm CMD=".."  run a command in the test VM
#   make selftest T="nfs_rdma.sh" [IMPL=c]   one VM boot running the named selftests
#   make hosttest   userspace cargo tests of the connection state machine,
#                   the VM harness's splat check (tools/vm/test_splat_check.py)
#                   the selftests' bounds (selftests/iw_cm/test_lib_bounds.sh)
#                   and the demo's bench groups (tools/bench/test_groups.sh)
#   make clippy     build with CLIPPY=1;  make rustfmtcheck: kernel rustfmt config
#   make install    install iw_cm.ko into /lib/modules/<release>/updates (DKMS style)
#   make install KVER=7.3.4+deb13-amd64   the same for Debian's kernel
#   make distro     build iw_cm.ko, the sample and the test siw for Debian's 7.3.4 kernel
#   make check-distro   ...and run rping/ucmatose/nvme-rdma unplug on that kernel in QEMU

TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
ENV := . $(TOP)/tools/kernel/env.sh
KDIR ?= $(shell bash -c '$(ENV); echo $$KDIR')
# Debian's rustfmt-web, the rustfmt of the rustc the kernel is built with
# (rustup's, first on PATH, may format differently).
RUSTFMT ?= /usr/bin/rustfmt
KMAKE_ARGS := $(shell bash -c '$(ENV); echo "$${KMAKE_ARGS[@]}"')

DURATION ?= 10m

ROUNDS ?= 5

.PHONY: all modules siw rdma_cm deps kernel check check-all soak bench ulp-loop selftest demo vm hosttest clippy rustfmt rustfmtcheck install clean distro check-distro bench-distro

all: modules

modules:
	@test -f $(KDIR)/Module.symvers || { echo "no test kernel at $(KDIR): run 'make kernel' first"; exit 1; }
	$(MAKE) -C $(KDIR) M=$(TOP) $(KMAKE_ARGS) modules

# The test provider the VM tests load: the kernel's siw plus
# tools/testing/siw/*.patch, built out of tree against the test kernel
# (never installed).  make check / make demo build it.
siw:
	$(TOP)/tools/testing/siw/build.sh

# The test rdma_cm: the kernel's rdma_cm plus tools/testing/rdma_cm/*.patch,
# put in place of the kernel's rdma_cm.ko in every VM boot (tools/vm/run.sh;
# IWCM_RDMA_CM=stock keeps the kernel's).
rdma_cm:
	$(TOP)/tools/testing/rdma_cm/build.sh

clippy:
	$(MAKE) -C $(KDIR) M=$(TOP) $(KMAKE_ARGS) CLIPPY=1 CLIPPY_DRIVER=/usr/bin/clippy-driver modules

rustfmt:
	$(RUSTFMT) --config-path $(KDIR)/source/.rustfmt.toml --edition 2021 \
		$$(git -C $(TOP) ls-files '*.rs' | grep -v '^tools/statemachine/' | sed 's|^|$(TOP)/|')

rustfmtcheck:
	$(RUSTFMT) --check --config-path $(KDIR)/source/.rustfmt.toml --edition 2021 \
		$$(git -C $(TOP) ls-files '*.rs' | grep -v '^tools/statemachine/' | sed 's|^|$(TOP)/|')

deps:
	$(TOP)/tools/setup-deps.sh

kernel: deps
	$(TOP)/tools/kernel/build-kernel.sh

check:
	$(TOP)/tools/check.sh

# make check-all PART=1..6 (or ours, c, upstream, ulps, scale, repro): one
# part of it, each meant to fit in an hour (tools/check.sh).
check-all:
	$(TOP)/tools/check.sh --all $(PART)

# Builds what it needs (kernel, modules, test siw) first.
soak: kernel modules siw rdma_cm
	$(TOP)/tools/stress/soak.sh $(DURATION)

# Sets up, builds what it needs, runs tools/bench/bench-guest.sh in one
# boot and writes results/bench-<time>/report.md with SVG plots.
bench:
	$(TOP)/tools/bench/bench.sh $(ROUNDS)

# The same groups on Debian's own kernel (tools/distro/), C against ours.
bench-distro: deps
	IWCM_BENCH_KERNEL=debian $(TOP)/tools/bench/bench.sh $(ROUNDS)

BOOTS ?= 5
TESTS ?= nfs_rdma.sh smb_direct.sh iser.sh
ulp-loop: deps
	$(TOP)/tools/stress/ulp-loop.sh $(BOOTS) $(TESTS)

demo:
	$(TOP)/tools/demo.sh

vm:
	$(TOP)/tools/vm/run.sh -- bash -c '$(CMD)'

IMPL ?= rust
selftest:
	@test -n "$(T)" || { echo 'usage: make selftest T="rping.sh [...]" [IMPL=rust|c]'; exit 2; }
	$(TOP)/tools/selftest.sh "$(T)" $(IMPL)

hosttest:
	cd $(TOP)/tools/statemachine && cargo test
	python3 $(TOP)/tools/vm/test_splat_check.py
	python3 $(TOP)/tools/vm/test_check_skips.py
	$(TOP)/tools/testing/selftests/iw_cm/test_lib_bounds.sh
	$(TOP)/tools/bench/test_groups.sh
	python3 $(TOP)/tools/bench/test_report.py
	$(TOP)/tools/test_env_table.sh
	$(TOP)/tools/test_demo_cells.sh

# make install: into the test kernel's modules; make install KVER=<Debian's
# 7.3.4+deb13-amd64> [INSTALL_MOD_PATH=DIR]: built for Debian's kernel
# (tools/distro/build.sh) and installed into its updates/.
ifeq ($(KVER),)
install: modules
	$(MAKE) -C $(KDIR) M=$(TOP) $(KMAKE_ARGS) INSTALL_MOD_DIR=updates modules_install
	depmod -a $$(cat $(KDIR)/include/config/kernel.release)
else
install:
	$(TOP)/tools/distro/install.sh $(KVER) $(INSTALL_MOD_PATH)
endif

# Debian's own kernel (linux-image-7.3.4+deb13-amd64, Documentation/debian.rst):
# build iw_cm.ko, the sample and the test siw for it, and test them
# on that kernel in QEMU.
distro: deps
	$(TOP)/tools/distro/build.sh

check-distro: deps
	$(TOP)/tools/distro/vm-test.sh

clean:
	-$(MAKE) -C $(KDIR) M=$(TOP) $(KMAKE_ARGS) clean
	rm -f drivers/infiniband/core/iw_cm/bindings_generated.rs drivers/infiniband/core/iw_cm/iwpm_*.c
