// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The target: listens, accepts each queue with its own PD, CQ and RC QP,
//! and echoes every message.
//!
//! C source mirrored: drivers/nvme/target/rdma.c (`nvmet_rdma_enable_port`,
//! `nvmet_rdma_queue_connect`, `nvmet_rdma_cm_handler`,
//! `nvmet_rdma_queue_disconnect` and the release work).  Device removal:
//! each queue tears itself down in its own handler (stop, drain, destroy
//! its QP) and returns non-zero so that rdma_cm destroys its cm_id; the
//! listener is given back the same way.  A queue whose host disconnected
//! first is released by a work item instead (its handler only queues it).

use crate::{
    host::Hello,
    queue::{Kind, Order, Owner, Queue, MAX_DEPTH},
    ulp::cm::{CmId, CmIdRef, ConnParam, Disposition, Event, EventKind, SockAddrIn},
};
use core::fmt;
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, ArcBorrow, Mutex,
    },
    workqueue,
};

/// The target (one port, one subsystem).
#[pin_data]
pub(crate) struct Target {
    addr: SockAddrIn,
    wq: &'static workqueue::Queue,
    #[pin]
    listener: Mutex<Option<Arc<Queue>>>,
    /// Accepted queues that are not released yet.
    #[pin]
    queues: Mutex<KVec<Arc<Queue>>>,
    accepted: Atomic<u32>,
    torn_down: Atomic<u32>,
}

impl Target {
    pub(crate) fn new(addr: SockAddrIn, wq: &'static workqueue::Queue) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                addr,
                wq,
                listener <- new_mutex!(None, "Target::listener"),
                queues <- new_mutex!(KVec::new(), "Target::queues"),
                accepted: Atomic::new(0),
                torn_down: Atomic::new(0),
            }),
            GFP_KERNEL,
        )
    }

    /// Binds to the address and listens (`nvmet_rdma_enable_port`).
    pub(crate) fn listen(self: &Arc<Self>) -> Result {
        let lq = Queue::new(Owner::Target(self.clone()), 0, Kind::Listener, 0)?;
        let id = CmId::new(lq.clone())?;
        if let Err(e) = id.bind_addr(&self.addr).and_then(|()| id.listen(0)) {
            id.destroy();
            return Err(e);
        }
        lq.set_id(id);
        lq.set_live();
        *self.listener.lock() = Some(lq);
        Ok(())
    }

    /// A connect request (`nvmet_rdma_queue_connect`): a queue of the
    /// requested depth with its own PD, CQ and QP, receives posted, accepted.
    pub(crate) fn connect_request(
        self: &Arc<Self>,
        id: &CmIdRef,
        ev: &Event<'_>,
    ) -> Result<Arc<Queue>> {
        let hello = Hello::decode(ev.private_data()).ok_or(EINVAL)?;
        let depth = u32::from(hello.depth).clamp(1, MAX_DEPTH);
        let qid = u32::from(hello.qid);
        // A stuck handler on purpose (module parameters stall_qid/stall_ms):
        // the iWARP CM's stuck-handler report names it, and with the Rust
        // iw_cm no other cm_id's events wait for it.
        let stall_qid = crate::module_parameters::stall_qid.value();
        let stall_ms = crate::module_parameters::stall_ms.value();
        if stall_ms > 0 && i64::from(stall_qid) == i64::from(qid) {
            pr_info!(
                "target: queue {} CONNECT_REQUEST handler stalls {} ms\n",
                qid,
                stall_ms
            );
            kernel::time::delay::fsleep(kernel::time::Delta::from_millis(i64::from(stall_ms)));
        }
        let q = Queue::new(Owner::Target(self.clone()), qid, Kind::of_qid(qid), depth)?;
        // Room in the list first: nothing may fail after the accept.
        self.queues.lock().reserve(1, GFP_KERNEL)?;
        q.create_ib(id, false)?;
        if let Err(e) = ConnParam::new(&[], 1).and_then(|p| id.accept(&p)) {
            // rdma_cm destroys the id when we return the error: the QP
            // goes first.
            drop(q.take_ib());
            return Err(e);
        }
        if self.queues.lock().push_within_capacity(q.clone()).is_err() {
            drop(q.take_ib());
            return Err(ENOMEM);
        }
        self.accepted.fetch_add(1, Relaxed);
        Ok(q)
    }

    /// The rdma_cm event handler of the listener and the accepted queues
    /// (`nvmet_rdma_cm_handler`).
    pub(crate) fn event(
        &self,
        q: ArcBorrow<'_, Queue>,
        id: &CmIdRef,
        ev: &Event<'_>,
    ) -> Disposition<Queue> {
        if q.kind == Kind::Listener {
            if ev.kind() == EventKind::DeviceRemoval && q.claim() {
                // The listener goes with the device (rdma_cm destroys it).
                q.set_deleted();
                pr_info!("target: DEVICE_REMOVAL on the listener\n");
                if let Some(cm) = q.take_id() {
                    return Disposition::Destroy(cm);
                }
            }
            return Disposition::Keep;
        }
        match ev.kind() {
            EventKind::Established => q.set_live(),
            EventKind::Disconnected
            | EventKind::AddrChange
            | EventKind::TimewaitExit
            | EventKind::ConnectError
            | EventKind::Unreachable
            | EventKind::Rejected => {
                // `nvmet_rdma_queue_disconnect`: release in a work item, never
                // in the handler (it may run on the iWARP CM's workqueue).
                if q.claim() {
                    q.set_closed();
                    let _ = self.wq.enqueue(Arc::from(q));
                }
            }
            EventKind::DeviceRemoval => {
                if !q.claim() {
                    // Its release work owns the teardown.
                    return Disposition::Keep;
                }
                q.stop();
                let own = q.take_id();
                let ib = q.take_ib();
                let _ = id.disconnect();
                if let Some(ib) = ib {
                    ib.destroy_via(id);
                }
                q.set_deleted();
                self.forget(&q);
                self.torn_down.fetch_add(1, Relaxed);
                if let Some(cm) = own {
                    return Disposition::Destroy(cm);
                }
            }
            _ => {}
        }
        Disposition::Keep
    }

    fn forget(&self, q: &Queue) {
        self.queues
            .lock()
            .retain(|x| !core::ptr::eq::<Queue>(&**x, q));
    }

    /// The release work of a queue whose host went away.
    pub(crate) fn release(&self, q: &Arc<Queue>) {
        q.teardown(Order::QpFirst);
        self.forget(q);
        self.torn_down.fetch_add(1, Relaxed);
    }

    /// Module unload: stop listening, then release every queue.  The caller
    /// flushes the workqueue afterwards (release work in flight).
    pub(crate) fn shutdown(&self) {
        let lq = self.listener.lock().take();
        if let Some(lq) = lq {
            if lq.claim() {
                if let Some(id) = lq.take_id() {
                    id.destroy();
                }
                lq.set_deleted();
            }
        }
        let queues = core::mem::take(&mut *self.queues.lock());
        for q in queues.iter() {
            if q.claim() {
                q.teardown(Order::QpFirst);
                self.torn_down.fetch_add(1, Relaxed);
            }
        }
    }

    /// The debugfs file `target`.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "role target")?;
        let listening = self.listener.lock().as_ref().is_some_and(|l| l.is_live());
        writeln!(f, "listening {}", u8::from(listening))?;
        writeln!(f, "accepted {}", self.accepted.load(Relaxed))?;
        writeln!(f, "torn_down {}", self.torn_down.load(Relaxed))?;
        let g = self.queues.lock();
        writeln!(f, "queues {}", g.len())?;
        for q in g.iter() {
            q.show(f)?;
        }
        Ok(())
    }
}
