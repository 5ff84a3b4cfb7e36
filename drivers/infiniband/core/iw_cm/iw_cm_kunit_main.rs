// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! iw_cm_kunit: the KUnit suite of the Rust iw_cm, in a module of its own
//! (the kernel's `*_kunit.ko` pattern).
//!
//! Built beside iw_cm.ko when the kernel has KUnit, loaded only by the
//! tests (tools/testing/selftests/iw_cm/kunit.sh); KUnit runs the suite
//! `rust_iw_cm` when the module is loaded.  It drives iw_cm.ko through a
//! fake iWARP provider and fake ULPs, calling the nine exported functions
//! of include/rdma/iw_cm.h and the test-only interface iw_cm.ko exports
//! into the `EXPORTED_FOR_KUNIT_TESTING` namespace (kunit_iface.rs there,
//! [`iface`] here).  iw_cm.ko itself carries only the in-place tests of
//! its pure functions (`#[kunit_tests]` in cm_id/portmap.rs and
//! cm_id/table.rs, suites of their own).
//!
//! Parameters (iw_cm_kunit_glue.c): `stress_lifecycles` (cm_id lifecycles
//! of the concurrency stress, default 0: skipped) and `stress_seed` (replay
//! a printed seed).

use kernel::prelude::*;

#[path = "../../../../rust/rdma/bindings.rs"]
mod bindings;
mod kunit;

module! {
    type: IwCmKunit,
    name: "iw_cm_kunit",
    authors: ["The Rust iw_cm authors"],
    description: "KUnit tests of the Rust iw_cm (fake provider, fake ULPs)",
    license: "Dual BSD/GPL",
}

struct IwCmKunit;

impl kernel::Module for IwCmKunit {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // The suite is registered through the module's .kunit_test_suites
        // section and run by KUnit at load time.
        Ok(Self)
    }
}

/// iw_cm.ko's test-only interface (its kunit_iface.rs).
pub(crate) mod iface {
    use crate::bindings;
    use core::ffi::c_void;

    // `iw_cm_id` holds bindgen's opaque `its_array`: only pointers to it
    // cross, as with every exported iw_* function.
    #[allow(improper_ctypes)]
    extern "C" {
        fn iwcm_kunit_live_cm_ids() -> usize;
        fn iwcm_kunit_provider_faults() -> usize;
        fn iwcm_kunit_settled(cm_id: *mut bindings::iw_cm_id) -> bool;
        fn iwcm_kunit_expect_faults(connect_op: *const c_void, quiet: bool);
        fn iwcm_kunit_table_line(cm_id: *mut bindings::iw_cm_id, buf: *mut u8, len: usize)
            -> isize;
        fn iwcm_kunit_table_read(
            r: *mut bindings::iwcm_table_read,
            pos: *mut i64,
            ids: *mut u32,
            cap: usize,
            count: *mut usize,
        ) -> usize;
        fn iwcm_kunit_running_ids(ids: *mut u32, cap: usize) -> usize;
        fn iwcm_kunit_event_slots(id: u32) -> isize;
        fn iwcm_kunit_queued_children_slots(
            cm_id: *mut bindings::iw_cm_id,
            slots: *mut usize,
            cap: usize,
        ) -> usize;
        fn iwcm_kunit_ids_reserved(
            from: u32,
            first: *mut u32,
            last: *mut u32,
            keeper: *mut u32,
            leaf_shift: *mut u32,
        ) -> usize;
    }

    /// Live cm_ids of iw_cm.ko, on every device (the suite runs in a boot
    /// of its own, where nothing else creates cm_ids).
    pub(crate) fn live() -> usize {
        // SAFETY: no arguments; any context.
        unsafe { iwcm_kunit_live_cm_ids() }
    }

    /// Provider faults iw_cm.ko counted since it was loaded.
    pub(crate) fn provider_faults() -> usize {
        // SAFETY: no arguments; any context.
        unsafe { iwcm_kunit_provider_faults() }
    }

    /// Whether `cm_id` has no provider event queued or being delivered.
    ///
    /// # Safety
    ///
    /// `cm_id` is a live cm_id of iw_cm.ko the caller holds a reference on.
    pub(crate) unsafe fn settled(cm_id: *mut bindings::iw_cm_id) -> bool {
        // SAFETY: guaranteed by the caller.
        unsafe { iwcm_kunit_settled(cm_id) }
    }

    /// The debugfs table line of `cm_id` into `buf`: its length, or
    /// `None` when it does not fit.
    ///
    /// # Safety
    ///
    /// `cm_id` is a live cm_id of iw_cm.ko the caller holds a reference on.
    pub(crate) unsafe fn table_line(
        cm_id: *mut bindings::iw_cm_id,
        buf: &mut [u8],
    ) -> Option<usize> {
        // SAFETY: the caller's guarantee; `buf` is writable for its length.
        let n = unsafe { iwcm_kunit_table_line(cm_id, buf.as_mut_ptr(), buf.len()) };
        usize::try_from(n).ok()
    }

    /// A reader of debugfs `iw_cm/cm_ids` through iw_cm.ko's seq_file
    /// iterator, one read() at a time as the seq_file core calls it.
    #[derive(Default)]
    pub(crate) struct TableRead {
        r: bindings::iwcm_table_read,
        pos: i64,
        /// The count line's number, once it was read.
        pub(crate) count: usize,
    }

    impl TableRead {
        /// One read(): the count line if it comes next, then up to
        /// `ids.len()` rows, their cm_id numbers into `ids`; how many.
        pub(crate) fn read(&mut self, ids: &mut [u32]) -> usize {
            // SAFETY: every pointer is to a field or buffer of ours, valid
            // and ours alone for the call; `ids` holds `ids.len()` numbers.
            unsafe {
                iwcm_kunit_table_read(
                    &mut self.r,
                    &mut self.pos,
                    ids.as_mut_ptr(),
                    ids.len(),
                    &mut self.count,
                )
            }
        }
    }

    /// The numbers of the cm_ids in the stuck-handler watch's set, up to
    /// `ids.len()` into `ids`; how many there are.
    pub(crate) fn running_ids(ids: &mut [u32]) -> usize {
        // SAFETY: `ids` is writable for its length.
        unsafe { iwcm_kunit_running_ids(ids.as_mut_ptr(), ids.len()) }
    }

    /// The number of event slots of the cm_id numbered `id`, `None` when
    /// there is no such cm_id.
    pub(crate) fn event_slots(id: u32) -> Option<usize> {
        // SAFETY: no pointers; any context.
        usize::try_from(unsafe { iwcm_kunit_event_slots(id) }).ok()
    }

    /// The event slots of the children of the CONNECT_REQUESTs queued on
    /// `cm_id`, up to `slots.len()` into `slots`; how many are queued.
    ///
    /// # Safety
    ///
    /// `cm_id` is a live cm_id of iw_cm.ko the caller holds a reference on.
    pub(crate) unsafe fn queued_children_slots(
        cm_id: *mut bindings::iw_cm_id,
        slots: &mut [usize],
    ) -> usize {
        // SAFETY: the caller's guarantee; `slots` is writable for its
        // length.
        unsafe { iwcm_kunit_queued_children_slots(cm_id, slots.as_mut_ptr(), slots.len()) }
    }

    /// The numbers reserved in the table with no cm_id at them (a
    /// creation in progress, or the number kept to keep its leaf).
    pub(crate) struct Reserved {
        /// How many.
        pub(crate) count: usize,
        /// The lowest (0: none).
        pub(crate) first: u32,
        /// The highest (0: none).
        pub(crate) last: u32,
        /// The number kept to keep its leaf, wherever it is (0: none).
        pub(crate) keeper: u32,
        /// The bits of a number that index within one leaf of the table.
        pub(crate) leaf_shift: u32,
    }

    /// What the table holds reserved with no cm_id now, at numbers from
    /// `from` on.  Walks the table with its lock held.
    pub(crate) fn ids_reserved(from: u32) -> Reserved {
        let (mut first, mut last, mut keeper, mut leaf_shift) = (0, 0, 0, 0);
        // SAFETY: the pointers are to locals, valid for the call.
        let count = unsafe {
            iwcm_kunit_ids_reserved(from, &mut first, &mut last, &mut keeper, &mut leaf_shift)
        };
        Reserved {
            count,
            first,
            last,
            keeper,
            leaf_shift,
        }
    }

    /// Faults of devices whose `iw_connect` op is `connect_op` are
    /// expected (null: none are).
    pub(crate) fn expect_faults(connect_op: *const c_void, quiet: bool) {
        // SAFETY: the op is only compared, never called; any context.
        unsafe { iwcm_kunit_expect_faults(connect_op, quiet) }
    }
}
