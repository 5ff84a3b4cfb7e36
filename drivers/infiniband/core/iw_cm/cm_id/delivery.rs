// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! A cm_id's event delivery: its work item takes the ring's events in
//! order and runs the state machine and the ULP's handler (iwcm.c's
//! `cm_work_handler`, `process_event` and the `cm_*_handler`s).
//!
//! Each round of the work item's loop decides what to do with the next
//! event under the cm_id's lock ([`CmId::next_step`], which returns a
//! [`Next`]) and does it after the unlock; a [`Handled`] guard counts the
//! event in `Inner::handled` whichever way it went.

use super::*;
use kernel::time::{Instant, Monotonic};

/// What the work item does with the ring's next event, decided under the
/// cm_id's lock by [`CmId::next_step`] and done after the unlock.
enum Next {
    /// Nothing to do now: the ring is empty, or another task delivers for
    /// this id.
    Return,
    /// The event goes no further than iw_cm: see [`Skip`].
    Skip(Event, Skip),
    /// The state machine took the event: run its actions, and call the
    /// ULP's handler if they say DELIVER.
    Deliver(Event, Deliver),
}

/// Why an event is not delivered, and what remains to be done for it
/// outside the lock.
enum Skip {
    /// Dropped silently: after destroy (`Outcome::Drop`), or an outcome
    /// of ULP calls (`Invalid`, `Wait`).  Nothing to do.
    Dropped,
    /// An event type the provider should never send: a provider fault.
    Unknown,
    /// A CONNECT_REQUEST after destroy: the provider's object to give back.
    UndeliveredRequest,
    /// An event impossible in state `from` (a provider fault), whose
    /// transition `actions` were already applied; `qp` is the QP reference
    /// they released, to be dropped after the unlock.
    Fault {
        input: Input,
        from: State,
        actions: Actions,
        qp: Option<QpRef>,
    },
}

/// An event the state machine took, with the state already changed.
struct Deliver {
    input: Input,
    actions: Actions,
    /// [`CmId::delivery_begins`] asked for [`CmId::watch_delivery`].
    watched: bool,
    /// The QP reference the actions released, dropped after the unlock.
    qp: Option<QpRef>,
}

/// One event taken off the ring: counted in `Inner::handled` when the
/// guard is dropped (taking the lock: never dropped with `inner` held), or
/// by [`Handled::count`] under the lock the caller holds.  Created after
/// the unlock that follows the pop, so that every way out of the loop's
/// body counts the event exactly once.
struct Handled<'a>(&'a CmId);

impl Handled<'_> {
    /// Counts the event under the lock the caller holds.
    fn count(self, g: &mut Inner) {
        g.handled += 1;
        // Counted: the drop would count it again (and take the lock).
        core::mem::forget(self);
    }
}

impl Drop for Handled<'_> {
    fn drop(&mut self) {
        self.0.inner.lock().handled += 1;
    }
}

impl CmId {
    // ---- delivery ---------------------------------------------------------

    /// Queues this cm_id's work item (a reference goes with it).
    pub(super) fn kick(this: ArcBorrow<'_, CmId>) {
        let arc: Arc<CmId> = this.into();
        // `Err` means already queued: that run will see our event.
        let _ = crate::c_helpers::delivery_queue().enqueue(arc);
    }

    /// The work item: delivers the queued events in order.
    pub(super) fn deliver_queued(self: &Arc<Self>) {
        let me = current_task();
        loop {
            match self.next_step(me) {
                Next::Return => {
                    // A CLOSE delivered ends a disconnect's bound.
                    self.drop_abort_bound();
                    return;
                }
                Next::Skip(mut ev, skip) => {
                    let handled = Handled(self);
                    self.skip(&mut ev, skip);
                    // Counted before the event is freed.
                    drop(handled);
                }
                Next::Deliver(ev, d) => self.deliver(ev, d, Handled(self)),
            }
        }
    }

    /// Takes the next event off the ring and runs the state machine on it,
    /// under the lock; the event and a released QP reference are returned,
    /// to be dropped after the unlock.
    fn next_step(&self, me: usize) -> Next {
        let mut g = self.inner.lock();
        // Another task delivers for this id (the listener delivering
        // our CONNECT_REQUEST): it re-queues us when done.
        if g.delivering != 0 {
            return Next::Return;
        }
        let Some(ev) = g.events.pop() else {
            return Next::Return;
        };
        let Some(input) = ev.input() else {
            return Next::Skip(ev, Skip::Unknown);
        };
        match state::step(g.state, input) {
            Outcome::Go { next, actions } => {
                g.state = next;
                // A handler call only with DELIVER (a listener's CONNECT_REQUEST
                // calls the child's, in `connect_request`).
                let h = if actions.contains(Actions::DELIVER) {
                    self.raw.handler_now()
                } else {
                    0
                };
                let watched = Self::delivery_begins(&mut g, me, ev.raw.event_type(), h);
                let qp = g.take_qp(actions);
                let d = Deliver {
                    input,
                    actions,
                    watched,
                    qp,
                };
                Next::Deliver(ev, d)
            }
            // (Not reached: destroy empties the ring and rejects the
            // requests in it.)  Still the provider's object to give back,
            // outside the lock: the child's destructor takes the table's
            // lock, which comes first.
            Outcome::Drop if input == Input::EvConnectRequest => {
                Next::Skip(ev, Skip::UndeliveredRequest)
            }
            Outcome::ProviderFault { next, actions } => {
                let from = g.state;
                g.state = next;
                let qp = g.take_qp(actions);
                let fault = Skip::Fault {
                    input,
                    from,
                    actions,
                    qp,
                };
                Next::Skip(ev, fault)
            }
            Outcome::Drop | Outcome::Invalid | Outcome::Wait => Next::Skip(ev, Skip::Dropped),
        }
    }

    /// What remains to be done for an event that is not delivered, outside
    /// the lock.
    fn skip(&self, ev: &mut Event, skip: Skip) {
        match skip {
            Skip::Dropped => {}
            Skip::Unknown => provider_fault!(
                Some(&self.dev_info),
                "unknown provider event {}\n",
                ev.raw.raw_type()
            ),
            Skip::UndeliveredRequest => self.reject_undelivered_request(ev),
            Skip::Fault {
                input,
                from,
                actions,
                qp,
            } => {
                drop(qp);
                if actions.contains(Actions::WAKE_CONNECT_WAITERS) {
                    self.waiters.notify_all();
                }
                provider_fault!(
                    Some(&self.dev_info),
                    "provider event {:?} in state {:?} dropped\n",
                    input,
                    from
                );
                // A request on a cm_id that does not listen (any
                // more): still the provider's object to give back.
                if input == Input::EvConnectRequest {
                    self.reject_undelivered_request(ev);
                }
            }
        }
    }

    /// Runs the actions of an event the state machine took (`next_step`
    /// changed the state and began the delivery) and ends the delivery.
    fn deliver(self: &Arc<Self>, mut ev: Event, d: Deliver, handled: Handled<'_>) {
        if d.watched {
            self.watch_delivery();
        }
        // The QP reference goes before the ULP hears CLOSE or a failed
        // CONNECT_REPLY: the ULP destroys its QP next, and
        // siw_destroy_qp / c4iw_destroy_qp wait for this reference.
        drop(d.qp);

        let ret = if d.actions.contains(Actions::DELIVER) {
            self.call_handler_with_addrs(&mut ev, d.input)
        } else {
            0
        };
        if d.actions.contains(Actions::WAKE_CONNECT_WAITERS) {
            self.waiters.notify_all();
        }
        if d.actions.contains(Actions::SPAWN_CHILD) {
            self.connect_request(&mut ev);
        }
        if ret != 0 {
            // The ULP asked us to destroy the id (rdma_cm forgets it):
            // we give back the ULP's reference ourselves.
            self.destroy_for_handler();
        }
        let ended = {
            let mut g = self.inner.lock();
            let e = self.delivery_ends(&mut g);
            handled.count(&mut g);
            e
        };
        self.delivery_ended(ended);
        self.waiters.notify_all();
    }

    /// Calls the ULP's handler with `ev` (of state machine input `input`),
    /// with the addresses a CONNECT_REPLY gives the ULP and the cm_id.
    fn call_handler_with_addrs(&self, ev: &mut Event, input: Input) -> i32 {
        if let Input::EvConnectReply { ok } = input {
            // Only this delivering thread accesses the addresses of a
            // connecting id (iwcm.c cm_conn_rep_handler), but for the
            // table's snapshot of them.
            self.with_fields(|mut fields| {
                if ok && ev.use_addrs {
                    let (l, r) = ev.raw.addrs();
                    fields.set_mapped_addrs(l, r);
                }
                // The ULP sees its own addresses on success (as iwcm.c),
                // and on failure when the provider's are unusable (a
                // provider fault).
                if ok || !ev.use_addrs {
                    let (l, r) = fields.addrs();
                    ev.raw.set_addrs(l, r);
                }
            });
        }
        self.call_handler_traced(&mut ev.raw)
    }

    /// Calls the ULP's handler with `ev` and returns its result; with the
    /// `iw_cm_event_delivered` tracepoint on, traces the call and its
    /// duration.  Process context, may sleep (the handler may).
    fn call_handler_traced(&self, ev: &mut CmEvent) -> i32 {
        let t0 = trace::iw_cm_event_delivered_enabled().then(Instant::<Monotonic>::now);
        let ret = self.raw.call_handler(ev);
        if let Some(t0) = t0 {
            trace::iw_cm_event_delivered(
                self.table_id.into(),
                ev.raw_type() as i32,
                ev.status(),
                ret,
                t0.elapsed().as_nanos().max(0) as u64,
            );
        }
        ret
    }

    /// A handler returned non-zero: destroy and drop the ULP's reference
    /// (`self` keeps the id alive meanwhile).
    pub(super) fn destroy_for_handler(self: &Arc<Self>) {
        let ulp = self.take_ulp_ref();
        self.destroy();
        drop(ulp);
    }

    /// CONNECT_REQUEST on a listener: create the child cm_id and deliver
    /// the request on it (`cm_conn_req_handler` in iwcm.c).
    pub(super) fn connect_request(self: &Arc<Self>, ev: &mut Event) {
        // The upcall refused requests with a status, without provider_data
        // or with unusable addresses (event_check).
        // The child came with the request (allocated in the upcall, with
        // the listener's handler and context), so that a request can
        // always be rejected: iwcm.c allocates it here and, without memory,
        // leaves the request with the provider for good.
        let Some(mut unlisted) = ev.child.take() else {
            // Every queued CONNECT_REQUEST carries one (upcall.rs).
            kernel::warn_on!(true);
            return;
        };
        // Set up before it is published in the table (below): until then
        // no one but this delivery can reach it.
        self.set_up_child(&mut unlisted, ev);
        let child = unlisted.cm_id();
        let watched = {
            let mut g = child.inner.lock();
            g.state = State::ConnRecv;
            g.role = table::Role::Passive;
            // The child's first event is this request: its own later events
            // wait until the request's delivery is done.
            let h = child.raw.handler_now();
            Self::delivery_begins(&mut g, current_task(), Some(EventType::ConnectRequest), h)
        };
        // Set up: table readers see it from now on, being delivered.
        let child = unlisted.publish();
        if watched {
            child.watch_delivery();
        }
        // The ULP's reference on the child: handed out with the request,
        // given back by iw_destroy_cm_id or by `destroy_for_handler` below.
        let _ = Self::into_ulp(child.clone());
        let listening = self.inner.lock().state == State::Listen;
        // Its event slots, before the ULP can accept (and the provider send
        // it events): here, with GFP_KERNEL, not in the provider's upcall.
        let ok = listening
            && child
                .reserve_events(PASSIVE_EVENT_SLOTS, GFP_KERNEL)
                .is_ok();
        let ret = if ok {
            child.call_handler_traced(&mut ev.raw)
        } else {
            -1
        };
        if ret != 0 {
            // Not listening any more, no memory, or the ULP refused: reject
            // and destroy the child; the ULP's reference is ours.  If the
            // ULP already accepted, destroy aborts the connection instead.
            let _ = child.reject(&[]);
            child.destroy_for_handler();
        }
        child.end_request_delivery();
    }

    /// Ends the delivery of a child's CONNECT_REQUEST and queues the
    /// child's own events that came meanwhile.
    fn end_request_delivery(self: &Arc<Self>) {
        let ended = {
            let mut g = self.inner.lock();
            let e = self.delivery_ends(&mut g);
            if g.events.len > 0 {
                drop(g);
                Self::kick(self.as_arc_borrow());
            }
            e
        };
        self.delivery_ended(ended);
        self.waiters.notify_all();
    }

    /// Gives a listener's CONNECT_REQUEST child (not in the table yet,
    /// see [`table::Unlisted`]) its provider object and addresses from the
    /// request `ev` and the port mapper.
    fn set_up_child(&self, child: &mut table::Unlisted, ev: &mut Event) {
        // No one writes a listener's addresses while it listens (its ULP
        // set them before its listen call); this is its delivery.
        let ((l_local, _), (l_m_local, _)) = self
            .with_fields(|listener| (listener.addrs(), listener.mapped_addrs()))
            .unwrap_or_default();
        // The wire's addresses, the child's mapped ones.
        let (wire_local, wire_remote) = ev.raw.addrs();
        let mut local = l_local;
        // The peer's address behind the mapped pair, from the port
        // mapper; without one, the wire's.
        let remote = match crate::rdma::iwpm::remote_info(&l_m_local, &wire_remote) {
            None => wire_remote,
            Some(remote) => {
                sockaddr::check_wildcard(&l_m_local, &wire_local, &mut local);
                ev.raw.set_addrs(local, remote);
                remote
            }
        };
        // The child is not in the table and not yet visible to the ULP or
        // the provider (`table::Unlisted`).
        let mut unseen = child.unseen();
        unseen.set_provider_data(ev.raw.provider_data());
        let mut fields = unseen.fields();
        fields.set_mapped_addrs(wire_local, wire_remote);
        fields.set_addrs(local, remote);
    }
}
