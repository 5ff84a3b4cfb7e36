# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Included by the Kbuild file of every module that uses rust/rdma: checks
# that the kernel tree can build it, and generates that module's RDMA
# bindings with bindgen from rust/rdma/bindings_helper.h with the kernel's
# own C flags, derived as the kernel's rust/Makefile derives them for
# rust/bindings (clang: the C flags as they are; gcc: the flags libclang
# does not know filtered out, and --target from the architecture).
#
# The including Kbuild sets RDMA_DIR (this directory, as seen from $(src))
# and RDMA_BINDGEN_DEPS (extra headers), and makes its crate root depend on
# $(obj)/bindings_generated.rs:
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
rdma_bindgen_target := $(lastword $(shell sed -n 's/^BINDGEN_TARGET_$(SRCARCH)[[:space:]]*:=[[:space:]]*//p' $(rdma_bindgen_mk)))
ifeq ($(rdma_bindgen_target),)
$(error iw_cm: no bindgen target for ARCH=$(SRCARCH) in $(rdma_bindgen_mk): the kernel's Rust support does not cover this architecture)
endif
rdma_bindgen_c_flags = $(filter-out $(rdma_bindgen_skip_c_flags), $(c_flags)) -w --target=$(rdma_bindgen_target)
endif
rdma_bindgen_c_flags_final = $(if $(CONFIG_LTO),$(filter-out $(CC_FLAGS_LTO), $(rdma_bindgen_c_flags)),$(rdma_bindgen_c_flags)) \
	-fno-builtin -D__BINDGEN__ -DMODULE

quiet_cmd_rdma_bindgen = BINDGEN $@
      cmd_rdma_bindgen = \
	$(BINDGEN) $< $(shell grep -Ev '^\#|^$$' $(RDMA_DIR)/bindgen_parameters) \
		--rust-target 1.85 --use-core --with-derive-default --ctypes-prefix ffi \
		--no-layout-tests --no-debug '.*' --enable-function-attribute-detection \
		-o $@ -- $(rdma_bindgen_c_flags_final) -I$(RDMA_DIR) $(RDMA_BINDGEN_INCLUDES)

$(obj)/bindings_generated.rs: $(RDMA_DIR)/bindings_helper.h $(RDMA_DIR)/bindgen_parameters \
		$(RDMA_BINDGEN_DEPS) FORCE
	$(call if_changed_dep,rdma_bindgen)
targets += bindings_generated.rs
