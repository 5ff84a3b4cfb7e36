// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! What this module's C side (iw_cm_exports.c, declared in iw_cm_c.h)
//! calls in Rust, other than the nine exports of the crate root: the
//! seq_file callbacks of debugfs `iw_cm/cm_ids`.  Raw pointers become typed
//! here, once; the table code behind them (cm_id/table.rs) is safe.

use crate::bindings;
use crate::cm_id::table::{self, Line, SeqLine};
use core::ffi::c_void;
use kernel::prelude::*;
use kernel::seq_file::{seq_print, SeqFile};

/// Hands a line to the seq_file core (NULL for none): it comes back to
/// [`iwcm_table_next`], [`iwcm_table_stop`] or [`iwcm_table_show`].
fn line_to_c(line: Option<SeqLine>) -> *mut c_void {
    line.map_or(core::ptr::null_mut(), |l| KBox::into_raw(l).cast())
}

/// seq_file `start` of `iw_cm/cm_ids` ([`table::seq_start`]): a line
/// allocated for the read, or NULL at the end; ERR_PTR(-ENOMEM) without
/// memory.  Process context, may sleep.
///
/// # Safety
///
/// `r` is the seq_file's private data of this read and `pos` its
/// position, both valid and used by no one else for the call.
#[no_mangle]
pub(crate) unsafe extern "C" fn iwcm_table_start(
    r: *mut bindings::iwcm_table_read,
    pos: *mut i64,
) -> *mut c_void {
    // SAFETY: valid and ours for the call (the caller's guarantee).
    let (r, pos) = unsafe { (&mut *r, &mut *pos) };
    match table::seq_start(r, pos) {
        Ok(line) => line_to_c(line),
        Err(e) => e.to_ptr(),
    }
}

/// seq_file `next` ([`table::seq_next`]): the next line in place of `v`,
/// or NULL (`v` freed) at the end.  Process context.
///
/// # Safety
///
/// As for [`iwcm_table_start`]; `v` is a line [`iwcm_table_start`] or this
/// function returned for this read, not yet freed, which this call
/// consumes.
#[no_mangle]
pub(crate) unsafe extern "C" fn iwcm_table_next(
    r: *mut bindings::iwcm_table_read,
    v: *mut c_void,
    pos: *mut i64,
) -> *mut c_void {
    // SAFETY: `v` came from `KBox::into_raw` in `line_to_c` and is handed
    // back to us (the caller's guarantee).
    let line = unsafe { KBox::from_raw(v.cast::<Line>()) };
    // SAFETY: valid and ours for the call (the caller's guarantee).
    let (r, pos) = unsafe { (&mut *r, &mut *pos) };
    line_to_c(table::seq_next(r, line, pos))
}

/// seq_file `stop`: frees the line left in `v`.
///
/// # Safety
///
/// `v` is a line [`iwcm_table_start`] or [`iwcm_table_next`] returned,
/// not yet freed, which this call consumes.
#[no_mangle]
pub(crate) unsafe extern "C" fn iwcm_table_stop(v: *mut c_void) {
    // SAFETY: the caller's guarantee.
    drop(unsafe { KBox::from_raw(v.cast::<Line>()) });
}

/// seq_file `show`: writes the line in `v`.  Returns 0.
///
/// # Safety
///
/// `m` is the seq_file being read, used by no other thread for the call;
/// `v` is a line the iterator returned for it, not yet freed.
#[no_mangle]
pub(crate) unsafe extern "C" fn iwcm_table_show(
    m: *mut kernel::bindings::seq_file,
    v: *mut c_void,
) -> i32 {
    // SAFETY: the caller's guarantee.
    let f = unsafe { SeqFile::from_raw(m) };
    // SAFETY: the caller's guarantee.
    let line = unsafe { &*v.cast::<Line>() };
    seq_print!(f, "{}\n", line);
    0
}
