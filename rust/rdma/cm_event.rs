// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! `struct iw_cm_event` (include/rdma/iw_cm.h) as iw_cm keeps and delivers
//! it: an owned copy of a provider's event, whose fields iw_cm replaces
//! with the checked values before the ULP's handler sees it.  Every read
//! and write of an event's fields by this project is here, as those of
//! `struct iw_cm_id` are in [`shared_cm_id`](super::shared_cm_id).

use crate::bindings;
use crate::rdma::iwpm::SockAddr;
use core::ffi::c_void;
use kernel::alloc::KVec;

/// The ULP's handler type, `iw_cm_handler` (include/rdma/iw_cm.h).
pub(crate) type CmHandler = bindings::iw_cm_handler;

/// The C `struct iw_cm_event`, for the provider's upcall and the ULP's
/// handler, which pass it by pointer.
pub(crate) type RawCmEvent = bindings::iw_cm_event;

/// The event types of `enum iw_cm_event_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventType {
    /// IW_CM_EVENT_CONNECT_REQUEST, on a listener.
    ConnectRequest,
    /// IW_CM_EVENT_CONNECT_REPLY, on a connecting cm_id.
    ConnectReply,
    /// IW_CM_EVENT_ESTABLISHED, on an accepted cm_id.
    Established,
    /// IW_CM_EVENT_DISCONNECT.
    Disconnect,
    /// IW_CM_EVENT_CLOSE.
    Close,
}

impl EventType {
    /// The type of a raw `event` value, or `None` for a value that is not
    /// one of the five (a provider fault).
    pub(crate) fn from_raw(event: bindings::iw_cm_event_type) -> Option<Self> {
        Some(match event {
            bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REQUEST => Self::ConnectRequest,
            bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REPLY => Self::ConnectReply,
            bindings::iw_cm_event_type_IW_CM_EVENT_ESTABLISHED => Self::Established,
            bindings::iw_cm_event_type_IW_CM_EVENT_DISCONNECT => Self::Disconnect,
            bindings::iw_cm_event_type_IW_CM_EVENT_CLOSE => Self::Close,
            _ => return None,
        })
    }
}

/// An owned copy of a provider's `struct iw_cm_event`, with its own copy of
/// the private data.
///
/// # Invariants
///
/// `raw.private_data` is null with `raw.private_data_len == 0`, or points
/// at `pdata`'s heap buffer (which does not move with the event and is
/// never written while it is set there), `raw.private_data_len` bytes of
/// it.  It never points at the provider's buffer, which may be freed as
/// soon as the upcall returns.
pub(crate) struct CmEvent {
    raw: RawCmEvent,
    pdata: KVec<u8>,
}

// SAFETY: `private_data` points into `pdata`, which moves along with the
// event, or is null (type invariant), and `provider_data` is an opaque
// token of the provider that iw_cm only stores; both may move between
// threads.
unsafe impl Send for CmEvent {}

impl CmEvent {
    /// Copies the provider's event, without its private data (the caller
    /// checks and copies that itself, then calls [`Self::set_private_data`]).
    pub(crate) fn copy_of(src: &RawCmEvent) -> Self {
        let mut raw = *src;
        // INVARIANT: no private data yet.
        raw.private_data = core::ptr::null_mut();
        raw.private_data_len = 0;
        Self {
            raw,
            pdata: KVec::new(),
        }
    }

    /// A CLOSE with `status` (0 or a negative errno) that no provider sent:
    /// iw_cm's own, when a provider's never came.  Every other field zero.
    pub(crate) fn synthetic_close(status: i32) -> Self {
        // INVARIANT: no private data.
        Self {
            raw: RawCmEvent {
                event: bindings::iw_cm_event_type_IW_CM_EVENT_CLOSE,
                status,
                ..Default::default()
            },
            pdata: KVec::new(),
        }
    }

    /// The raw event type (for messages about an unknown one).
    pub(crate) fn raw_type(&self) -> bindings::iw_cm_event_type {
        self.raw.event
    }

    /// The event type, or `None` for an unknown one.
    pub(crate) fn event_type(&self) -> Option<EventType> {
        EventType::from_raw(self.raw.event)
    }

    /// `status`: 0, or the provider's negative errno.
    pub(crate) fn status(&self) -> i32 {
        self.raw.status
    }

    /// Replaces `status`, `ird` and `ord` with the checked values.
    pub(crate) fn set_checked(&mut self, status: i32, ird: u8, ord: u8) {
        self.raw.status = status;
        self.raw.ird = ird;
        self.raw.ord = ord;
    }

    /// Makes `pdata` (at most 255 bytes are given to the ULP, the `u8`
    /// length) the event's private data, kept with the event; an empty
    /// `pdata` means none.
    pub(crate) fn set_private_data(&mut self, mut pdata: KVec<u8>) {
        // INVARIANT: the pointer is to `pdata`'s heap buffer, which the
        // event keeps (moving the `KVec` does not move it) and never writes.
        if pdata.is_empty() {
            self.raw.private_data = core::ptr::null_mut();
            self.raw.private_data_len = 0;
        } else {
            self.raw.private_data_len = pdata.len().min(u8::MAX as usize) as u8;
            self.raw.private_data = pdata.as_mut_ptr().cast();
        }
        self.pdata = pdata;
    }

    /// `local_addr` and `remote_addr`, as the provider reported them (or as
    /// iw_cm replaced them).
    pub(crate) fn addrs(&self) -> (SockAddr, SockAddr) {
        (self.raw.local_addr, self.raw.remote_addr)
    }

    /// Replaces `local_addr` and `remote_addr` (what the ULP sees).
    pub(crate) fn set_addrs(&mut self, local: SockAddr, remote: SockAddr) {
        self.raw.local_addr = local;
        self.raw.remote_addr = remote;
    }

    /// `provider_data`: the provider's connection object of a
    /// CONNECT_REQUEST, an opaque token iw_cm hands back through the child
    /// cm_id.
    pub(crate) fn provider_data(&self) -> *mut c_void {
        self.raw.provider_data
    }

    /// The event for the ULP's handler, which takes it by pointer; valid
    /// while `self` is borrowed.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut RawCmEvent {
        &mut self.raw
    }
}
