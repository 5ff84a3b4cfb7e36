// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! `struct iw_cm_event` (include/rdma/iw_cm.h) as iw_cm keeps and delivers
//! it: an owned copy of a provider's event, whose fields iw_cm replaces
//! with the checked values before the ULP's handler sees it.  Every read
//! and write of an event's fields by this project is here, as those of
//! `struct iw_cm_id` are in [`shared_cm_id`](super::shared_cm_id).

use crate::bindings;
use crate::rdma::iwpm::SockAddr;
use core::ffi::c_void;

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

/// An owned copy of a provider's `struct iw_cm_event`.
///
/// # Invariants
///
/// `private_data` is null with `private_data_len == 0`, or was set by
/// [`CmEvent::set_private_data`] (whose caller keeps the buffer valid).
/// It never points at the provider's buffer, which may be freed as soon as
/// the upcall returns.
#[repr(transparent)]
pub(crate) struct CmEvent(RawCmEvent);

// SAFETY: `private_data` points into a buffer its owner moves along with the
// event, or is null (type invariant), and `provider_data` is an opaque token
// of the provider that iw_cm only stores; both may move between threads.
unsafe impl Send for CmEvent {}

impl CmEvent {
    /// Copies the provider's event, without its private data (the caller
    /// checks and copies that itself, then calls [`Self::set_private_data`]).
    pub(crate) fn copy_of(src: &RawCmEvent) -> Self {
        let mut raw = *src;
        // INVARIANT: no private data yet.
        raw.private_data = core::ptr::null_mut();
        raw.private_data_len = 0;
        Self(raw)
    }

    /// The raw event type (for messages about an unknown one).
    pub(crate) fn raw_type(&self) -> bindings::iw_cm_event_type {
        self.0.event
    }

    /// The event type, or `None` for an unknown one.
    pub(crate) fn event_type(&self) -> Option<EventType> {
        EventType::from_raw(self.0.event)
    }

    /// `status`: 0, or the provider's negative errno.
    pub(crate) fn status(&self) -> i32 {
        self.0.status
    }

    /// Replaces `status`, `ird` and `ord` with the checked values.
    pub(crate) fn set_checked(&mut self, status: i32, ird: u8, ord: u8) {
        self.0.status = status;
        self.0.ird = ird;
        self.0.ord = ord;
    }

    /// Points the event's private data at `buf` (at most 255 bytes, the
    /// `u8` length; an empty `buf` means none).
    ///
    /// # Safety
    ///
    /// `buf` stays valid, and is not moved or written, for as long as the
    /// event may be handed to a ULP.
    pub(crate) unsafe fn set_private_data(&mut self, buf: &mut [u8]) {
        // INVARIANT: `buf` outlives the event's use (caller).
        if buf.is_empty() {
            self.0.private_data = core::ptr::null_mut();
            self.0.private_data_len = 0;
        } else {
            self.0.private_data_len = buf.len().min(u8::MAX as usize) as u8;
            self.0.private_data = buf.as_mut_ptr().cast();
        }
    }

    /// `local_addr` and `remote_addr`, as the provider reported them (or as
    /// iw_cm replaced them).
    pub(crate) fn addrs(&self) -> (SockAddr, SockAddr) {
        (self.0.local_addr, self.0.remote_addr)
    }

    /// Replaces `local_addr` and `remote_addr` (what the ULP sees).
    pub(crate) fn set_addrs(&mut self, local: SockAddr, remote: SockAddr) {
        self.0.local_addr = local;
        self.0.remote_addr = remote;
    }

    /// `provider_data`: the provider's connection object of a
    /// CONNECT_REQUEST, an opaque token iw_cm hands back through the child
    /// cm_id.
    pub(crate) fn provider_data(&self) -> *mut c_void {
        self.0.provider_data
    }

    /// The event for the ULP's handler, which takes it by pointer; valid
    /// while `self` is borrowed.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut RawCmEvent {
        &mut self.0
    }
}
