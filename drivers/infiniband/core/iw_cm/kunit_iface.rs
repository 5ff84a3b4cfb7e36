// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The test-only interface of this module, for its KUnit suite in
//! iw_cm_kunit.ko (kunit.rs).  Built only with `CONFIG_KUNIT`; exported by
//! iw_cm_exports.c with `EXPORT_SYMBOL_IF_KUNIT` into the
//! `EXPORTED_FOR_KUNIT_TESTING` namespace, as in-tree code under test does.
//! Nothing here runs unless the test module calls it.
//!
//! The suite reaches the code under test through the nine exported
//! functions of include/rdma/iw_cm.h and these eight.  (Pure functions
//! are tested in place instead, by suites of this module: the
//! `#[kunit_tests]` at the end of cm_id/portmap.rs and cm_id/table.rs.)

use crate::bindings;
use crate::cm_id::{CmId, LIVE, PROVIDER_FAULTS};
use core::ffi::c_void;

/// Live cm_ids of this module, on every device.  Any context.
#[no_mangle]
pub extern "C" fn iwcm_kunit_live_cm_ids() -> usize {
    LIVE.load(kernel::sync::atomic::Relaxed)
}

/// Provider faults counted since the module was loaded.  Any context.
#[no_mangle]
pub extern "C" fn iwcm_kunit_provider_faults() -> usize {
    PROVIDER_FAULTS.load(kernel::sync::atomic::Relaxed)
}

/// Whether `cm_id` has no provider event queued or being delivered.
/// Takes the cm_id's lock (interrupts off); does not sleep.
///
/// # Safety
///
/// `cm_id` is a live cm_id of this module on which the caller holds a
/// reference.
#[no_mangle]
pub unsafe extern "C" fn iwcm_kunit_settled(cm_id: *mut bindings::iw_cm_id) -> bool {
    // SAFETY: guaranteed by the caller.
    unsafe { CmId::settled(cm_id) }
}

/// Provider faults on every device whose `iw_connect` op is `connect_op`
/// (the test's fake provider) are expected from now on: counted, and
/// logged at info level (`quiet`: not at all) instead of warned about; a
/// null `connect_op` ends that.  Faults on every other device still warn.
/// Any context.
#[no_mangle]
pub extern "C" fn iwcm_kunit_expect_faults(connect_op: *const c_void, quiet: bool) {
    crate::cm_id::expect_faults(connect_op as usize, quiet);
}

/// Writes the debugfs table line of `cm_id` into `buf` (`len` bytes, NUL
/// terminated); returns its length, or -ENOSPC when it does not fit.  Takes
/// the cm_id's lock (interrupts off); does not sleep.
///
/// # Safety
///
/// `cm_id` is a live cm_id of this module on which the caller holds a
/// reference; `buf` is writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn iwcm_kunit_table_line(
    cm_id: *mut bindings::iw_cm_id,
    buf: *mut u8,
    len: usize,
) -> isize {
    if buf.is_null() || len == 0 {
        return kernel::error::code::ENOSPC.to_errno() as isize;
    }
    // SAFETY: `buf` is writable for `len` bytes (caller).
    let out = unsafe { core::slice::from_raw_parts_mut(buf, len) };
    let mut w = LineBuf {
        out,
        n: 0,
        full: false,
    };
    // SAFETY: guaranteed by the caller.
    let r = unsafe { crate::cm_id::table::write_line_of(cm_id, &mut w) };
    if r.is_err() || w.full {
        return kernel::error::code::ENOSPC.to_errno() as isize;
    }
    w.out[w.n] = 0;
    w.n as isize
}

/// A `fmt::Write` into a byte buffer that keeps room for a NUL.
struct LineBuf<'a> {
    out: &'a mut [u8],
    n: usize,
    full: bool,
}

impl core::fmt::Write for LineBuf<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        if self.n + s.len() >= self.out.len() {
            self.full = true;
            return Err(core::fmt::Error);
        }
        self.out[self.n..self.n + s.len()].copy_from_slice(s.as_bytes());
        self.n += s.len();
        Ok(())
    }
}

/// One read() of debugfs `iw_cm/cm_ids` as the seq_file core makes it,
/// through the same iterator: from position `*pos` of the read `r`, the
/// count line (its count into `*count`) and up to `cap` rows (their cm_id
/// numbers into `ids`), then `stop`; `*pos` is left at the first line not
/// taken, where the next call goes on.  Returns the number of rows.
/// Process context, may sleep.
///
/// # Safety
///
/// `r`, `pos` and `count` are valid and the caller's alone for the call;
/// `ids` is writable for `cap` numbers.
#[no_mangle]
pub unsafe extern "C" fn iwcm_kunit_table_read(
    r: *mut bindings::iwcm_table_read,
    pos: *mut i64,
    ids: *mut u32,
    cap: usize,
    count: *mut usize,
) -> usize {
    use crate::cm_id::table::{seq_next, seq_start, Line};
    // SAFETY: the caller's guarantee.
    let (r, pos, ids, count) = unsafe {
        (
            &mut *r,
            &mut *pos,
            core::slice::from_raw_parts_mut(ids, cap),
            &mut *count,
        )
    };
    let mut n = 0;
    // As the seq_file core drives it (an allocation failure ends it).
    let mut next = seq_start(r, pos).ok().flatten();
    while let Some(line) = next {
        match &*line {
            Line::Head(c) => *count = *c,
            Line::Row(_) if n == cap => break,
            Line::Row(row) => {
                ids[n] = row.id;
                n += 1;
            }
        }
        next = seq_next(r, line, pos);
    }
    n
}

/// The numbers of the cm_ids in the stuck-handler watch's set (a delivery
/// in a ULP handler), as its scan visits them: up to `cap` into `ids`;
/// returns how many there are.  Any context.
///
/// # Safety
///
/// `ids` is writable for `cap` numbers.
#[no_mangle]
pub unsafe extern "C" fn iwcm_kunit_running_ids(ids: *mut u32, cap: usize) -> usize {
    // SAFETY: the caller's guarantee.
    let ids = unsafe { core::slice::from_raw_parts_mut(ids, cap) };
    crate::cm_id::table::running_ids(ids)
}

/// The number of event slots of the cm_id numbered `id` (queued or not),
/// or -1 when there is none.  Takes the table's lock and the cm_id's; any
/// context.
#[no_mangle]
pub extern "C" fn iwcm_kunit_event_slots(id: u32) -> isize {
    crate::cm_id::table::event_slots(id).map_or(-1, |n| n as isize)
}

/// The event slots of the children of the CONNECT_REQUESTs queued on
/// `cm_id` (a listener), in queue order: up to `cap` (at most 8) into
/// `slots`; returns how many requests are queued.  Takes the cm_id's lock
/// and its children's; any context.
///
/// # Safety
///
/// `cm_id` is a live cm_id of this module on which the caller holds a
/// reference; `slots` is writable for `cap` numbers.
#[no_mangle]
pub unsafe extern "C" fn iwcm_kunit_queued_children_slots(
    cm_id: *mut bindings::iw_cm_id,
    slots: *mut usize,
    cap: usize,
) -> usize {
    // SAFETY: the caller's guarantee.
    let slots = unsafe { core::slice::from_raw_parts_mut(slots, cap) };
    // SAFETY: the caller's guarantee.
    unsafe { crate::cm_id::table::queued_children_slots(cm_id, slots) }
}
