// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! What C calls in Rust, other than the nine exports of the crate root:
//! the provider's upcalls of every cm_id (`event_handler`, `add_ref`,
//! `rem_ref`), and the seq_file callbacks of debugfs `iw_cm/cm_ids`
//! (iw_cm_exports.c, declared in iw_cm_c.h).  Raw pointers become typed
//! here, once, as binder's rust_binder_main.rs does: a C `iw_cm_id`
//! pointer becomes a [`CmId`] ([`borrow`], also for the crate root's
//! exports and the KUnit interface), and the code behind (cm_id/upcall.rs,
//! cm_id/table.rs) is safe.

use crate::bindings;
use crate::cm_id::table::{self, Line, SeqLine};
use crate::cm_id::{upcall, CmId};
use crate::rdma::cm_event::RawCmEvent;
use crate::rdma::shared_cm_id::{Callbacks, RawCmId};
use core::ffi::c_void;
use kernel::prelude::*;
use kernel::seq_file::{seq_print, SeqFile};
use kernel::sync::{Arc, ArcBorrow};

/// The `CmId` whose `struct iw_cm_id` `raw` is.
///
/// # Safety
///
/// `raw` points to the `struct iw_cm_id` of a `CmId` (every `iw_cm_id`
/// this module hands out is one: [`CmId`]'s invariants); it need not be
/// live for the arithmetic.
unsafe fn cm_id_ptr(raw: *mut RawCmId) -> *const CmId {
    // SAFETY: the caller's guarantee is `container_of_raw`'s.
    unsafe { CmId::container_of_raw(raw) }
}

/// Borrows the cm_id behind a C pointer.
///
/// # Safety
///
/// `raw` was handed out by this module and a reference on its cm_id is
/// held for `'a` (the ULP's or the provider's).
pub(crate) unsafe fn borrow<'a>(raw: *mut RawCmId) -> ArcBorrow<'a, CmId> {
    // SAFETY: by `CmId`'s invariants `raw` is inside an `Arc<CmId>`
    // allocation, which the caller keeps alive for `'a`.
    unsafe { ArcBorrow::from_raw(cm_id_ptr(raw)) }
}

/// [`borrow`] for the provider's upcalls, which check for null
/// (`None`: a provider fault, reported by `cm_id/upcall.rs`).
///
/// # Safety
///
/// `raw` is null, or as for [`borrow`].
unsafe fn borrow_upcall<'a>(raw: *mut RawCmId) -> Option<ArcBorrow<'a, CmId>> {
    // SAFETY: not null here: the caller's guarantee.
    (!raw.is_null()).then(|| unsafe { borrow(raw) })
}

/// The provider callbacks installed in every cm_id: the three below.
pub(crate) fn provider_callbacks() -> Callbacks {
    Callbacks {
        event_handler: Some(cm_event_handler),
        add_ref: Some(cm_add_ref),
        rem_ref: Some(cm_rem_ref),
    }
}

/// `cm_id->event_handler`: the provider's event upcall
/// ([`upcall::event_upcall`]).  0, or the negative errno the provider
/// acts on.  Any context but hard interrupt; never sleeps.
///
/// # Safety
///
/// Called by the provider with a cm_id it holds a reference on and a valid
/// `struct iw_cm_event` (whose contents are checked), or with null.
unsafe extern "C" fn cm_event_handler(raw: *mut RawCmId, event: *mut RawCmEvent) -> i32 {
    // SAFETY: null, or a cm_id the provider holds a reference on through
    // the upcall (add_ref).
    let this = unsafe { borrow_upcall(raw) };
    // SAFETY: null, or an event valid for the duration of the upcall and
    // not written by the provider meanwhile.
    let src = unsafe { event.as_ref() };
    crate::errno(upcall::event_upcall(this, src))
}

/// `cm_id->add_ref`: the provider takes a reference ([`upcall::add_ref`]),
/// which it holds as its pointer until [`cm_rem_ref`].  Any context.
///
/// # Safety
///
/// `raw` is a live cm_id of this module (the caller holds a reference), or
/// null.
unsafe extern "C" fn cm_add_ref(raw: *mut RawCmId) {
    // SAFETY: null, or as the caller guarantees.
    let this = unsafe { borrow_upcall(raw) };
    if let Some(r) = upcall::add_ref(this) {
        // Given back by `cm_rem_ref`.
        let _ = Arc::into_raw(r);
    }
}

/// `cm_id->rem_ref`: the provider drops a reference taken with
/// [`cm_add_ref`] (which may free the cm_id); an unbalanced one is
/// ignored ([`upcall::rem_ref`]).  Any context.
///
/// # Safety
///
/// `raw` is a cm_id of this module on which the provider took a reference
/// with `add_ref` (checked as far as the count goes: an unbalanced call is
/// caught while another reference keeps the cm_id alive), or null.
unsafe extern "C" fn cm_rem_ref(raw: *mut RawCmId) {
    // SAFETY: null, or by the caller's contract the provider holds a
    // reference.
    let this = unsafe { borrow_upcall(raw) };
    if upcall::rem_ref(this) {
        // SAFETY: `raw` is a cm_id of this module (the caller's contract)
        // and the provider owned one reference on it, handed out by
        // `cm_add_ref` with `Arc::into_raw` (counted in `provider_refs`),
        // which it gives up now.
        drop(unsafe { Arc::from_raw(cm_id_ptr(raw)) });
    }
}

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
