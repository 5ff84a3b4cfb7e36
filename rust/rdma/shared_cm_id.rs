// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The C-visible `struct iw_cm_id` (include/rdma/iw_cm.h), shared by the
//! ULP, the provider and iw_cm, behind one type: every read and write of
//! its fields by this project is here.
//!
//! Who writes what (iwcm.c's unwritten protocol, kept here):
//! - `context`, `device` and the provider callbacks are set at creation
//!   and never change; so is `cm_handler`, except that rdma_cm rewrites a
//!   child's inside the child's own CONNECT_REQUEST handler
//!   (cma.c `iw_conn_req_handler`), i.e. in that cm_id's delivery;
//! - `local_addr`/`remote_addr` are written by the ULP before listen or
//!   connect, and by iw_cm for a child it creates or while it delivers a
//!   CONNECT_REPLY (the only thread that touches a connecting id's
//!   addresses then);
//! - `m_local_addr`/`m_remote_addr` and the `mapped` bit are written by
//!   iw_cm in listen/connect before the provider sees the id, and when it
//!   delivers a CONNECT_REPLY;
//! - `provider_data` is written by iw_cm for a new child before anyone
//!   else sees it, and read by the provider.
//!
//! The fields another party may write are read and written through a
//! [`Fields`] (addresses, `mapped`) or an [`Unseen`] (a child no one else
//! can reach: also `provider_data` and the handler): whoever makes one
//! states which rule above makes the access race-free.  Fields are always
//! accessed through the raw pointer, never through a `&mut iw_cm_id`.

use crate::bindings;
use crate::rdma::cm_event::{CmEvent, CmHandler};
use crate::rdma::iwpm::SockAddr;
use core::ffi::c_void;
use kernel::types::Opaque;

/// The C `struct iw_cm_id`, for the entry points that get it by pointer
/// (the ULP's calls, the provider's upcalls) and turn it into a cm_id.
pub(crate) type RawCmId = bindings::iw_cm_id;

/// A `struct iw_cm_id` embedded in a cm_id of this module, at a stable
/// address (the ULP and the provider only ever see that pointer).
///
/// # Invariants
///
/// The struct was fully initialised by [`SharedCmId::new`]: its `device`
/// and iw_cm's provider callbacks are set for good.
#[repr(transparent)]
pub(crate) struct SharedCmId(Opaque<bindings::iw_cm_id>);

/// The provider callbacks iw_cm installs in every cm_id.
pub(crate) struct Callbacks {
    pub(crate) event_handler: bindings::iw_event_handler,
    pub(crate) add_ref: Option<unsafe extern "C" fn(*mut bindings::iw_cm_id)>,
    pub(crate) rem_ref: Option<unsafe extern "C" fn(*mut bindings::iw_cm_id)>,
}

impl SharedCmId {
    /// A cm_id of `device` for the ULP's `cm_handler` and `context`.
    pub(crate) fn new(
        device: *mut bindings::ib_device,
        cm_handler: CmHandler,
        context: *mut c_void,
        cb: Callbacks,
    ) -> Self {
        Self(Opaque::new(bindings::iw_cm_id {
            cm_handler,
            context,
            device,
            event_handler: cb.event_handler,
            add_ref: cb.add_ref,
            rem_ref: cb.rem_ref,
            ..Default::default()
        }))
    }

    /// The pointer the ULP and the provider get.
    pub(crate) fn as_ptr(&self) -> *mut bindings::iw_cm_id {
        self.0.get()
    }

    /// The `struct ib_device *` it was made for (set at creation, never
    /// changed); for a comparison, not dereferenced here.  Any context.
    pub(crate) fn device(&self) -> *mut bindings::ib_device {
        // SAFETY: `as_ptr()` is valid (type invariant); `device` is written
        // only at creation.
        unsafe { (*self.as_ptr()).device }
    }

    /// The ULP's handler and context, for a call in this cm_id's delivery
    /// or for a new child of it (a listener's handler is never rewritten).
    pub(crate) fn handler_context(&self) -> (CmHandler, *mut c_void) {
        // `context` is written only at creation; `cm_handler` also by
        // rdma_cm inside this cm_id's CONNECT_REQUEST handler (in its
        // delivery), and a read here is in a later delivery of it (ordered
        // by the cm_id's lock) or of a listener, never rewritten.
        let p = self.as_ptr();
        // SAFETY: `p` is valid (type invariant); no concurrent write (above).
        unsafe { ((*p).cm_handler, (*p).context) }
    }

    /// The address of the handler set now (0: none), for a report: a
    /// volatile read, as rdma_cm may be changing it (see
    /// [`SharedCmId::handler_context`]).  Any context.
    pub(crate) fn handler_now(&self) -> usize {
        let p = self.as_ptr();
        // SAFETY: `p` is valid (type invariant); a volatile read of a
        // function pointer field that another thread may be storing.
        let h = unsafe { core::ptr::read_volatile(&raw const (*p).cm_handler) };
        h.map_or(0, |f| f as usize)
    }

    /// Calls the ULP's handler (`cm_handler`, set at creation) with this
    /// cm_id and `ev`; its return value (non-zero: the ULP wants the cm_id
    /// destroyed).  0 when the cm_id has no handler (a cm_id iw_cm made for
    /// itself).  May sleep: the handler runs in process context, and may
    /// destroy this or other cm_ids (the caller keeps this one's memory
    /// alive for the call).
    pub(crate) fn call_handler(&self, ev: &mut CmEvent) -> i32 {
        let (handler, _) = self.handler_context();
        match handler {
            // SAFETY: the ULP's handler takes a live cm_id of its own and a
            // valid event: `self` is borrowed, so the cm_id's memory lives
            // through the call, and `ev` is a valid event borrowed for it.
            Some(h) => unsafe { h(self.as_ptr(), ev.as_mut_ptr()) },
            None => 0,
        }
    }

    /// Copies of `local_addr`, `remote_addr`, `m_local_addr` and
    /// `m_remote_addr`, for a report (debugfs `iw_cm/cm_ids`): volatile
    /// reads without ordering against their writers, so a copy taken while
    /// the ULP or iw_cm writes one may be torn (it shows as an odd address;
    /// nothing uses it as an address).  Any context.
    pub(crate) fn snapshot_addrs(&self) -> (SockAddr, SockAddr, SockAddr, SockAddr) {
        let p = self.as_ptr();
        // SAFETY: `p` is valid (type invariant); these are volatile reads of
        // plain data, for which any bit pattern is a valid value, so a race
        // with a writer yields at worst a mix of old and new bytes.
        unsafe {
            (
                core::ptr::read_volatile(&raw const (*p).local_addr),
                core::ptr::read_volatile(&raw const (*p).remote_addr),
                core::ptr::read_volatile(&raw const (*p).m_local_addr),
                core::ptr::read_volatile(&raw const (*p).m_remote_addr),
            )
        }
    }
}

/// The right to read and write a cm_id's addresses (`local_addr`,
/// `remote_addr`, `m_local_addr`, `m_remote_addr`) and its `mapped` bit,
/// held by the party that may access them now (the module's rules):
/// the ULP's own listen or connect call before the provider has the
/// cm_id, iw_cm delivering a CONNECT_REPLY, a listening cm_id's reader,
/// iw_cm setting up a child no one else can reach ([`Unseen`]).
///
/// # Invariants
///
/// While it exists, no one else writes those fields, and no one else
/// reads them but [`SharedCmId::snapshot_addrs`] (volatile reads, which the
/// writes here pair with).
pub(crate) struct Fields<'a>(&'a SharedCmId);

impl<'a> Fields<'a> {
    /// Claims the fields of `id` for `'a`.
    ///
    /// # Safety
    ///
    /// For `'a`, no one else writes them and no one else reads them but
    /// [`SharedCmId::snapshot_addrs`] (the caller says which of the
    /// module's rules makes it so).
    pub(crate) unsafe fn assume(id: &'a SharedCmId) -> Self {
        // INVARIANT: guaranteed by the caller.
        Self(id)
    }

    /// `local_addr` and `remote_addr`.
    pub(crate) fn addrs(&self) -> (SockAddr, SockAddr) {
        let p = self.0.as_ptr();
        // SAFETY: `p` is valid (`SharedCmId`'s invariant); no concurrent
        // writer (type invariant).
        unsafe { ((*p).local_addr, (*p).remote_addr) }
    }

    /// `m_local_addr` and `m_remote_addr`.
    pub(crate) fn mapped_addrs(&self) -> (SockAddr, SockAddr) {
        let p = self.0.as_ptr();
        // SAFETY: as in `addrs`.
        unsafe { ((*p).m_local_addr, (*p).m_remote_addr) }
    }

    /// The `mapped` bit.
    pub(crate) fn is_mapped(&self) -> bool {
        // SAFETY: as in `addrs`.
        unsafe { bindings::iw_cm_id::mapped_raw(self.0.as_ptr()) }
    }

    /// Sets `local_addr` and `remote_addr`.
    pub(crate) fn set_addrs(&mut self, local: SockAddr, remote: SockAddr) {
        let p = self.0.as_ptr();
        // SAFETY: `p` is valid; no other writer and no other reader but
        // `snapshot_addrs`, whose volatile reads of plain data these
        // volatile writes pair with (type invariant).
        unsafe {
            core::ptr::write_volatile(&raw mut (*p).local_addr, local);
            core::ptr::write_volatile(&raw mut (*p).remote_addr, remote);
        }
    }

    /// Sets `m_local_addr` and `m_remote_addr`.
    pub(crate) fn set_mapped_addrs(&mut self, local: SockAddr, remote: SockAddr) {
        let p = self.0.as_ptr();
        // SAFETY: as in `set_addrs`.
        unsafe {
            core::ptr::write_volatile(&raw mut (*p).m_local_addr, local);
            core::ptr::write_volatile(&raw mut (*p).m_remote_addr, remote);
        }
    }

    /// Sets the `mapped` bit.
    pub(crate) fn set_mapped(&mut self) {
        // SAFETY: valid; the bitfield has no other accessor now (type
        // invariant; `snapshot_addrs` does not read it).
        unsafe { bindings::iw_cm_id::set_mapped_raw(self.0.as_ptr(), true) };
    }
}

/// The right to write every field iw_cm writes of a cm_id that no one else
/// can reach yet: a CONNECT_REQUEST's child before its request is
/// delivered, which neither the ULP, nor the provider, nor a table reader
/// has seen.
///
/// # Invariants
///
/// While it exists, no one else accesses the cm_id's `struct iw_cm_id`.
pub(crate) struct Unseen<'a>(&'a SharedCmId);

impl<'a> Unseen<'a> {
    /// Claims `id`, which no one else can reach, for `'a`.
    ///
    /// # Safety
    ///
    /// For `'a`, no one else accesses `id`'s `struct iw_cm_id`.
    pub(crate) unsafe fn assume(id: &'a SharedCmId) -> Self {
        // INVARIANT: guaranteed by the caller.
        Self(id)
    }

    /// Its addresses and `mapped` bit.
    pub(crate) fn fields(&mut self) -> Fields<'_> {
        // INVARIANT: no one else accesses any field (type invariant).
        Fields(self.0)
    }

    /// Sets `provider_data` (the request, for the provider's accept or
    /// reject).
    pub(crate) fn set_provider_data(&mut self, data: *mut c_void) {
        // SAFETY: valid; exclusive (type invariant).
        unsafe { (*self.0.as_ptr()).provider_data = data };
    }

    /// Clears `cm_handler` and `context`: a cm_id iw_cm uses on its own (to
    /// reject a request no ULP will see) calls no ULP.
    pub(crate) fn clear_handler(&mut self) {
        let p = self.0.as_ptr();
        // SAFETY: valid; exclusive (type invariant).
        unsafe {
            (*p).cm_handler = None;
            (*p).context = core::ptr::null_mut();
        }
    }
}
