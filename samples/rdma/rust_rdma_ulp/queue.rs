// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! One queue: an rdma_cm id with its own PD, CQ and RC QP, a ring of
//! send/receive buffers, the completion-driven traffic and the teardown.
//!
//! C source mirrored: `struct nvme_rdma_queue` and its ib setup/teardown in
//! drivers/nvme/host/rdma.c (`nvme_rdma_create_queue_ib`,
//! `nvme_rdma_stop_queue`, `nvme_rdma_destroy_queue_ib`).
//!
//! # Traffic
//!
//! Every message is [`MSG_LEN`] bytes: magic, slot, sequence number.  The
//! host keeps one message in flight per send slot (`depth` of them): a slot
//! is reused once both its send completion and the target's echo of it have
//! arrived.  The target echoes every message it receives from the send slot
//! of the same number.  Receives are reposted as soon as their completion
//! has been read.  Nothing is posted once the queue is stopped, and a
//! completion with an error status (a flush) is only counted, so
//! `ib_drain_qp` ends the traffic for good.

use crate::{
    bindings,
    host::Host,
    target::Target,
    ulp::cm::{CmId, CmIdRef},
    ulp::verbs::{post_recv, post_send, Cq, DmaBuf, Pd, Qp},
};
use core::{fmt, ptr::NonNull};
use kernel::{
    container_of, new_condvar, new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Full, Relaxed, Release},
        Arc, CondVar, Mutex,
    },
    time::{msecs_to_jiffies, Instant, Monotonic},
    types::Opaque,
    workqueue::{impl_has_work, new_work, Work, WorkItem},
};

/// Bytes per message (and per buffer slot).
pub(crate) const MSG_LEN: usize = 32;
/// First word of every message.
const MAGIC: u32 = 0x5255_4c50;
/// Upper bound of the queue depth (messages in flight per queue).
pub(crate) const MAX_DEPTH: u32 = 256;

/// Queue states ([`Queue::state`]).
const CONNECTING: u32 = 0;
const LIVE: u32 = 1;
/// Disconnected by the peer or never connected; resources still there.
const CLOSED: u32 = 2;
/// Claimed for teardown (by exactly one thread).
const DELETING: u32 = 3;
const DELETED: u32 = 4;

/// The connection has not finished yet ([`Queue::conn`]).
const CONN_PENDING: i32 = 1;

/// What a queue is for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The target's listening id (no QP).
    Listener,
    /// Queue 0 (nvme: the admin queue).
    Admin,
    /// Queues 1..: I/O queues.
    Io,
}

impl Kind {
    pub(crate) fn of_qid(qid: u32) -> Self {
        if qid == 0 {
            Self::Admin
        } else {
            Self::Io
        }
    }
}

/// The order in which a queue's QP and cm_id are destroyed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// `rdma_destroy_qp`, then `rdma_destroy_id` (nvme-rdma's normal path).
    QpFirst,
    /// `rdma_destroy_id`, then `ib_destroy_qp` (nvme-rdma's error path).
    CmIdFirst,
}

/// The controller (host) or subsystem (target) a queue belongs to.
pub(crate) enum Owner {
    Host(Arc<Host>),
    Target(Arc<Target>),
}

/// The ULP's half of a queue's id and its verbs objects.
struct Inner {
    id: Option<CmId<Queue>>,
    ib: Option<QueueIb>,
}

/// One queue.
#[pin_data]
pub(crate) struct Queue {
    pub(crate) owner: Owner,
    pub(crate) qid: u32,
    pub(crate) kind: Kind,
    pub(crate) depth: u32,
    state: Atomic<u32>,
    ever_live: Atomic<bool>,
    stopped: Atomic<bool>,
    sends: Atomic<u64>,
    recvs: Atomic<u64>,
    errors: Atomic<u64>,
    /// Connection result for [`Queue::wait_connected`]: [`CONN_PENDING`],
    /// 0, or a negative errno.
    #[pin]
    conn: Mutex<i32>,
    #[pin]
    conn_wait: CondVar,
    /// Short critical sections only: never held across an rdma_cm or verbs
    /// call that waits (handlers of other queues may need it).
    #[pin]
    inner: Mutex<Inner>,
    /// Target: releases the queue after the host disconnected.
    #[pin]
    release_work: Work<Queue>,
}

impl_has_work! {
    impl HasWork<Self> for Queue { self.release_work }
}

impl WorkItem for Queue {
    type Pointer = Arc<Queue>;

    fn run(this: Arc<Queue>) {
        if let Owner::Target(t) = &this.owner {
            t.release(&this);
        }
    }
}

impl Queue {
    pub(crate) fn new(owner: Owner, qid: u32, kind: Kind, depth: u32) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                owner,
                qid,
                kind,
                depth,
                state: Atomic::new(CONNECTING),
                ever_live: Atomic::new(false),
                stopped: Atomic::new(false),
                sends: Atomic::new(0),
                recvs: Atomic::new(0),
                errors: Atomic::new(0),
                conn <- new_mutex!(CONN_PENDING, "Queue::conn"),
                conn_wait <- new_condvar!("Queue::conn_wait"),
                inner <- new_mutex!(Inner { id: None, ib: None }, "Queue::inner"),
                release_work <- new_work!("Queue::release_work"),
            }),
            GFP_KERNEL,
        )
    }

    /// Stores the owner of the queue's id.
    pub(crate) fn set_id(&self, id: CmId<Queue>) {
        self.inner.lock().id = Some(id);
    }

    /// Takes the queue's id out (for a handler that gives it to rdma_cm).
    pub(crate) fn take_id(&self) -> Option<CmId<Queue>> {
        self.inner.lock().id.take()
    }

    /// Takes the queue's verbs objects out (dropping them drains and frees).
    pub(crate) fn take_ib(&self) -> Option<QueueIb> {
        self.inner.lock().ib.take()
    }

    /// Creates the queue's PD, CQ, QP and ring on `id`'s device and posts
    /// the receives (`nvme_rdma_create_queue_ib`).
    pub(crate) fn create_ib(&self, id: &CmIdRef, host: bool) -> Result {
        let ib = QueueIb::new(self, id, host)?;
        self.inner.lock().ib = Some(ib);
        Ok(())
    }

    /// Host: starts the traffic once connected.
    pub(crate) fn start_traffic(&self) {
        if let Some(ib) = self.inner.lock().ib.as_ref() {
            ib.ring().start_sends();
        }
    }

    /// Claims the teardown; `true` for exactly one caller.
    pub(crate) fn claim(&self) -> bool {
        let mut cur = self.state.load(Relaxed);
        while cur < DELETING {
            match self.state.cmpxchg(cur, DELETING, Full) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
        false
    }

    /// No more posting: completions are only counted from now on.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Release);
    }

    fn stopped(&self) -> bool {
        self.stopped.load(Relaxed)
    }

    pub(crate) fn set_live(&self) {
        if self.state.cmpxchg(CONNECTING, LIVE, Full).is_ok() {
            self.ever_live.store(true, Relaxed);
        }
    }

    /// The connection went away (or never came): traffic stops.
    pub(crate) fn set_closed(&self) {
        self.stop();
        let _ = self.state.cmpxchg(LIVE, CLOSED, Full);
        let _ = self.state.cmpxchg(CONNECTING, CLOSED, Full);
    }

    pub(crate) fn set_deleted(&self) {
        self.state.store(DELETED, Release);
    }

    pub(crate) fn is_live(&self) -> bool {
        self.state.load(Relaxed) == LIVE
    }

    pub(crate) fn is_deleted(&self) -> bool {
        self.state.load(Relaxed) == DELETED
    }

    /// Reports the end of a connection attempt to [`Queue::wait_connected`].
    pub(crate) fn conn_done(&self, res: Result) {
        let mut g = self.conn.lock();
        if *g == CONN_PENDING {
            *g = match res {
                Ok(()) => 0,
                Err(e) => e.to_errno(),
            };
            self.conn_wait.notify_all();
        }
    }

    /// Waits up to `timeout_ms` for the connection (`nvme_rdma_wait_for_cm`).
    pub(crate) fn wait_connected(&self, timeout_ms: u32) -> Result {
        let start = Instant::<Monotonic>::now();
        let mut g = self.conn.lock();
        while *g == CONN_PENDING {
            let left = i64::from(timeout_ms) - start.elapsed().as_millis();
            if left <= 0 {
                return Err(ETIMEDOUT);
            }
            let left = u32::try_from(left).unwrap_or(timeout_ms);
            if let kernel::sync::CondVarTimeoutResult::Signal { .. } = self
                .conn_wait
                .wait_interruptible_timeout(&mut g, msecs_to_jiffies(left))
            {
                return Err(EINTR);
            }
        }
        match *g {
            0 => Ok(()),
            e => Err(Error::from_errno(e)),
        }
    }

    /// Tears the queue down: disconnect, drain, then QP and cm_id in
    /// `order` (`nvme_rdma_stop_queue` + `nvme_rdma_free_queue`).  The
    /// caller has claimed the queue and is not in this queue's handler.  A
    /// queue that never connected loses its id first (nvme-rdma's error
    /// path: no event can race with the QP's destruction then).
    pub(crate) fn teardown(&self, order: Order) {
        self.stop();
        let (id, ib) = {
            let mut inner = self.inner.lock();
            (inner.id.take(), inner.ib.take())
        };
        let order = if self.ever_live.load(Relaxed) {
            order
        } else {
            Order::CmIdFirst
        };
        if let Some(id) = id.as_ref() {
            if self.ever_live.load(Relaxed) {
                let _ = id.disconnect();
            }
        }
        let mut ib = ib;
        if let Some(ib) = ib.as_mut() {
            ib.drain();
        }
        match order {
            Order::QpFirst => {
                if let Some(ib) = ib {
                    match id.as_ref() {
                        Some(id) => ib.destroy_via(id),
                        None => drop(ib),
                    }
                }
                if let Some(id) = id {
                    id.destroy();
                }
            }
            Order::CmIdFirst => {
                if let Some(id) = id {
                    id.destroy();
                }
                drop(ib);
            }
        }
        self.set_deleted();
    }

    /// One debugfs line.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Listener => "listener",
            Kind::Admin => "admin",
            Kind::Io => "io",
        };
        let state = match self.state.load(Relaxed) {
            CONNECTING => "connecting",
            LIVE => "live",
            CLOSED => "closed",
            DELETING => "deleting",
            _ => "deleted",
        };
        writeln!(
            f,
            "q{} {} {} depth {} sends {} recvs {} errors {}",
            self.qid,
            kind,
            state,
            self.depth,
            self.sends.load(Relaxed),
            self.recvs.load(Relaxed),
            self.errors.load(Relaxed)
        )
    }
}

/// A queue's verbs objects.  Dropping it drains the QP (unless done) and
/// frees everything in the order the verbs require: QP, CQ (after which no
/// completion handler runs), ring, PD.  The field order is that order.
pub(crate) struct QueueIb {
    qp: Option<Qp>,
    _cq: Cq,
    ring: RingOwner,
    _pd: Pd,
    drained: bool,
}

impl QueueIb {
    fn new(queue: &Queue, id: &CmIdRef, host: bool) -> Result<Self> {
        let depth = queue.depth;
        let dev = id.device().ok_or(ENODEV)?;
        let pd = Pd::alloc(dev)?;
        // Sends, receives, and one of each for the drain.
        let cq = Cq::alloc(dev, 3 * depth + 2, 0)?;
        // nvme-rdma's factor of two for sends, plus one for the drain.
        let qp = id.create_qp(&pd, &cq.rc_qp_attr(2 * depth + 1, depth + 1))?;
        let buf = DmaBuf::alloc(dev, 2 * depth as usize * MSG_LEN)?;
        let ring = Ring::alloc(queue, &qp, &pd, buf, host)?;
        // From here on dropping `ib` drains and frees in order.
        let ib = Self {
            qp: Some(qp),
            _cq: cq,
            ring,
            _pd: pd,
            drained: false,
        };
        ib.ring().post_all_recvs()?;
        Ok(ib)
    }

    fn ring(&self) -> &Ring {
        self.ring.get()
    }

    /// `ib_drain_qp` (once).
    pub(crate) fn drain(&mut self) {
        if !self.drained {
            if let Some(qp) = self.qp.as_ref() {
                qp.drain();
            }
            self.drained = true;
        }
    }

    /// Frees everything, the QP through `id` (`rdma_destroy_qp`).
    pub(crate) fn destroy_via(mut self, id: &CmIdRef) {
        self.drain();
        if let Some(qp) = self.qp.take() {
            id.destroy_qp(qp);
        }
    }
}

impl Drop for QueueIb {
    fn drop(&mut self) {
        self.drain();
        drop(self.qp.take());
        // The fields drop next, in order: `_cq`, `ring`, `_pd`.
    }
}

/// One send or receive buffer slot; its `ib_cqe` comes back in the work
/// completion.
///
/// # Invariants
///
/// `ring` points to the live [`Ring`] whose `slots[index]` is this slot
/// (slots live inside their ring's allocation and are never moved out), so
/// a completion handler may go from the `ib_cqe` to the slot and its ring.
struct Slot {
    cqe: Opaque<bindings::ib_cqe>,
    ring: *const Ring,
    /// Index in [`Ring::slots`]: sends are `0..depth`, receives follow.
    index: usize,
    /// Host send slot: completions (send, echo) still due before reuse.
    pending: Atomic<u32>,
    seq: Atomic<u64>,
}

/// A queue's buffers, shared with its completion handlers.
///
/// # Invariants
///
/// `queue` outlives the ring (the queue owns it through [`QueueIb`]); `qp`
/// is alive while a completion handler can run (the QP is destroyed after
/// `ib_drain_qp`, after which the handlers post nothing, and the CQ is
/// freed before the ring).
struct Ring {
    queue: *const Queue,
    qp: *mut bindings::ib_qp,
    lkey: u32,
    depth: usize,
    host: bool,
    buf: DmaBuf,
    slots: KVec<Slot>,
}

/// Owner of a heap-allocated [`Ring`] whose address the CQ's work
/// completions carry (through the slots' `ib_cqe`s).
///
/// # Invariants
///
/// `ptr` comes from `KBox::leak` and is freed only by `drop`.
struct RingOwner(NonNull<Ring>);

// SAFETY: the ring is used from the CQ's workqueue and the queue's owners;
// every field written after setup is atomic.
unsafe impl Send for RingOwner {}
// SAFETY: as for `Send`.
unsafe impl Sync for RingOwner {}

impl RingOwner {
    fn get(&self) -> &Ring {
        // SAFETY: valid until `drop` (type invariant).
        unsafe { self.0.as_ref() }
    }
}

impl Drop for RingOwner {
    fn drop(&mut self) {
        // SAFETY: from `KBox::leak`, freed once (type invariant).
        drop(unsafe { KBox::from_raw(self.0.as_ptr()) });
    }
}

fn encode(slot: u32, seq: u64) -> [u8; MSG_LEN] {
    let mut m = [0u8; MSG_LEN];
    m[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    m[4..8].copy_from_slice(&slot.to_le_bytes());
    m[8..16].copy_from_slice(&seq.to_le_bytes());
    m
}

/// The slot number of a valid message.
fn decode(m: &[u8; MSG_LEN]) -> Option<u32> {
    let word = |i: usize| u32::from_le_bytes([m[i], m[i + 1], m[i + 2], m[i + 3]]);
    (word(0) == MAGIC).then(|| word(4))
}

impl Ring {
    fn alloc(queue: &Queue, qp: &Qp, pd: &Pd, buf: DmaBuf, host: bool) -> Result<RingOwner> {
        let depth = queue.depth as usize;
        let mut slots = KVec::with_capacity(2 * depth, GFP_KERNEL)?;
        let ring = KBox::new(
            Ring {
                queue: core::ptr::from_ref(queue),
                qp: qp.as_raw(),
                lkey: pd.local_dma_lkey(),
                depth,
                host,
                buf,
                slots: KVec::new(),
            },
            GFP_KERNEL,
        )?;
        // INVARIANT: from `KBox::into_raw`; freed by the owner's `drop`
        // (also on the error returns below).
        let owner = RingOwner(NonNull::from(KBox::leak(ring)));
        let ring = owner.0.as_ptr().cast_const();
        for index in 0..2 * depth {
            let done: unsafe extern "C" fn(*mut bindings::ib_cq, *mut bindings::ib_wc) =
                if index < depth { send_done } else { recv_done };
            slots.push(
                Slot {
                    cqe: Opaque::new(bindings::ib_cqe { done: Some(done) }),
                    ring,
                    index,
                    pending: Atomic::new(0),
                    seq: Atomic::new(0),
                },
                GFP_KERNEL,
            )?;
        }
        // SAFETY: the ring is not shared yet; the slots' vector is not
        // resized afterwards, so the `ib_cqe` addresses stay valid.
        unsafe { (*owner.0.as_ptr()).slots = slots };
        Ok(owner)
    }

    fn queue(&self) -> &Queue {
        // SAFETY: the queue outlives its ring (type invariant).
        unsafe { &*self.queue }
    }

    fn offset(slot: &Slot) -> usize {
        slot.index * MSG_LEN
    }

    /// Posts the receive of `slot` unless the queue is stopped.
    fn post_recv(&self, slot: &Slot) -> Result {
        if self.queue().stopped() {
            return Ok(());
        }
        let sge = self.buf.sge(Self::offset(slot), MSG_LEN, self.lkey)?;
        // SAFETY: the QP is alive (type invariant); the slot and the buffer
        // live until the CQ is freed; the CPU reads the range only after the
        // completion.
        let res = unsafe { post_recv(self.qp, slot.cqe.get(), sge) };
        if res.is_err() {
            self.queue().errors.add(1, Relaxed);
        }
        res
    }

    /// Copies `msg` into send `slot` and posts it unless stopped.
    ///
    /// # Safety
    ///
    /// No send from `slot` is outstanding on the device.
    unsafe fn post_msg(&self, slot: &Slot, msg: &[u8; MSG_LEN]) {
        if self.queue().stopped() {
            slot.pending.store(0, Relaxed);
            return;
        }
        let off = Self::offset(slot);
        // SAFETY: no send uses the range (caller).
        let res = unsafe { self.buf.write(off, msg) }
            .and_then(|()| self.buf.sge(off, MSG_LEN, self.lkey))
            // SAFETY: as in `post_recv`; the range is not written until the
            // send completed (the caller's contract for the next message).
            .and_then(|sge| unsafe { post_send(self.qp, slot.cqe.get(), sge) });
        if res.is_err() {
            slot.pending.store(0, Relaxed);
            self.queue().errors.add(1, Relaxed);
        }
    }

    fn post_all_recvs(&self) -> Result {
        for slot in &self.slots[self.depth..] {
            self.post_recv(slot)?;
        }
        Ok(())
    }

    /// Host: the next message of send `slot`.
    fn send_next(&self, slot: &Slot) {
        slot.pending.store(2, Release);
        let seq = slot.seq.fetch_add(1, Relaxed) + 1;
        // SAFETY: `pending` reached zero (or the slot was never used): the
        // slot's send completed and its echo arrived.
        unsafe { self.post_msg(slot, &encode(slot.index as u32, seq)) };
    }

    /// Host: one message in flight on every send slot.
    fn start_sends(&self) {
        for slot in &self.slots[..self.depth] {
            self.send_next(slot);
        }
    }

    fn completion_ok(&self, status: bindings::ib_wc_status) -> bool {
        if status == bindings::ib_wc_status_IB_WC_SUCCESS {
            return true;
        }
        if status != bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR {
            self.queue().errors.add(1, Relaxed);
        }
        false
    }

    fn send_done(&self, slot: &Slot, status: bindings::ib_wc_status) {
        if !self.completion_ok(status) {
            return;
        }
        self.queue().sends.add(1, Relaxed);
        if self.host && slot.pending.fetch_sub(1, Full) == 1 {
            self.send_next(slot);
        }
    }

    fn recv_done(&self, slot: &Slot, status: bindings::ib_wc_status, len: u32) {
        if !self.completion_ok(status) {
            return;
        }
        let q = self.queue();
        let mut msg = [0u8; MSG_LEN];
        // SAFETY: the receive completed; the slot is reposted only below.
        let read = unsafe { self.buf.read(Self::offset(slot), &mut msg) };
        let sidx = decode(&msg).map(|s| s as usize).filter(|&s| s < self.depth);
        let _ = self.post_recv(slot);
        let (Ok(()), Some(sidx), true) = (read, sidx, len as usize == MSG_LEN) else {
            q.errors.add(1, Relaxed);
            return;
        };
        q.recvs.add(1, Relaxed);
        let send = &self.slots[sidx];
        if self.host {
            if send.pending.fetch_sub(1, Full) == 1 {
                self.send_next(send);
            }
        } else {
            // SAFETY: the host sends the next message of slot `sidx` only
            // after it received our previous echo from this slot, so the
            // device has finished reading that send's buffer.
            unsafe { self.post_msg(send, &msg) };
        }
    }
}

/// The slot and ring of a work completion.
///
/// # Safety
///
/// `wc` is a work completion of a WR posted by a [`Ring`] whose CQ is alive.
unsafe fn slot_of<'a>(wc: *const bindings::ib_wc) -> (&'a Slot, &'a Ring, &'a bindings::ib_wc) {
    // SAFETY: the CQ passes a valid completion (caller).
    let wc = unsafe { &*wc };
    // SAFETY: every WR a ring posts carries a slot's `ib_cqe` in `wr_cqe`.
    let cqe = unsafe { wc.__bindgen_anon_1.wr_cqe }.cast::<Opaque<bindings::ib_cqe>>();
    // SAFETY: `cqe` is the `cqe` field of a `Slot` in a live ring (the ring is
    // freed only after its CQ).
    let slot = unsafe { &*container_of!(cqe, Slot, cqe) };
    // SAFETY: as above.
    let ring = unsafe { &*slot.ring };
    (slot, ring, wc)
}

/// `ib_cqe.done` of send slots.
///
/// # Safety
///
/// Called by the CQ's poller with a completion of one of our sends.
unsafe extern "C" fn send_done(_cq: *mut bindings::ib_cq, wc: *mut bindings::ib_wc) {
    // SAFETY: a completion of a ring's WR, while its CQ is alive.
    let (slot, ring, wc) = unsafe { slot_of(wc) };
    ring.send_done(slot, wc.status);
}

/// `ib_cqe.done` of receive slots.
///
/// # Safety
///
/// Called by the CQ's poller with a completion of one of our receives.
unsafe extern "C" fn recv_done(_cq: *mut bindings::ib_cq, wc: *mut bindings::ib_wc) {
    // SAFETY: a completion of a ring's WR, while its CQ is alive.
    let (slot, ring, wc) = unsafe { slot_of(wc) };
    ring.recv_done(slot, wc.status, wc.byte_len);
}
