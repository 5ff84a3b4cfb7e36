// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! A cm_id's event ring: the provider events copied in the upcall, in
//! slots reserved by listen, connect and accept (iwcm.c's preallocated
//! `iwcm_work` entries).

use super::*;

/// One provider event, copied out of the provider's `struct iw_cm_event`
/// after [`event_check::check`] judged it.
///
/// # Invariants
///
/// `raw`'s event type is one of the five; its status, ird and ord are the
/// checked values.  (Its private data is its own copy: [`CmEvent`].)
pub(super) struct Event {
    pub(super) raw: CmEvent,
    /// The event's addresses passed the check (CONNECT_REQUEST and
    /// CONNECT_REPLY); otherwise the cm_id's own are used.
    pub(super) use_addrs: bool,
    /// A CONNECT_REQUEST's child cm_id, allocated in the upcall
    /// ([`CmId::new_child`]) and not in the table yet: delivered to the ULP
    /// with the request (and published then), or, when nobody will see
    /// the request, the cm_id that rejects it (never published).  An
    /// `Event` with a child must be dropped outside every cm_id's lock
    /// (the child's destructor takes the table's lock, which comes first):
    /// the delivery drops its events after the unlock (`delivery.rs`).
    pub(super) child: Option<table::Unlisted>,
}

impl Event {
    /// Copies `src` with the checked `status`/`ird`/`ord` and its private
    /// data already copied into `pdata` (at most 512 bytes: it was copied
    /// from a `u8` length) and, for a CONNECT_REQUEST, its `child`.
    pub(super) fn new(
        src: &RawCmEvent,
        pdata: KVec<u8>,
        v: Checked,
        child: Option<table::Unlisted>,
    ) -> Self {
        let mut raw = CmEvent::copy_of(src);
        // INVARIANT: the checked values.
        raw.set_checked(v.status, v.ird, v.ord);
        // Copied in the upcall: the provider may free its buffer as soon as
        // the upcall returns.
        raw.set_private_data(pdata);
        Self {
            raw,
            use_addrs: v.use_addrs,
            child,
        }
    }

    /// A CLOSE with `status` that iw_cm makes itself (no provider sent
    /// it): no private data, addresses or provider data
    /// ([`CmId::abort_bound_expired`]).
    pub(super) fn synthetic_close(status: i32) -> Self {
        Self {
            raw: CmEvent::synthetic_close(status),
            use_addrs: false,
            child: None,
        }
    }

    pub(super) fn input(&self) -> Option<Input> {
        Some(match self.raw.event_type()? {
            EventType::ConnectRequest => Input::EvConnectRequest,
            EventType::ConnectReply => Input::EvConnectReply {
                ok: self.raw.status() == 0,
            },
            EventType::Established => Input::EvEstablished,
            EventType::Disconnect => Input::EvDisconnect,
            EventType::Close => Input::EvClose,
        })
    }
}

/// A fixed-size FIFO of events; its slots are allocated in process context
/// ([`CmId::reserve_events`]) so that the atomic upcall never allocates one.
///
/// # Invariants
///
/// `len <= slots.len()`; `head < slots.len()` unless `slots` is empty; the
/// `len` slots from `head` on (wrapping) hold the queued events in arrival
/// order, every other slot is `None`.
pub(super) struct EventRing {
    /// One slot per event that may be pending: `backlog` of them for a
    /// listener, so kvmalloc'ed (a large backlog must not need one
    /// physically contiguous allocation; iwcm.c allocates entries one by one).
    pub(super) slots: KVVec<Option<Event>>,
    pub(super) head: usize,
    pub(super) len: usize,
}

impl EventRing {
    pub(super) const fn new() -> Self {
        Self {
            slots: KVVec::new(),
            head: 0,
            len: 0,
        }
    }

    /// Whether the ring has slots and every one of them holds an event.
    pub(super) fn is_full(&self) -> bool {
        !self.slots.is_empty() && self.len == self.slots.len()
    }

    /// Moves `*ev` into the ring; leaves it in place (to be freed by the
    /// caller, outside the lock) and returns false when the ring is full.
    pub(super) fn push(&mut self, ev: &mut Option<Event>) -> bool {
        let cap = self.slots.len();
        if self.len == cap {
            return false;
        }
        let idx = (self.head + self.len) % cap;
        self.slots[idx] = ev.take();
        self.len += 1;
        true
    }

    pub(super) fn pop(&mut self) -> Option<Event> {
        if self.len == 0 {
            return None;
        }
        let ev = self.slots[self.head].take();
        self.head = (self.head + 1) % self.slots.len();
        self.len -= 1;
        ev
    }

    /// Moves the queued events into `new` (at least as large) and makes it
    /// the ring; returns the old slots, to be freed outside the lock.
    pub(super) fn replace_slots(&mut self, mut new: KVVec<Option<Event>>) -> KVVec<Option<Event>> {
        let mut i = 0;
        while let Some(ev) = self.pop() {
            new[i] = Some(ev);
            i += 1;
        }
        self.head = 0;
        self.len = i;
        core::mem::replace(&mut self.slots, new)
    }

    /// Empties the ring; returns the slots (with the events) to be freed
    /// outside the lock.
    pub(super) fn take_all(&mut self) -> KVVec<Option<Event>> {
        self.head = 0;
        self.len = 0;
        core::mem::replace(&mut self.slots, KVVec::new())
    }
}

/// The values of a provider event that passed [`event_check::check`].
#[derive(Clone, Copy)]
pub(super) struct Checked {
    pub(super) status: i32,
    pub(super) ird: u8,
    pub(super) ord: u8,
    pub(super) use_addrs: bool,
}
