// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Safe wrappers for kernel RDMA consumers (ULPs): rdma_cm ids and the
//! verbs objects a connected queue needs.
//!
//! Only modules that *use* rdma_cm include this directory (the iw_cm module
//! does not), with
//! `#[path = ".../rust/rdma/ulp/mod.rs"] mod ulp;`.  The including module
//! provides `crate::bindings`, generated from `rust/rdma/bindings_helper.h`
//! (which includes `ulp/ulp_helpers.h`), and defines the C helpers declared
//! in `ulp_helpers.h` in its own C file: they are the static inline functions
//! and macros of `include/rdma/ib_verbs.h` and `include/rdma/rdma_cm.h`.
//!
//! C headers mirrored: [`include/rdma/rdma_cm.h`](srctree/include/rdma/rdma_cm.h),
//! [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

pub(crate) mod cm;
pub(crate) mod verbs;
