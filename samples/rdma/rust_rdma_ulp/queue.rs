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
    host::Host,
    target::Target,
    ulp::cm::{CmId, CmIdRef},
    ulp::verbs::{Completion, CompletionHandler, Cq, DmaBuf, Pd, Poster, Qp, WcStatus},
};
use core::fmt;
use kernel::{
    new_condvar, new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Full, Relaxed, Release},
        Arc, CondVar, Mutex,
    },
    time::{msecs_to_jiffies, Instant, Monotonic},
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

/// A queue's traffic state, shared with its completion handler ([`Ring`]).
struct Traffic {
    stopped: Atomic<bool>,
    sends: Atomic<u64>,
    recvs: Atomic<u64>,
    errors: Atomic<u64>,
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
    traffic: Arc<Traffic>,
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
        let traffic = Arc::new(
            Traffic {
                stopped: Atomic::new(false),
                sends: Atomic::new(0),
                recvs: Atomic::new(0),
                errors: Atomic::new(0),
            },
            GFP_KERNEL,
        )?;
        Arc::pin_init(
            pin_init!(Self {
                owner,
                qid,
                kind,
                depth,
                state: Atomic::new(CONNECTING),
                ever_live: Atomic::new(false),
                traffic,
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
            ib.start_sends();
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
        self.traffic.stopped.store(true, Release);
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
            self.traffic.sends.load(Relaxed),
            self.traffic.recvs.load(Relaxed),
            self.traffic.errors.load(Relaxed)
        )
    }
}

/// A queue's verbs objects.  Dropping it drains the QP (unless done) and
/// frees everything in the order the verbs require: QP, CQ (after which no
/// completion handler runs) with its ring, PD.  The field order is that
/// order.
pub(crate) struct QueueIb {
    qp: Option<Qp>,
    cq: Cq<Ring>,
    _pd: Pd,
}

impl QueueIb {
    fn new(queue: &Queue, id: &CmIdRef, host: bool) -> Result<Self> {
        let depth = queue.depth;
        let dev = id.device().ok_or(ENODEV)?;
        let pd = Pd::alloc(dev)?;
        let buf = DmaBuf::alloc(dev, 2 * depth as usize * MSG_LEN)?;
        let ring = Ring::new(queue, &pd, buf, host)?;
        // Sends, receives, and one of each for the drain; a work request
        // slot per buffer slot.
        let cq = Cq::alloc(dev, 3 * depth + 2, 0, ring, 2 * depth as usize)?;
        // nvme-rdma's factor of two for sends, plus one for the drain.
        let qp = id.create_qp(&pd, &cq.rc_qp_attr(2 * depth + 1, depth + 1))?;
        // From here on dropping `ib` drains and frees in order.
        let ib = Self {
            qp: Some(qp),
            cq,
            _pd: pd,
        };
        ib.cq.handler().post_all_recvs(&ib.poster()?)?;
        Ok(ib)
    }

    /// A poster on the queue's QP.
    fn poster(&self) -> Result<Poster<'_, Ring>> {
        self.cq.poster(self.qp.as_ref().ok_or(ENODEV)?)
    }

    /// Host: one message in flight on every send slot.
    fn start_sends(&self) {
        if let Ok(post) = self.poster() {
            self.cq.handler().start_sends(&post);
        }
    }

    /// `ib_drain_qp` (once).
    pub(crate) fn drain(&mut self) {
        if let Some(qp) = self.qp.as_mut() {
            qp.drain();
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
        // The fields drop next, in order: `cq` (then its ring), `_pd`.
    }
}

/// A host send slot's state.
struct Slot {
    /// Completions (send, echo) still due before reuse.
    pending: Atomic<u32>,
    seq: Atomic<u64>,
}

/// A queue's buffers and its completion handler.
///
/// Buffer slot `i` (`MSG_LEN` bytes at `i * MSG_LEN`) is posted with work
/// request slot `i`: sends are `0..depth`, receives follow.
struct Ring {
    traffic: Arc<Traffic>,
    lkey: u32,
    depth: usize,
    host: bool,
    buf: DmaBuf,
    /// The send slots' state.
    slots: KVec<Slot>,
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
    fn new(queue: &Queue, pd: &Pd, buf: DmaBuf, host: bool) -> Result<Self> {
        let depth = queue.depth as usize;
        let mut slots = KVec::with_capacity(depth, GFP_KERNEL)?;
        for _ in 0..depth {
            slots.push(
                Slot {
                    pending: Atomic::new(0),
                    seq: Atomic::new(0),
                },
                GFP_KERNEL,
            )?;
        }
        Ok(Ring {
            traffic: queue.traffic.clone(),
            lkey: pd.local_dma_lkey(),
            depth,
            host,
            buf,
            slots,
        })
    }

    fn offset(wr: usize) -> usize {
        wr * MSG_LEN
    }

    /// Posts the receive of slot `wr` unless the queue is stopped.
    fn post_recv(&self, post: &Poster<'_, Self>, wr: usize) -> Result {
        if self.traffic.stopped.load(Relaxed) {
            return Ok(());
        }
        let res = post.post_recv(wr, Self::offset(wr), MSG_LEN, self.lkey);
        if res.is_err() {
            self.traffic.errors.add(1, Relaxed);
        }
        res
    }

    /// Copies `msg` into send slot `wr` and posts it unless stopped.
    ///
    /// # Safety
    ///
    /// No send from slot `wr` is outstanding on the device.
    unsafe fn post_msg(&self, post: &Poster<'_, Self>, wr: usize, msg: &[u8; MSG_LEN]) {
        let slot = &self.slots[wr];
        if self.traffic.stopped.load(Relaxed) {
            slot.pending.store(0, Relaxed);
            return;
        }
        let off = Self::offset(wr);
        // SAFETY: no send uses the range (caller); the range is not written
        // again until the send completed (the caller's contract for the
        // next message).
        let res = unsafe { self.buf.write(off, msg) }
            .and_then(|()| post.post_send(wr, off, MSG_LEN, self.lkey));
        if res.is_err() {
            slot.pending.store(0, Relaxed);
            self.traffic.errors.add(1, Relaxed);
        }
    }

    fn post_all_recvs(&self, post: &Poster<'_, Self>) -> Result {
        for wr in self.depth..2 * self.depth {
            self.post_recv(post, wr)?;
        }
        Ok(())
    }

    /// Host: the next message of send slot `wr`.
    fn send_next(&self, post: &Poster<'_, Self>, wr: usize) {
        let slot = &self.slots[wr];
        slot.pending.store(2, Release);
        let seq = slot.seq.fetch_add(1, Relaxed) + 1;
        // SAFETY: `pending` reached zero (or the slot was never used): the
        // slot's send completed and its echo arrived.
        unsafe { self.post_msg(post, wr, &encode(wr as u32, seq)) };
    }

    /// Host: one message in flight on every send slot.
    fn start_sends(&self, post: &Poster<'_, Self>) {
        for wr in 0..self.depth {
            self.send_next(post, wr);
        }
    }

    fn completion_ok(&self, status: WcStatus) -> bool {
        match status {
            WcStatus::Success => true,
            WcStatus::WrFlushErr => false,
            WcStatus::Other(_) => {
                self.traffic.errors.add(1, Relaxed);
                false
            }
        }
    }

    fn send_done(&self, post: &Poster<'_, Self>, wr: usize, wc: &Completion<'_>) {
        if !self.completion_ok(wc.status()) {
            return;
        }
        self.traffic.sends.add(1, Relaxed);
        if self.host && self.slots[wr].pending.fetch_sub(1, Full) == 1 {
            self.send_next(post, wr);
        }
    }

    fn recv_done(&self, post: &Poster<'_, Self>, wr: usize, wc: &Completion<'_>) {
        if !self.completion_ok(wc.status()) {
            return;
        }
        let t = &self.traffic;
        let mut msg = [0u8; MSG_LEN];
        // SAFETY: the receive completed; the slot is reposted only below.
        let read = unsafe { self.buf.read(Self::offset(wr), &mut msg) };
        let sidx = decode(&msg).map(|s| s as usize).filter(|&s| s < self.depth);
        let _ = self.post_recv(post, wr);
        let (Ok(()), Some(sidx), true) = (read, sidx, wc.byte_len() as usize == MSG_LEN) else {
            t.errors.add(1, Relaxed);
            return;
        };
        t.recvs.add(1, Relaxed);
        if self.host {
            if self.slots[sidx].pending.fetch_sub(1, Full) == 1 {
                self.send_next(post, sidx);
            }
        } else {
            // SAFETY: the host sends the next message of slot `sidx` only
            // after it received our previous echo from this slot, so the
            // device has finished reading that send's buffer.
            unsafe { self.post_msg(post, sidx, &msg) };
        }
    }
}

impl CompletionHandler for Ring {
    fn dma_buf(&self) -> &DmaBuf {
        &self.buf
    }

    fn done(&self, wr: usize, wc: &Completion<'_>, post: &Poster<'_, Self>) {
        if wr < self.depth {
            self.send_done(post, wr, wc);
        } else {
            self.recv_done(post, wr, wc);
        }
    }
}
