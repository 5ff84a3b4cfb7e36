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
//! The methods that read or write a field another party may write are
//! `unsafe`: the caller states which rule above makes the access
//! race-free.  Fields are always accessed through the raw pointer, never
//! through a `&mut iw_cm_id`.

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
        let p = self.as_ptr();
        // SAFETY: `p` is valid (type invariant).  `context` is written only
        // at creation; `cm_handler` also by rdma_cm inside this cm_id's
        // CONNECT_REQUEST handler, which runs in this cm_id's delivery,
        // and a read here is in a later delivery of it (ordered after that
        // one by the cm_id's lock) or of a listener, whose handler rdma_cm
        // never rewrites.
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

    /// `local_addr` and `remote_addr`.
    ///
    /// # Safety
    ///
    /// No other party writes them concurrently (see the module's rules).
    pub(crate) unsafe fn addrs(&self) -> (SockAddr, SockAddr) {
        let p = self.as_ptr();
        // SAFETY: valid (type invariant); no concurrent writer (caller).
        unsafe { ((*p).local_addr, (*p).remote_addr) }
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

    /// Sets `local_addr` and `remote_addr`, with volatile writes: the
    /// table's [`SharedCmId::snapshot_addrs`] may read them meanwhile.
    ///
    /// # Safety
    ///
    /// The caller is the only party that may access them now, but for
    /// [`SharedCmId::snapshot_addrs`] (a cm_id in the table).
    pub(crate) unsafe fn set_addrs(&self, local: SockAddr, remote: SockAddr) {
        let p = self.as_ptr();
        // SAFETY: valid (type invariant); no other writer and no other
        // reader but `snapshot_addrs`, whose volatile reads of plain data
        // these volatile writes pair with (caller).
        unsafe {
            core::ptr::write_volatile(&raw mut (*p).local_addr, local);
            core::ptr::write_volatile(&raw mut (*p).remote_addr, remote);
        }
    }

    /// `m_local_addr` and `m_remote_addr`.
    ///
    /// # Safety
    ///
    /// No other party writes them concurrently.
    pub(crate) unsafe fn mapped_addrs(&self) -> (SockAddr, SockAddr) {
        let p = self.as_ptr();
        // SAFETY: valid (type invariant); no concurrent writer (caller).
        unsafe { ((*p).m_local_addr, (*p).m_remote_addr) }
    }

    /// Sets `m_local_addr` and `m_remote_addr`, with volatile writes: the
    /// table's [`SharedCmId::snapshot_addrs`] may read them meanwhile.
    ///
    /// # Safety
    ///
    /// The caller is the only party that may access them now, but for
    /// [`SharedCmId::snapshot_addrs`] (a cm_id in the table).
    pub(crate) unsafe fn set_mapped_addrs(&self, local: SockAddr, remote: SockAddr) {
        let p = self.as_ptr();
        // SAFETY: valid (type invariant); no other writer and no other
        // reader but `snapshot_addrs`, whose volatile reads of plain data
        // these volatile writes pair with (caller).
        unsafe {
            core::ptr::write_volatile(&raw mut (*p).m_local_addr, local);
            core::ptr::write_volatile(&raw mut (*p).m_remote_addr, remote);
        }
    }

    /// The `mapped` bit.
    ///
    /// # Safety
    ///
    /// No other party writes it concurrently.
    pub(crate) unsafe fn is_mapped(&self) -> bool {
        // SAFETY: valid (type invariant); no concurrent writer (caller).
        unsafe { bindings::iw_cm_id::mapped_raw(self.as_ptr()) }
    }

    /// Sets the `mapped` bit.
    ///
    /// # Safety
    ///
    /// The caller is the only party that may access the bitfield now.
    pub(crate) unsafe fn set_mapped(&self) {
        // SAFETY: valid (type invariant); exclusive (caller).
        unsafe { bindings::iw_cm_id::set_mapped_raw(self.as_ptr(), true) };
    }

    /// Sets `provider_data` (a child's connection request, for the
    /// provider's accept or reject).
    ///
    /// # Safety
    ///
    /// The cm_id is not yet visible to the ULP, the provider or the
    /// table's readers: no one else can access it.
    pub(crate) unsafe fn set_provider_data(&self, data: *mut c_void) {
        // SAFETY: valid (type invariant); exclusive (caller).
        unsafe { (*self.as_ptr()).provider_data = data };
    }

    /// Clears `cm_handler` and `context`: a cm_id iw_cm uses on its own (to
    /// reject a request no ULP will see) calls no ULP.
    ///
    /// # Safety
    ///
    /// The cm_id is not yet visible to the ULP, the provider or the
    /// table's readers (which read `cm_handler`): no one else can access
    /// it.
    pub(crate) unsafe fn clear_handler(&self) {
        let p = self.as_ptr();
        // SAFETY: valid (type invariant); exclusive (caller).
        unsafe {
            (*p).cm_handler = None;
            (*p).context = core::ptr::null_mut();
        }
    }
}
