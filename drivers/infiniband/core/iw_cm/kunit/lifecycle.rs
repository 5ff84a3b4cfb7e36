// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Cases of a cm_id's life against a well-behaved provider.
//!
//! Upcall contexts, the order of the QP reference against CLOSE and a
//! failed CONNECT_REPLY, destroy (of a connected id, after the device is
//! gone, from the own handler), API misuse, listeners (backlog, queued
//! CONNECT_REQUESTs and their children, a destroyed listener's requests),
//! handlers that block, destroy or fail, and `iwcm_reject_msg`.

use super::{bad_input::*, fake_provider::*, fake_ulp::*, table::*};
use crate::bindings;
use crate::iface;
use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{AtomicI32, AtomicPtr, Ordering::SeqCst};
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow, Completion};
use kernel::time::hrtimer::{
    HrTimer, HrTimerCallback, HrTimerCallbackContext, HrTimerPointer, HrTimerRestart,
    RelativeSoftMode,
};
use kernel::time::{Delta, Monotonic};

/// Defines `$name`, whose `fire(id, kind)` makes one upcall of event
/// `kind` on `id` from an hrtimer callback in `$mode` and returns the
/// upcall's result.
macro_rules! irq_upcall {
    ($name:ident, $mode:ty) => {
        #[pin_data]
        struct $name {
            #[pin]
            timer: HrTimer<Self>,
            id: AtomicPtr<bindings::iw_cm_id>,
            kind: u32,
            ret: AtomicI32,
            #[pin]
            done: Completion,
        }

        impl $name {
            fn fire(id: *mut bindings::iw_cm_id, kind: u32) -> Result<i32> {
                let t = Arc::pin_init(
                    pin_init!(Self {
                        timer <- HrTimer::new(),
                        id: AtomicPtr::new(id),
                        kind,
                        ret: AtomicI32::new(i32::MIN),
                        done <- Completion::new(),
                    }),
                    GFP_KERNEL,
                )?;
                let handle = t.clone().start(Delta::from_micros(100));
                t.done.wait_for_completion();
                drop(handle);
                Ok(t.ret.load(SeqCst))
            }
        }

        impl HrTimerCallback for $name {
            type Pointer<'a> = Arc<Self>;

            fn run(
                this: ArcBorrow<'_, Self>,
                _ctx: HrTimerCallbackContext<'_, Self>,
            ) -> HrTimerRestart {
                this.ret.store(upcall(this.id.load(SeqCst), this.kind, 0), SeqCst);
                this.done.complete_all();
                HrTimerRestart::NoRestart
            }
        }

        kernel::impl_has_hr_timer! {
            impl HasHrTimer<Self> for $name {
                mode: $mode, field: self.timer
            }
        }
    };
}
// Softirq context, as siw's socket callbacks (`siw_rtr_data_ready`, an
// `sk_data_ready` upcall, sends ESTABLISHED from there).  Not hard
// interrupt context: the cm_id lock is a spinlock_t, as in iwcm.c.
irq_upcall!(SoftIrqUpcall, RelativeSoftMode<Monotonic>);

/// The upcall may come from softirq context (iwcm.c takes its cm_id
/// lock with spin_lock_irqsave everywhere for this reason): events from
/// softirq, mixed with process-context calls and upcalls on the same
/// cm_id, are delivered in order and leave lockdep quiet.
pub(super) fn upcalls_from_softirq_context() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let id = create(&mut dev, 12)?;
    assert_eq!(connect(id), 0);
    assert_eq!(SoftIrqUpcall::fire(id, EV_REPLY)?, 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 1));
    assert_eq!(event(0), (12, EV_REPLY, 1));
    // SAFETY: `id` is live and owned by the test.
    assert_eq!(unsafe { bindings::iw_cm_disconnect(id, 0) }, 0);
    assert_eq!(upcall(id, EV_DISC, 0), 0);
    assert_eq!(SoftIrqUpcall::fire(id, EV_CLOSE)?, 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 2));
    assert_eq!(event(1), (12, EV_CLOSE, 0));
    // A late event after CLOSE, from softirq: dropped, not delivered.
    assert_eq!(SoftIrqUpcall::fire(id, EV_DISC)?, 0);
    provider_release(id);
    // SAFETY: the test owns `id`.
    unsafe { bindings::iw_destroy_cm_id(id) };
    assert!(wait_live(base));
    assert_eq!(NEVENTS.load(SeqCst), 2);
    assert_eq!(QP_REFS.load(SeqCst), 0);
    Ok(())
}

pub(super) fn close_is_delivered_after_the_qp_reference_is_dropped() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let id = create(&mut dev, 1)?;
    assert_eq!(connect(id), 0);
    assert_eq!(QP_REFS.load(SeqCst), 1);
    assert_eq!(upcall(id, EV_REPLY, 0), 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 1));
    assert_eq!(event(0), (1, EV_REPLY, 1));
    // The ULP sees its own addresses in the CONNECT_REPLY; the wire's
    // are kept as the mapped ones (iwcm.c cm_conn_rep_handler).
    assert_eq!(REPLY_LOCAL.load(SeqCst), addr_key(inet(ULP_LOCAL)));
    assert_eq!(REPLY_REMOTE.load(SeqCst), addr_key(inet(ULP_REMOTE)));
    // SAFETY: `id` is live and owned by the test.
    let (ml, mr) = unsafe { ((*id).m_local_addr, (*id).m_remote_addr) };
    assert_eq!(ipv4_of(&ml), inet(WIRE_LOCAL));
    assert_eq!(ipv4_of(&mr), inet(WIRE_REMOTE));
    // SAFETY: `id` is live.
    assert_eq!(unsafe { bindings::iw_cm_disconnect(id, 0) }, 0);
    assert_eq!(QP_TO_SQD.load(SeqCst), 1);
    assert_eq!(upcall(id, EV_DISC, 0), 0);
    assert_eq!(upcall(id, EV_CLOSE, 0), 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 2));
    // CLOSE reached the ULP with iw_cm's QP reference already gone.
    assert_eq!(event(1), (1, EV_CLOSE, 0));
    provider_release(id);
    // SAFETY: the test owns `id`.
    unsafe { bindings::iw_destroy_cm_id(id) };
    assert!(wait_live(base));
    assert_eq!(QP_REFS.load(SeqCst), 0);
    Ok(())
}

pub(super) fn failed_connect_reply_drops_the_qp_reference_first() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let id = create(&mut dev, 2)?;
    assert_eq!(connect(id), 0);
    assert_eq!(
        upcall(id, EV_REPLY, -(kernel::bindings::ECONNREFUSED as i32)),
        0
    );
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 1));
    assert_eq!(event(0), (2, EV_REPLY, 0));
    // The id is idle again: it may connect anew (iwcm.c semantics).
    provider_release(id);
    // SAFETY: the test owns `id`.
    unsafe { bindings::iw_destroy_cm_id(id) };
    assert!(wait_live(base));
    assert_eq!(QP_REFS.load(SeqCst), 0);
    Ok(())
}

pub(super) fn destroy_of_a_connected_id_resets_the_qp_and_drops_later_events() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let id = create(&mut dev, 3)?;
    assert_eq!(connect(id), 0);
    assert_eq!(upcall(id, EV_REPLY, 0), 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 1));
    // SAFETY: the test owns `id`.
    unsafe { bindings::iw_destroy_cm_id(id) };
    assert_eq!(QP_TO_ERR.load(SeqCst), 1);
    assert_eq!(QP_REFS.load(SeqCst), 0);
    // The provider still holds the cm_id: its late CLOSE is dropped.
    assert_eq!(iface::live(), base + 1);
    assert_eq!(upcall(id, EV_CLOSE, 0), 0);
    provider_release(id);
    assert!(wait_live(base));
    assert_eq!(NEVENTS.load(SeqCst), 1);
    Ok(())
}

/// Once the ULP's last reference is gone the device may be unregistered
/// and freed while the provider still holds the cm_id: its late events
/// and its last `rem_ref` must not read the `ib_device` (the upcall's
/// ird/ord limit, the fault log, the table and the traces use what
/// was read at creation).  Here the fake device is freed first: KASAN
/// reports any read of it.
pub(super) fn late_provider_upcalls_after_the_device_is_gone() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let id = create(&mut dev, 44)?;
    assert_eq!(connect(id), 0);
    // SAFETY: the test owns `id`.
    unsafe { bindings::iw_destroy_cm_id(id) };
    assert_eq!(QP_REFS.load(SeqCst), 0);
    drop(dev);
    assert_eq!(upcall(id, EV_REPLY, 0), 0);
    assert_eq!(upcall(id, EV_CLOSE, 0), 0);
    provider_release(id);
    assert!(wait_live(base));
    assert_eq!(NEVENTS.load(SeqCst), 0);
    Ok(())
}

pub(super) fn api_misuse_returns_einval_and_leaves_no_reference() -> Result {
    reset();
    let base = iface::live();
    let einval = -(kernel::bindings::EINVAL as i32);
    let mut dev = FakeDev::new()?;
    let id = create(&mut dev, 4)?;
    let mut p = bindings::iw_cm_conn_param {
        qpn: FAKE_QPN,
        ..Default::default()
    };
    // SAFETY: `id` is live and owned by the test; `p` is valid.
    unsafe {
        assert_eq!(bindings::iw_cm_accept(id, &mut p), einval);
        assert_eq!(bindings::iw_cm_reject(id, ptr::null(), 0), einval);
        assert_eq!(bindings::iw_cm_listen(id, -1), einval);
    }
    assert_eq!(QP_REFS.load(SeqCst), 0);
    p.qpn = FAKE_QPN + 1;
    // SAFETY: as above.
    assert_eq!(unsafe { bindings::iw_cm_connect(id, &mut p) }, einval);
    assert_eq!(connect(id), 0);
    assert_eq!(connect(id), einval);
    assert_eq!(QP_REFS.load(SeqCst), 1);
    provider_release(id);
    // SAFETY: the test owns `id`.
    unsafe { bindings::iw_destroy_cm_id(id) };
    assert_eq!(QP_REFS.load(SeqCst), 0);

    let l = create(&mut dev, 5)?;
    let mut attr = bindings::ib_qp_attr {
        qp_state: bindings::ib_qp_state_IB_QPS_INIT,
        ..Default::default()
    };
    let mut mask = 0;
    // SAFETY: `l` is live and owned by the test.
    unsafe {
        assert_eq!(bindings::iw_cm_init_qp_attr(l, &mut attr, &mut mask), 0);
        assert_eq!(bindings::iw_cm_listen(l, 4), 0);
        assert_eq!(bindings::iw_cm_disconnect(l, 0), einval);
        assert_eq!(
            bindings::iw_cm_init_qp_attr(l, &mut attr, &mut mask),
            einval
        );
        assert_eq!(bindings::iw_cm_listen(l, 4), einval);
        bindings::iw_destroy_cm_id(l);
    }
    assert_eq!(UNLISTENS.load(SeqCst), 1);
    assert!(wait_live(base));
    Ok(())
}

/// A backlog above the cap (65536) is clamped to it: the listener
/// listens, with a ring of 65536 slots, and the provider is asked for
/// 65536, as rdma_ucm's users expect (it passes its `max_backlog`,
/// which root may raise above the cap, for `rdma_listen(id, 0)`, and
/// iwcm.c takes any backlog).  A negative one is still refused.  (It
/// was refused with -EINVAL before anything was allocated.)
pub(super) fn backlog_above_the_cap_is_clamped() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    for (i, backlog) in [65537, i32::MAX].into_iter().enumerate() {
        let l = create(&mut dev, 43)?;
        // SAFETY: `l` is live and owned by the test.
        assert_eq!(unsafe { bindings::iw_cm_listen(l, backlog) }, 0);
        assert_eq!(LISTENS.load(SeqCst), i as u32 + 1);
        assert_eq!(LISTEN_BACKLOG.load(SeqCst), 65536);
        assert_eq!(iface::event_slots(table_number(l)), Some(65536));
        // SAFETY: the test owns `l`.
        unsafe { bindings::iw_destroy_cm_id(l) };
    }
    let l = create(&mut dev, 43)?;
    // SAFETY: `l` is live and owned by the test.
    assert_eq!(unsafe { bindings::iw_cm_listen(l, -1) }, EINVAL.to_errno());
    assert_eq!(LISTENS.load(SeqCst), 2);
    // Still idle: a backlog within the cap listens, as asked.
    // SAFETY: as above.
    assert_eq!(unsafe { bindings::iw_cm_listen(l, 2) }, 0);
    assert_eq!(LISTEN_BACKLOG.load(SeqCst), 2);
    // SAFETY: the test owns `l`.
    unsafe { bindings::iw_destroy_cm_id(l) };
    assert!(wait_live(base));
    Ok(())
}

/// A queued CONNECT_REQUEST costs its child cm_id alone: the child's
/// event slots are reserved when the request is delivered, in process
/// context, not in the provider's upcall.  (The upcall reserved them:
/// a queued child had its three slots.)
pub(super) fn a_queued_request_costs_its_child_alone() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let l = create(&mut dev, 44)?;
    // SAFETY: `l` is live and owned by the test.
    assert_eq!(unsafe { bindings::iw_cm_listen(l, 2) }, 0);
    MODE.store(MODE_BLOCK_FIRST_REQ, SeqCst);
    assert_eq!(upcall(l, EV_REQ, 0), 0);
    assert!(wait_until(|| BLOCKED.load(SeqCst)));
    // The second request waits behind the first one's handler.
    assert_eq!(upcall(l, EV_REQ, 0), 0);
    let mut slots = [usize::MAX; 2];
    // SAFETY: `l` is live and owned by the test.
    assert_eq!(unsafe { iface::queued_children_slots(l, &mut slots) }, 1);
    assert_eq!(slots[0], 0);
    RELEASE.store(true, SeqCst);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 2));
    let child = CHILD.load(SeqCst);
    // Its slots came with the delivery: its events are queued.
    assert_eq!(iface::event_slots(table_number(child)), Some(3));
    assert_eq!(accept(child), 0);
    assert_eq!(upcall(child, EV_EST, 0), 0);
    assert_eq!(upcall(child, EV_DISC, 0), 0);
    assert_eq!(upcall(child, EV_CLOSE, 0), 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 4));
    provider_release(child);
    // SAFETY: the test owns the three ids; the unaccepted first child
    // is rejected.
    unsafe {
        bindings::iw_destroy_cm_id(CHILDREN[0].load(SeqCst));
        bindings::iw_destroy_cm_id(child);
        bindings::iw_destroy_cm_id(l);
    }
    assert_eq!(REJECTS.load(SeqCst), 1);
    assert!(wait_live(base));
    Ok(())
}

/// A CONNECT_REQUEST's child enters the table only when its request
/// is delivered, once its addresses and state are written: a table
/// reader never sees a child being set up (the writes assume no one
/// else can reach it), and a queued request's child is neither listed
/// nor counted.  (It was published in the upcall, when allocated: a
/// queued child was listed, Idle, without addresses.)
pub(super) fn a_request_child_enters_the_table_when_delivered() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let l = create(&mut dev, 45)?;
    // SAFETY: `l` is live and owned by the test.
    assert_eq!(unsafe { bindings::iw_cm_listen(l, 2) }, 0);
    MODE.store(MODE_BLOCK_FIRST_REQ, SeqCst);
    assert_eq!(upcall(l, EV_REQ, 0), 0);
    assert!(wait_until(|| BLOCKED.load(SeqCst)));
    // The second request's child exists (the live count has it) but
    // waits, unlisted, behind the first one's handler.
    assert_eq!(upcall(l, EV_REQ, 0), 0);
    assert_eq!(iface::live(), base + 3);
    let first = CHILDREN[0].load(SeqCst);
    let Some((count, listed)) = read_table(64)? else {
        panic!("table read out of order");
    };
    assert_eq!((count, listed.len()), (base + 2, base + 2));
    assert!(listed.contains(&table_number(l)));
    assert!(listed.contains(&table_number(first)));
    // The child being delivered is listed set up: passive, ConnRecv.
    let (mut buf, mut f) = ([0u8; 512], [""; 16]);
    assert_eq!(table_fields(first, &mut buf, &mut f), 14);
    assert_eq!((f[1], f[2]), ("passive", "ConnRecv"));
    RELEASE.store(true, SeqCst);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 2));
    let second = CHILD.load(SeqCst);
    let Some((count, listed)) = read_table(64)? else {
        panic!("table read out of order");
    };
    assert_eq!((count, listed.len()), (base + 3, base + 3));
    assert!(listed.contains(&table_number(second)));
    // SAFETY: the test owns the three ids; both children are rejected.
    unsafe {
        bindings::iw_destroy_cm_id(first);
        bindings::iw_destroy_cm_id(second);
        bindings::iw_destroy_cm_id(l);
    }
    assert_eq!(REJECTS.load(SeqCst), 2);
    assert!(wait_live(base));
    Ok(())
}

/// A listener's event ring needs one slot per backlog entry (iwcm.c
/// allocates one work entry each); a large backlog must not need one
/// physically contiguous allocation.  20000 slots are about 6 MB, more
/// than kmalloc can give (KMALLOC_MAX_SIZE, 4 MB on x86_64).
pub(super) fn listen_with_a_backlog_beyond_kmalloc_max() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let l = create(&mut dev, 13)?;
    // SAFETY: `l` is live and owned by the test.
    assert_eq!(unsafe { bindings::iw_cm_listen(l, 20000) }, 0);
    assert_eq!(LISTENS.load(SeqCst), 1);
    assert_eq!(upcall(l, EV_REQ, 0), 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 1));
    let child = CHILD.load(SeqCst);
    // SAFETY: the test owns both ids; the unaccepted child is rejected.
    unsafe {
        bindings::iw_destroy_cm_id(child);
        bindings::iw_destroy_cm_id(l);
    }
    assert_eq!(UNLISTENS.load(SeqCst), 1);
    assert!(wait_live(base));
    Ok(())
}

pub(super) fn child_destroyed_inside_its_connect_request() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let l = create(&mut dev, 6)?;
    // SAFETY: `l` is live and owned by the test.
    assert_eq!(unsafe { bindings::iw_cm_listen(l, 2) }, 0);
    MODE.store(MODE_DESTROY_CHILD_IN_REQ, SeqCst);
    assert_eq!(upcall(l, EV_REQ, 0), 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 1));
    // Destroying the unaccepted child rejects it at the provider.
    assert!(wait_until(|| REJECTS.load(SeqCst) == 1));
    assert!(wait_live(base + 1));
    // SAFETY: the test owns `l`.
    unsafe { bindings::iw_destroy_cm_id(l) };
    assert!(wait_live(base));
    Ok(())
}

pub(super) fn failing_connect_request_handler_rejects_and_frees_the_child() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let l = create(&mut dev, 7)?;
    // SAFETY: `l` is live and owned by the test.
    assert_eq!(unsafe { bindings::iw_cm_listen(l, 2) }, 0);
    MODE.store(MODE_FAIL_REQ, SeqCst);
    for _ in 0..2 {
        assert_eq!(upcall(l, EV_REQ, 0), 0);
    }
    assert!(wait_until(|| REJECTS.load(SeqCst) == 2));
    assert!(wait_live(base + 1));
    // SAFETY: the test owns `l`.
    unsafe { bindings::iw_destroy_cm_id(l) };
    assert!(wait_live(base));
    Ok(())
}

pub(super) fn accepted_child_gets_established_then_close() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let l = create(&mut dev, 8)?;
    // SAFETY: `l` is live and owned by the test.
    assert_eq!(unsafe { bindings::iw_cm_listen(l, 2) }, 0);
    assert_eq!(upcall(l, EV_REQ, 0), 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 1));
    let child = CHILD.load(SeqCst);
    // With no port mapper daemon the child gets the listener's local
    // address and the wire's remote address; the mapped (m_*)
    // addresses are the wire's (iwcm.c cm_conn_req_handler).
    // SAFETY: the child is ours since its CONNECT_REQUEST.
    let c = unsafe { &*child };
    assert_eq!(ipv4_of(&c.local_addr), inet(ULP_LOCAL));
    assert_eq!(ipv4_of(&c.remote_addr), inet(WIRE_REMOTE));
    assert_eq!(ipv4_of(&c.m_local_addr), inet(WIRE_LOCAL));
    assert_eq!(ipv4_of(&c.m_remote_addr), inet(WIRE_REMOTE));
    assert_eq!(accept(child), 0);
    assert_eq!(QP_REFS.load(SeqCst), 1);
    assert_eq!(upcall(child, EV_EST, 0), 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 2));
    // (Delivered before the CLOSE upcall, which gives the QP back.)
    assert_eq!(event(1), (8, EV_EST, 1));
    assert_eq!(upcall(child, EV_DISC, 0), 0);
    assert_eq!(upcall(child, EV_CLOSE, 0), 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 3));
    assert_eq!(event(2), (8, EV_CLOSE, 0));
    provider_release(child);
    // SAFETY: the test owns both ids.
    unsafe {
        bindings::iw_destroy_cm_id(child);
        bindings::iw_destroy_cm_id(l);
    }
    assert!(wait_live(base));
    Ok(())
}

/// A listener of `tag` (backlog 2), the child of its one CONNECT_REQUEST,
/// accepted: the preamble of the cases on an accepted passive cm_id.
fn accepted_child(
    dev: &mut FakeDev,
    tag: usize,
) -> Result<(*mut bindings::iw_cm_id, *mut bindings::iw_cm_id)> {
    let l = create(dev, tag)?;
    // SAFETY: `l` is live and owned by the test.
    ensure!(unsafe { bindings::iw_cm_listen(l, 2) } == 0);
    ensure!(upcall(l, EV_REQ, 0) == 0);
    ensure!(wait_until(|| NEVENTS.load(SeqCst) == 1));
    let child = CHILD.load(SeqCst);
    ensure!(accept(child) == 0);
    Ok((l, child))
}

/// siw, when the peer asked for an RTR frame and closed before sending
/// it: DISCONNECT then CLOSE on an accepted child that never got
/// ESTABLISHED.  The ULP hears CLOSE (rdma_cm: DISCONNECTED) with
/// iw_cm's QP reference already gone; iwcm.c reaches BUG() here.
pub(super) fn accepted_child_hears_close_when_the_peer_closes_first() -> Result {
    reset();
    let base = iface::live();
    let faults = iface::provider_faults();
    let mut dev = FakeDev::new()?;
    let (l, child) = accepted_child(&mut dev, 14)?;
    assert_eq!(QP_REFS.load(SeqCst), 1);
    assert_eq!(upcall(child, EV_DISC, 0), 0);
    assert_eq!(upcall(child, EV_CLOSE, 0), 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 2));
    assert_eq!(event(1), (14, EV_CLOSE, 0));
    assert_eq!(iface::provider_faults(), faults);
    provider_release(child);
    // SAFETY: the test owns both ids.
    unsafe {
        bindings::iw_destroy_cm_id(child);
        bindings::iw_destroy_cm_id(l);
    }
    assert!(wait_live(base));
    assert_eq!(QP_REFS.load(SeqCst), 0);
    Ok(())
}

/// A peer that asked for an RTR frame and never sends it (or any silent
/// peer): the fake provider never reports ESTABLISHED after the accept.
/// iwcm.c's `iw_cm_disconnect` waits for ESTABLISHED for good (nvmet-rdma's
/// device removal calls it); ours returns at once, having reset the QP
/// (graceful or not), and the ULP hears the CLOSE the provider reports
/// for that reset (siw does, from the QP's move to ERR) with iw_cm's QP
/// reference already gone.  An ESTABLISHED that raced the reset is a
/// provider fault, counted and not delivered.
pub(super) fn disconnect_of_an_accepted_id_does_not_wait_for_established() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let (l, child) = accepted_child(&mut dev, 15)?;
    assert_eq!(QP_REFS.load(SeqCst), 1);
    // SAFETY: the child is the test's since its CONNECT_REQUEST.
    assert_eq!(unsafe { bindings::iw_cm_disconnect(child, 0) }, 0);
    assert_eq!(QP_TO_ERR.load(SeqCst), 1);
    assert_eq!(QP_TO_SQD.load(SeqCst), 0);
    // A second disconnect finds the id closing: nothing more to do.
    // SAFETY: as above.
    assert_eq!(unsafe { bindings::iw_cm_disconnect(child, 1) }, 0);
    assert_eq!(QP_TO_ERR.load(SeqCst), 1);
    let faults = iface::provider_faults();
    expect_faults(false);
    assert_eq!(upcall(child, EV_EST, 0), 0);
    assert_eq!(upcall(child, EV_CLOSE, 0), 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 2));
    // SAFETY: the child is live: the test and the provider hold it.
    let settled = wait_until(|| unsafe { iface::settled(child) });
    expect_no_faults();
    assert!(settled);
    assert_eq!(event(1), (15, EV_CLOSE, 0));
    assert_eq!(iface::provider_faults() - faults, 1);
    assert_eq!(QP_REFS.load(SeqCst), 0);
    provider_release(child);
    // SAFETY: the test owns both ids.
    unsafe {
        bindings::iw_destroy_cm_id(child);
        bindings::iw_destroy_cm_id(l);
    }
    assert!(wait_live(base));
    assert_eq!(NEVENTS.load(SeqCst), 2);
    Ok(())
}

/// The provider reports nothing after the disconnect of an accepted id
/// that never got ESTABLISHED (the fake provider's QP moves to ERR without
/// a CLOSE): after `ABORT_CLOSE_BOUND_MS` iw_cm delivers a CLOSE of its
/// own, with its QP reference already gone, so that a ULP waiting for
/// DISCONNECTED before it destroys its QP is not held for good.  The
/// provider's CLOSE after that is a counted provider fault, not delivered.
pub(super) fn an_aborted_accept_hears_close_within_the_bound() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let (l, child) = accepted_child(&mut dev, 17)?;
    // SAFETY: the child is the test's since its CONNECT_REQUEST.
    assert_eq!(unsafe { bindings::iw_cm_disconnect(child, 0) }, 0);
    assert_eq!(QP_TO_ERR.load(SeqCst), 1);
    // The bound is 10 s; wait_until polls for at least 2 s at a time.
    let mut closed = false;
    for _ in 0..10 {
        if wait_until(|| NEVENTS.load(SeqCst) == 2) {
            closed = true;
            break;
        }
    }
    assert!(closed);
    assert_eq!(event(1), (17, EV_CLOSE, 0));
    assert_eq!(QP_REFS.load(SeqCst), 0);
    let faults = iface::provider_faults();
    expect_faults(false);
    assert_eq!(upcall(child, EV_CLOSE, 0), 0);
    // SAFETY: the child is live: the test and the provider hold it.
    let settled = wait_until(|| unsafe { iface::settled(child) });
    expect_no_faults();
    assert!(settled);
    assert_eq!(iface::provider_faults() - faults, 1);
    provider_release(child);
    // SAFETY: the test owns both ids.
    unsafe {
        bindings::iw_destroy_cm_id(child);
        bindings::iw_destroy_cm_id(l);
    }
    assert!(wait_live(base));
    assert_eq!(NEVENTS.load(SeqCst), 2);
    Ok(())
}

/// A peer that never answers the MPA request: the fake provider never
/// reports CONNECT_REPLY after the connect.  iwcm.c's `iw_cm_disconnect`
/// waits for the reply; ours returns at once, having reset the QP, and the
/// provider's CONNECT_REPLY (siw: its MPA reply timer, -ETIMEDOUT) ends
/// the connect as usual, after iw_cm's QP reference is gone.  Destroy
/// without any reply leaves nothing behind either.
pub(super) fn disconnect_of_a_connecting_id_does_not_wait_for_the_reply() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let id = create(&mut dev, 16)?;
    assert_eq!(connect(id), 0);
    assert_eq!(QP_REFS.load(SeqCst), 1);
    // SAFETY: `id` is live and owned by the test.
    assert_eq!(unsafe { bindings::iw_cm_disconnect(id, 0) }, 0);
    assert_eq!(QP_TO_ERR.load(SeqCst), 1);
    assert_eq!(QP_TO_SQD.load(SeqCst), 0);
    assert_eq!(NEVENTS.load(SeqCst), 0);
    let etimedout = -(kernel::bindings::ETIMEDOUT as i32);
    assert_eq!(upcall(id, EV_REPLY, etimedout), 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 1));
    assert_eq!(event(0), (16, EV_REPLY, 0));
    assert_eq!(QP_REFS.load(SeqCst), 0);
    provider_release(id);
    // A second connect that the network never answers, destroyed.
    assert_eq!(connect(id), 0);
    assert_eq!(QP_REFS.load(SeqCst), 1);
    // SAFETY: the test owns `id`.
    unsafe { bindings::iw_destroy_cm_id(id) };
    assert_eq!(QP_REFS.load(SeqCst), 0);
    provider_release(id);
    assert!(wait_live(base));
    assert_eq!(NEVENTS.load(SeqCst), 1);
    Ok(())
}

/// The provider reports CLOSE while the ULP's handler of an earlier event
/// of the same cm_id still runs (blocked, as rdma_cm's handler waits for
/// its handler_mutex while smbdirect's cleanup holds it and destroys the
/// QP): iw_cm's QP reference goes at the CLOSE upcall, not when the CLOSE
/// is delivered behind that handler, so that the ULP's QP destroy (siw
/// and iw_cxgb4 wait for every QP reference) can end and let the handler
/// go.  Before, the three waited for each other for good (ksmbd, a peer
/// that asked for an RTR frame and half-closed).
pub(super) fn close_gives_the_qp_back_while_an_earlier_handler_runs() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let (l, child) = accepted_child(&mut dev, 1)?;
    assert_eq!(QP_REFS.load(SeqCst), 1);
    MODE.store(MODE_BLOCK_TAG1_EST, SeqCst);
    assert_eq!(upcall(child, EV_EST, 0), 0);
    assert!(wait_until(|| BLOCKED.load(SeqCst)));
    assert_eq!(upcall(child, EV_DISC, 0), 0);
    assert_eq!(upcall(child, EV_CLOSE, 0), 0);
    // The handler of ESTABLISHED still runs; iw_cm's reference is gone.
    assert!(BLOCKED.load(SeqCst));
    assert_eq!(QP_REFS.load(SeqCst), 0);
    RELEASE.store(true, SeqCst);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 3));
    // ESTABLISHED's handler was entered with the reference held.
    assert_eq!(event(1), (1, EV_EST, 1));
    assert_eq!(event(2), (1, EV_CLOSE, 0));
    provider_release(child);
    // SAFETY: the test owns both ids.
    unsafe {
        bindings::iw_destroy_cm_id(child);
        bindings::iw_destroy_cm_id(l);
    }
    assert!(wait_live(base));
    Ok(())
}

pub(super) fn a_blocked_handler_does_not_delay_other_cm_ids() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let a = create(&mut dev, 1)?;
    let b = create(&mut dev, 9)?;
    for id in [a, b] {
        assert_eq!(connect(id), 0);
        assert_eq!(upcall(id, EV_REPLY, 0), 0);
    }
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 2));
    MODE.store(MODE_BLOCK_TAG1_CLOSE, SeqCst);
    assert_eq!(upcall(a, EV_CLOSE, 0), 0);
    assert!(wait_until(|| BLOCKED.load(SeqCst)));
    assert_eq!(upcall(b, EV_CLOSE, 0), 0);
    // b's CLOSE arrives while a's handler is still blocked.
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 4));
    assert!(BLOCKED.load(SeqCst));
    assert_eq!(event(3).0, 9);
    RELEASE.store(true, SeqCst);
    assert!(wait_until(|| !BLOCKED.load(SeqCst)));
    for id in [a, b] {
        provider_release(id);
        // SAFETY: the test owns the ids.
        unsafe { bindings::iw_destroy_cm_id(id) };
    }
    assert!(wait_live(base));
    Ok(())
}

pub(super) fn destroy_from_the_own_handler_does_not_deadlock() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let id = create(&mut dev, 10)?;
    assert_eq!(connect(id), 0);
    assert_eq!(upcall(id, EV_REPLY, 0), 0);
    MODE.store(MODE_DESTROY_SELF_ON_CLOSE, SeqCst);
    assert_eq!(upcall(id, EV_CLOSE, 0), 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 2));
    provider_release(id);
    assert!(wait_live(base));
    assert_eq!(QP_REFS.load(SeqCst), 0);
    Ok(())
}

pub(super) fn nonzero_handler_return_destroys_the_id() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let id = create(&mut dev, 11)?;
    assert_eq!(connect(id), 0);
    assert_eq!(upcall(id, EV_REPLY, 0), 0);
    MODE.store(MODE_FAIL_CLOSE, SeqCst);
    assert_eq!(upcall(id, EV_CLOSE, 0), 0);
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 2));
    // iw_cm gave back the ULP's reference; the provider's remains.
    assert!(wait_live(base + 1));
    assert_eq!(upcall(id, EV_CLOSE, 0), 0);
    provider_release(id);
    assert!(wait_live(base));
    assert_eq!(NEVENTS.load(SeqCst), 2);
    Ok(())
}

/// A listener destroyed with CONNECT_REQUESTs queued and never
/// delivered hands each one back to the provider with iw_reject
/// (iwcm.c drops them: the provider's endpoint and connection leak).
pub(super) fn destroyed_listener_rejects_its_undelivered_requests() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let l = create(&mut dev, 31)?;
    // SAFETY: `l` is live and owned by the test.
    assert_eq!(unsafe { bindings::iw_cm_listen(l, 4) }, 0);
    LISTENER.store(l, SeqCst);
    MODE.store(MODE_DESTROY_LISTENER_IN_REQ, SeqCst);
    assert_eq!(upcall(l, EV_REQ, 0), 0);
    for token in [0x2000usize, 0x3000] {
        let mut ev = wire_event(EV_REQ, 0);
        ev.provider_data = token as *mut c_void;
        assert_eq!(upcall_ev(l, ev), 0);
    }
    // The first request's handler destroys the listener now.
    RELEASE.store(true, SeqCst);
    assert!(wait_until(|| UNLISTENS.load(SeqCst) == 1));
    assert!(wait_until(|| REJECTS.load(SeqCst) == 2));
    assert_eq!(REJECTED_TOKENS.load(SeqCst), 0x5000);
    // Only the first request reached the ULP.
    assert_eq!(NCHILDREN.load(SeqCst), 1);
    let child = CHILD.load(SeqCst);
    // SAFETY: the child is the test's since its CONNECT_REQUEST.
    unsafe { bindings::iw_destroy_cm_id(child) };
    assert_eq!(REJECTS.load(SeqCst), 3);
    assert_eq!(REJECTED_TOKENS.load(SeqCst), 0x5000 + REQ_TOKEN);
    assert!(wait_live(base));
    Ok(())
}

/// A CONNECT_REQUEST's child cm_id is allocated in the upcall and
/// travels with the request: a request whose child cannot be
/// allocated is refused there (-ENOMEM: the provider drops it), and a
/// listener destroyed with requests queued hands each one back with
/// iw_reject without allocating.  (Allocating at that point, as
/// iwcm.c does, failed under `fail_iw_cm` and left the request with
/// the provider for good: siw kept the endpoint and, with it, its
/// device's memory, which kmemleak reported at the end of a boot.)
pub(super) fn requests_are_handed_back_without_allocating() -> Result {
    reset();
    if !set_fail_nth(0) {
        // KUnit's Rust tests cannot report a skip in 7.3: say it.
        pr_info!(
            "requests_are_handed_back_without_allocating: skipped (no CONFIG_FAULT_INJECTION)\n"
        );
        return Ok(());
    }
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let l = create(&mut dev, 33)?;
    // SAFETY: `l` is live and owned by the test.
    assert_eq!(unsafe { bindings::iw_cm_listen(l, 4) }, 0);
    // The upcall's child allocation is the first fault point the
    // request reaches.
    set_fail_nth(1);
    let r = upcall(l, EV_REQ, 0);
    let left = fail_nth();
    set_fail_nth(0);
    assert_eq!(left, 0);
    assert_eq!(r, ENOMEM.to_errno());
    assert_eq!(iface::live(), base + 1);
    LISTENER.store(l, SeqCst);
    MODE.store(MODE_DESTROY_LISTENER_IN_REQ_NO_MEM, SeqCst);
    assert_eq!(upcall(l, EV_REQ, 0), 0);
    // The first request's handler runs (its slot is free again).
    assert!(wait_until(|| NEVENTS.load(SeqCst) >= 1));
    for token in [0x2000usize, 0x3000, 0x4000, 0x8000] {
        let mut ev = wire_event(EV_REQ, 0);
        ev.provider_data = token as *mut c_void;
        assert_eq!(upcall_ev(l, ev), 0);
    }
    // The backlog's 4 slots are full: a further request is refused
    // before its child is allocated (the armed fault point is not
    // reached; before, each refused request cost a GFP_ATOMIC cm_id).
    let live = iface::live();
    set_fail_nth(1);
    let r = upcall(l, EV_REQ, 0);
    let left = fail_nth();
    set_fail_nth(0);
    assert_eq!(r, ENOMEM.to_errno());
    assert_eq!(left, 1);
    assert_eq!(iface::live(), live);
    // ... and before its private data is copied: a request on the full
    // backlog whose private data pointer is unreadable gets the full
    // backlog's ENOMEM, not the malformed request's EINVAL (the copy
    // came first before, for every refused request of a flood).
    assert_eq!(
        upcall_ev(l, with_pdata(EV_REQ, 0, UNREADABLE, 8)),
        ENOMEM.to_errno()
    );
    assert_eq!(iface::live(), live);
    // The first request's handler destroys the listener now, with its
    // first fault point armed: the four queued requests still go back.
    RELEASE.store(true, SeqCst);
    assert!(wait_until(|| UNLISTENS.load(SeqCst) == 1));
    assert!(wait_until(|| REJECTS.load(SeqCst) == 4));
    assert_eq!(REJECTED_TOKENS.load(SeqCst), 0x11000);
    assert!(wait_until(|| FAIL_NTH_LEFT.load(SeqCst) != 0));
    assert_eq!(FAIL_NTH_LEFT.load(SeqCst), 1);
    assert_eq!(NCHILDREN.load(SeqCst), 1);
    let child = CHILD.load(SeqCst);
    // SAFETY: the child is the test's since its CONNECT_REQUEST.
    unsafe { bindings::iw_destroy_cm_id(child) };
    assert_eq!(REJECTS.load(SeqCst), 5);
    assert!(wait_live(base));
    Ok(())
}

pub(super) fn reject_msg_strings() {
    let s = |r: i32| {
        // SAFETY: iwcm_reject_msg returns a static NUL-terminated string.
        unsafe { CStr::from_char_ptr(bindings::iwcm_reject_msg(r)) }
    };
    assert_eq!(
        s(-(kernel::bindings::ECONNRESET as i32)).to_bytes(),
        b"reset by remote host"
    );
    assert_eq!(
        s(-(kernel::bindings::ETIMEDOUT as i32)).to_bytes(),
        b"setup timeout"
    );
    assert_eq!(s(0).to_bytes(), b"unrecognized reason");
    assert_eq!(s(i32::MIN).to_bytes(), b"unrecognized reason");
}
