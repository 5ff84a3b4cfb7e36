# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Included by the Kbuild file of every module that uses rust/rdma: checks
# that the kernel tree can build it, and generates that module's RDMA
# bindings with bindgen from rust/rdma/bindings_helper.h with the kernel's
# own C flags, derived as the kernel's rust/Makefile derives them for
# rust/bindings (clang: the C flags as they are; gcc: the flags libclang
# does not know filtered out, and --target from the architecture).
#
# The including Kbuild sets RDMA_DIR (this directory, as seen from $(src)),
# RDMA_BINDGEN_DEPS (extra headers), optionally RDMA_BINDGEN_HEADER (the
# module's own C interface, e.g. its C helpers' prototypes: bindgen reads it
# with bindings_helper.h for this module only), and makes its crate root
# depend on $(obj)/bindings_generated.rs:
#
#   $(obj)/foo_main.o: $(obj)/bindings_generated.rs
#   $(obj)/foo_main.o: export RDMA_BINDINGS_RS = $(abspath $(obj))/bindings_generated.rs

# ---- can this tree build a Rust module at all?  One line, at once.
ifndef CONFIG_RUST
$(error iw_cm: the kernel at $(objtree) is built without CONFIG_RUST: build against a kernel with Rust support (make kernel builds the test kernel))
endif
ifeq ($(wildcard $(objtree)/rust/libkernel.rmeta),)
$(error iw_cm: no Rust build artefacts in $(objtree)/rust (libkernel.rmeta): a headers-only package does not ship them; build against the kernel's full build tree (make kernel builds the test kernel))
endif

ifdef CONFIG_CC_IS_CLANG
rdma_bindgen_c_flags = $(c_flags)
else
# The kernel's own lists, read from its rust/Makefile so they stay in step.
rdma_bindgen_mk := $(srctree)/rust/Makefile
ifeq ($(wildcard $(rdma_bindgen_mk)),)
$(error iw_cm: $(rdma_bindgen_mk) is missing: it holds the bindgen flags of a gcc-built kernel; build against a full kernel source/build tree)
endif
rdma_bindgen_skip_c_flags := $(shell sed -n '/^bindgen_skip_c_flags :=/,/[^\\]$$/p' $(rdma_bindgen_mk) | \
	sed -e 's/^bindgen_skip_c_flags :=//' -e 's/\\$$//' | tr '\n' ' ')
# BINDGEN_TARGET_<arch> := <triple>; powerpc has two, the first for
# CONFIG_PPC64 (as rust/Makefile's ifdef); um takes its SUBARCH's.
rdma_bindgen_arch := $(if $(filter um,$(SRCARCH)),$(SUBARCH),$(SRCARCH))
rdma_bindgen_targets := $(shell sed -n 's/^BINDGEN_TARGET_$(rdma_bindgen_arch)[[:space:]]*:=[[:space:]]*//p' $(rdma_bindgen_mk))
rdma_bindgen_target := $(if $(CONFIG_PPC64),$(firstword $(rdma_bindgen_targets)),$(lastword $(rdma_bindgen_targets)))
ifeq ($(rdma_bindgen_target),)
$(error iw_cm: no bindgen target for ARCH=$(SRCARCH) in $(rdma_bindgen_mk): the kernel's Rust support does not cover this architecture)
endif
rdma_bindgen_c_flags = $(filter-out $(rdma_bindgen_skip_c_flags), $(c_flags)) -w --target=$(rdma_bindgen_target)
# As rust/Makefile: libclang < 16 needs this with INIT_STACK_ALL_ZERO.
ifdef CONFIG_INIT_STACK_ALL_ZERO
rdma_libclang_maj := $(shell $(BINDGEN) $(srctree)/scripts/rust_is_available_bindgen_libclang.h 2>&1 | sed -ne 's/.*clang version \([0-9]*\).*/\1/p')
ifeq ($(shell expr $(rdma_libclang_maj) \< 16), 1)
rdma_bindgen_c_flags += -enable-trivial-auto-var-init-zero-knowing-it-will-be-removed-from-clang
endif
endif
endif
rdma_bindgen_c_flags_final = $(if $(CONFIG_LTO),$(filter-out $(CC_FLAGS_LTO), $(rdma_bindgen_c_flags)),$(rdma_bindgen_c_flags)) \
	-fno-builtin -D__BINDGEN__ -DMODULE

quiet_cmd_rdma_bindgen = BINDGEN $@
      cmd_rdma_bindgen = \
	$(BINDGEN) $< $(shell grep -Ev '^\#|^$$' $(RDMA_DIR)/bindgen_parameters) \
		--rust-target 1.85 --use-core --with-derive-default --ctypes-prefix ffi \
		--no-layout-tests --no-debug '.*' --enable-function-attribute-detection \
		-o $@ -- $(rdma_bindgen_c_flags_final) -I$(RDMA_DIR) \
		$(if $(RDMA_BINDGEN_HEADER),-include $(RDMA_BINDGEN_HEADER))

$(obj)/bindings_generated.rs: $(RDMA_DIR)/bindings_helper.h $(RDMA_DIR)/bindgen_parameters \
		$(RDMA_BINDGEN_HEADER) $(RDMA_BINDGEN_DEPS) FORCE
	$(call if_changed_dep,rdma_bindgen)
targets += bindings_generated.rs
