// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The host: one controller with an admin queue and N I/O queues, each on
//! its own rdma_cm id, and its device-removal path in the 2016 nvme-rdma
//! shape.
//!
//! C source mirrored: drivers/nvme/host/rdma.c (`nvme_rdma_alloc_queue`,
//! `nvme_rdma_cm_handler`, `nvme_rdma_addr_resolved`,
//! `nvme_rdma_route_resolved`, `nvme_rdma_delete_ctrl`), and for the
//! removal path `nvme_rdma_device_unplug()` as it was in Linux 4.8 (2016):
//! inside the cm handler of the queue that got
//! `RDMA_CM_EVENT_DEVICE_REMOVAL` it stops the queues, deletes the
//! controller (every other queue: disconnect, drain, destroy QP and cm_id),
//! directly or through a controller-delete work item that it waits for,
//! then returns non-zero so that rdma_cm destroys the event's own cm_id
//! last.  The [`Removal`] parameters select the variants of that path.

use crate::{
    queue::{Kind, Order, Owner, Queue},
    ulp::cm::CmId,
    ulp::cm::{CmIdRef, ConnParam, Disposition, Event, EventKind, SockAddrIn},
    Removal,
};
use core::fmt;
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed, Release},
        Arc, ArcBorrow, Completion, Mutex,
    },
    time::{Instant, Monotonic},
    workqueue::{self, impl_has_work, new_work, Work, WorkItem},
};

/// Address and route resolution timeout (`NVME_RDMA_CM_TIMEOUT_MS`).
const CM_TIMEOUT_MS: u32 = 3000;
/// How long one queue may take to connect.
const CONNECT_TIMEOUT_MS: u32 = 10000;

/// The private data of a connect request (`struct nvme_rdma_cm_req`): the
/// record format, the queue id and its depth.
pub(crate) struct Hello {
    pub(crate) qid: u16,
    pub(crate) depth: u16,
}

impl Hello {
    const RECFMT: u16 = 1;
    const LEN: usize = 8;

    fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..2].copy_from_slice(&Self::RECFMT.to_le_bytes());
        b[2..4].copy_from_slice(&self.qid.to_le_bytes());
        b[4..6].copy_from_slice(&self.depth.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Option<Self> {
        if b.len() < Self::LEN || u16::from_le_bytes([b[0], b[1]]) != Self::RECFMT {
            return None;
        }
        Some(Self {
            qid: u16::from_le_bytes([b[2], b[3]]),
            depth: u16::from_le_bytes([b[4], b[5]]),
        })
    }
}

/// The host controller.
#[pin_data]
pub(crate) struct Host {
    addr: SockAddrIn,
    nr_io_queues: u32,
    depth: u32,
    removal: Removal,
    wq: &'static workqueue::Queue,
    /// Admin queue first; set while connecting, emptied at shutdown.
    #[pin]
    queues: Mutex<KVec<Arc<Queue>>>,
    torn_down: Atomic<u32>,
    /// The controller is being deleted (device removal or unload).
    deleting: Atomic<bool>,
    /// Device removal: the queue whose handler runs it, and how long the
    /// controller deletion took (-1: not yet).
    removal_qid: Atomic<u32>,
    removal_ms: Atomic<i64>,
    #[pin]
    delete_work: Work<Host>,
    #[pin]
    delete_done: Completion,
}

impl_has_work! {
    impl HasWork<Self> for Host { self.delete_work }
}

/// The controller-delete work item of the removal path
/// (`nvme_rdma_del_ctrl_work` of 2016): deletes every queue but the one whose
/// handler waits for it.
impl WorkItem for Host {
    type Pointer = Arc<Host>;

    fn run(this: Arc<Host>) {
        this.delete_others(this.removal_qid.load(Relaxed));
        this.delete_done.complete_all();
    }
}

impl Host {
    pub(crate) fn new(
        addr: SockAddrIn,
        nr_io_queues: u32,
        depth: u32,
        removal: Removal,
        wq: &'static workqueue::Queue,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                addr,
                nr_io_queues,
                depth,
                removal,
                wq,
                queues <- new_mutex!(KVec::new(), "Host::queues"),
                torn_down: Atomic::new(0),
                deleting: Atomic::new(false),
                removal_qid: Atomic::new(0),
                removal_ms: Atomic::new(-1),
                delete_work <- new_work!("Host::delete_work"),
                delete_done <- Completion::new(),
            }),
            GFP_KERNEL,
        )
    }

    /// Connects the admin queue, then the I/O queues, one at a time
    /// (`nvme_rdma_alloc_queue` + `nvme_rdma_wait_for_cm`), then starts the
    /// traffic on every queue.
    pub(crate) fn connect(self: &Arc<Self>) -> Result {
        for qid in 0..=self.nr_io_queues {
            let q = Queue::new(
                Owner::Host(self.clone()),
                qid,
                Kind::of_qid(qid),
                self.depth,
            )?;
            self.queues.lock().push(q.clone(), GFP_KERNEL)?;
            let id = CmId::new(q.clone())?;
            if let Err(e) = id.resolve_addr(&self.addr, CM_TIMEOUT_MS) {
                id.destroy();
                q.set_deleted();
                return Err(e);
            }
            q.set_id(id);
            if let Err(e) = q.wait_connected(CONNECT_TIMEOUT_MS) {
                pr_err!("host: queue {} did not connect: {:?}\n", qid, e);
                return Err(e);
            }
        }
        for q in self.snapshot()?.iter() {
            q.start_traffic();
        }
        pr_info!(
            "host: connected 1 admin + {} I/O queues of depth {}, traffic running\n",
            self.nr_io_queues,
            self.depth
        );
        Ok(())
    }

    fn snapshot(&self) -> Result<KVec<Arc<Queue>>> {
        let g = self.queues.lock();
        let mut v = KVec::with_capacity(g.len(), GFP_KERNEL)?;
        for q in g.iter() {
            v.push(q.clone(), GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// The rdma_cm event handler of the host's queues (`nvme_rdma_cm_handler`).
    pub(crate) fn event(
        &self,
        q: ArcBorrow<'_, Queue>,
        id: &CmIdRef,
        ev: &Event<'_>,
    ) -> Disposition<Queue> {
        match ev.kind() {
            EventKind::AddrResolved => {
                let res = q
                    .create_ib(id, true)
                    .and_then(|()| id.resolve_route(CM_TIMEOUT_MS));
                if let Err(e) = res {
                    q.conn_done(Err(e));
                }
            }
            EventKind::RouteResolved => {
                let hello = Hello {
                    qid: q.qid as u16,
                    depth: q.depth as u16,
                }
                .encode();
                let res = ConnParam::new(&hello, 1).and_then(|p| id.connect_locked(&p));
                if let Err(e) = res {
                    q.conn_done(Err(e));
                }
            }
            EventKind::Established => {
                q.set_live();
                q.conn_done(Ok(()));
            }
            EventKind::Rejected
            | EventKind::ConnectError
            | EventKind::Unreachable
            | EventKind::AddrError
            | EventKind::RouteError => {
                pr_err!(
                    "host: queue {}: {:?} (status {})\n",
                    q.qid,
                    ev.kind(),
                    ev.status()
                );
                q.set_closed();
                q.conn_done(Err(ECONNRESET));
            }
            EventKind::Disconnected | EventKind::AddrChange | EventKind::TimewaitExit => {
                // nvme-rdma starts error recovery here; the sample stops.
                q.set_closed();
                q.conn_done(Err(ECONNRESET));
            }
            EventKind::DeviceRemoval => return self.device_removal(q, id),
            _ => {}
        }
        Disposition::Keep
    }

    /// `RDMA_CM_EVENT_DEVICE_REMOVAL` on queue `own`: the 2016
    /// `nvme_rdma_device_unplug()` shape, variants per [`Removal`].
    fn device_removal(&self, own: ArcBorrow<'_, Queue>, id: &CmIdRef) -> Disposition<Queue> {
        // Own the controller deletion (one removal event does it).
        if !own.claim() {
            return Disposition::Keep;
        }
        let r = self.removal;
        pr_info!(
            "host: DEVICE_REMOVAL on queue {}: deleting the controller ({})\n",
            own.qid,
            r
        );
        let start = Instant::<Monotonic>::now();
        self.deleting.store(true, Release);
        // Stop the queues: nothing is posted any more.
        if let Ok(all) = self.snapshot() {
            for q in all.iter() {
                q.stop();
            }
        }
        let own_id = own.take_id();
        let mut own_ib = own.take_ib();
        if r.own_first {
            let _ = id.disconnect();
            if let Some(ib) = own_ib.as_mut() {
                ib.drain();
            }
        }
        if r.in_work {
            self.removal_qid.store(own.qid, Relaxed);
            let this = match &own.owner {
                Owner::Host(h) => h.clone(),
                Owner::Target(_) => return Disposition::Keep,
            };
            if self.wq.enqueue(this).is_ok() {
                self.delete_done.wait_for_completion();
            } else {
                self.delete_others(own.qid);
            }
        } else {
            self.delete_others(own.qid);
        }
        if !r.own_first {
            let _ = id.disconnect();
            if let Some(ib) = own_ib.as_mut() {
                ib.drain();
            }
        }
        // The own queue's QP goes now; rdma_cm destroys its cm_id after we
        // return.
        if let Some(ib) = own_ib {
            ib.destroy_via(id);
        }
        own.set_deleted();
        let n = self.torn_down.fetch_add(1, Relaxed) + 1;
        let ms = start.elapsed().as_millis();
        self.removal_ms.store(ms, Relaxed);
        pr_info!(
            "host: controller deleted in {} ms: {} queues torn down; queue {}'s cm_id goes with the handler's return\n",
            ms,
            n,
            own.qid
        );
        match own_id {
            Some(cm) => Disposition::Destroy(cm),
            None => Disposition::Keep,
        }
    }

    /// Deletes every queue but `skip` (`nvme_rdma_teardown_io_queues` +
    /// admin queue): disconnect, drain, QP and cm_id in the removal order.
    fn delete_others(&self, skip: u32) {
        let Ok(all) = self.snapshot() else {
            pr_err!("host: no memory to delete the controller\n");
            return;
        };
        for q in all.iter().rev().filter(|q| q.qid != skip) {
            if q.claim() {
                q.teardown(self.removal.order);
                self.torn_down.fetch_add(1, Relaxed);
            }
        }
    }

    /// Module unload or failed connect: deletes the controller unless device
    /// removal did, I/O queues first (`nvme_rdma_delete_ctrl`).
    pub(crate) fn shutdown(&self) {
        self.deleting.store(true, Release);
        if let Ok(all) = self.snapshot() {
            for q in all.iter().rev() {
                if q.claim() {
                    q.teardown(Order::QpFirst);
                    self.torn_down.fetch_add(1, Relaxed);
                }
            }
        }
        // The queues refer to the host: let them go.
        let queues = core::mem::take(&mut *self.queues.lock());
        drop(queues);
    }

    /// The debugfs file `host`.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ok(all) = self.snapshot() else {
            return writeln!(f, "no memory");
        };
        let live = all.iter().filter(|q| q.is_live()).count();
        let deleted = all.iter().filter(|q| q.is_deleted()).count();
        writeln!(f, "role host")?;
        writeln!(f, "removal {}", self.removal)?;
        writeln!(f, "queues {}", all.len())?;
        writeln!(f, "live {}", live)?;
        writeln!(f, "deleted {}", deleted)?;
        writeln!(f, "torn_down {}", self.torn_down.load(Relaxed))?;
        writeln!(f, "deleting {}", u8::from(self.deleting.load(Relaxed)))?;
        writeln!(f, "removal_ms {}", self.removal_ms.load(Relaxed))?;
        for q in all.iter() {
            q.show(f)?;
        }
        Ok(())
    }
}
