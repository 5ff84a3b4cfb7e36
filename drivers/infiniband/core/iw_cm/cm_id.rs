// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! One iWARP cm_id: lifetime, per-cm_id event queue and delivery.
//!
//! C source mirrored: `struct iwcm_id_private` and the event path
//! (`cm_event_handler`, `cm_work_handler`, `process_event`, the
//! `cm_*_handler`s) of drivers/infiniband/core/iwcm.c.
//!
//! # Lifetime
//!
//! A [`CmId`] lives in a [`kernel::sync::Arc`].  References are held by:
//! the ULP (from `iw_create_cm_id`, or from the CONNECT_REQUEST delivery
//! that created a child, until `iw_destroy_cm_id` or a non-zero handler
//! return), the provider (`add_ref`/`rem_ref`), and the work item while it
//! is queued or running.  The memory is freed when the last one goes.
//!
//! # Delivery
//!
//! The provider's upcall ([`upcall::event_upcall`], possibly atomic)
//! copies the event and its private data into this cm_id's ring
//! (preallocated: backlog slots for a listener, 4 for an active id, 3 for a
//! passive one) and queues this cm_id's work item.  The work item delivers the ring's events in
//! order, one at a time; different cm_ids' work items run concurrently.
//! While one thread delivers, `Inner::delivering` names it: destroy waits
//! for that delivery unless it is that very thread.
//!
//! # Files
//!
//! This file: the [`CmId`] type, its lock and the ULP's calls.
//! `cm_id/event.rs`: the event ring.  `cm_id/delivery.rs`: the work item
//! and the calls into the ULP.  `cm_id/portmap.rs`: the port mapping.
//! `cm_id/upcall.rs`: the provider's calls (`event_handler`, `add_ref`,
//! `rem_ref`) and the checks of their input.  `cm_id/table.rs`: the table
//! of live cm_ids (debugfs) and the stuck-handler report.  The C boundary
//! is outside, and everything here takes typed values: the crate root
//! (the nine exports), `c_entry.rs` (the provider's upcalls, the table's
//! seq_file callbacks, and the one place a C `iw_cm_id` pointer becomes a
//! [`CmId`]), `c_helpers.rs` (this module's C helpers) and `trace.rs` (the
//! tracepoints).
//!
//! # Lock order
//!
//! The table's lock (`cm_id/table.rs`: the XArray's, interrupts saved)
//! comes first: a table reader holds it while it takes one cm_id's
//! `inner`; a cm_id's allocation, its destructor and the running mark of
//! a delivery take it alone.  Below it,
//! `CmId::inner` (a `SpinLockIrq`) is the per-cm_id lock.  It is
//! taken inside whatever locks the provider holds when it calls
//! `event_handler`, `add_ref` or `rem_ref` (siw may call from softirq
//! context), and no lock of ours is taken inside it (only the tracepoint
//! probes run under it, any-context): it is never held across a
//! call into the provider, the ULP's handler, the port mapper, a QP
//! reference's release (`ib_qp` `rem_ref` may sleep in the provider's
//! destroy path) or a cm_id's work enqueue, and at most
//! one cm_id's `inner` is held at a time (a listener and its child are
//! locked one after the other).  `CmId::waiters` waits on `inner`.

use crate::c_helpers::{self, ModulePin};
use crate::event_check::{self, Faults, Kind, Verdict};
use crate::rdma::cm_event::{CmEvent, CmHandler, EventType, RawCmEvent};
use crate::rdma::iw_provider::{
    qp_attr_target, set_init_qp_attr, ConnParam, IwDevice, QpAttr, QpAttrTarget, QpRef,
};
use crate::rdma::shared_cm_id::{Fields, RawCmId, SharedCmId, Unseen};
use crate::rdma::sockaddr;
use crate::state::{self, Actions, Input, Outcome, State};
use crate::trace;
use abort::{AbortBound, BoundVerdict};
use core::ffi::c_void;
use event::{Checked, Event, EventRing};
#[cfg(CONFIG_KUNIT)]
use kernel::sync::atomic::Release;
use kernel::sync::atomic::{Acquire, Atomic, Full, Relaxed};
use kernel::{
    new_condvar, new_spinlock_irq,
    prelude::*,
    sync::{Arc, ArcBorrow, CondVar, SpinLockIrq},
    task::Task,
    workqueue::{impl_has_work, new_work, Work, WorkItem},
};

/// The number of live cm_ids (debugfs iw_cm/count).
pub(crate) static LIVE: Atomic<usize> = Atomic::new(0);

/// debugfs iw_cm/count (iw_cm_exports.c): the number of live cm_ids.  Any
/// context.
#[no_mangle]
pub(crate) extern "C" fn iwcm_live_count() -> usize {
    LIVE.load(Relaxed)
}

/// Event slots of an active cm_id: CONNECT_REPLY, ESTABLISHED, DISCONNECT,
/// CLOSE (iwcm.c preallocates as many work entries).
const ACTIVE_EVENT_SLOTS: usize = 4;
/// Event slots of a passive cm_id: ESTABLISHED, DISCONNECT, CLOSE.
const PASSIVE_EVENT_SLOTS: usize = 3;

/// The largest backlog a listener gets: `iw_cm_listen` clamps a larger one
/// (from the ULP or `net/iw_cm/default_backlog`) to it.  A listener
/// reserves one event slot per backlog entry, about 21 MB at this cap.
/// See Documentation/iw_cm.rst, "Other differences".
pub(crate) const MAX_BACKLOG: u32 = crate::bindings::IWCM_MAX_BACKLOG;

/// How the provider's upcall allocates for a CONNECT_REQUEST (its child
/// cm_id and table number, its private data).  The upcall may run in
/// atomic context (qedr calls it from a tasklet; siw, iw_cxgb4 and irdma
/// from a workqueue), so it cannot sleep; a refused request costs the
/// peer a retry, so it does not dip into the atomic reserves either
/// (GFP_ATOMIC would, once per request of a connect flood), nor warn.
fn request_gfp() -> kernel::alloc::Flags {
    kernel::alloc::flags::GFP_NOWAIT | kernel::alloc::flags::__GFP_NOWARN
}

/// Where a cm_id is allocated, which decides how.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum AllocContext {
    /// A ULP's call, in process context: may sleep (GFP_KERNEL).
    Process,
    /// The provider's upcall, for a CONNECT_REQUEST's child: any context
    /// ([`request_gfp`]).
    Upcall,
}

impl AllocContext {
    fn flags(self) -> kernel::alloc::Flags {
        match self {
            AllocContext::Process => GFP_KERNEL,
            AllocContext::Upcall => request_gfp(),
        }
    }
}

/// Provider faults seen since the module was loaded (every one; the log
/// line is once per call site).
pub(crate) static PROVIDER_FAULTS: Atomic<usize> = Atomic::new(0);

/// debugfs iw_cm/provider_faults (iw_cm_exports.c): the provider faults
/// seen since the module was loaded (out-of-state, duplicate or unknown
/// events, malformed event fields).  Any context.
#[no_mangle]
pub(crate) extern "C" fn iwcm_provider_fault_count() -> usize {
    PROVIDER_FAULTS.load(Relaxed)
}

/// How a provider fault is logged.
#[derive(PartialEq, Eq)]
pub(crate) enum FaultLog {
    /// The production case: a warning line, once per call site (never a
    /// WARN: see [`provider_fault!`]).
    Warn,
    /// Expected by the KUnit suite on its fake device: an info line.
    /// (Only [`expected_fault_log`] chooses it: never constructed on a
    /// kernel without KUnit.)
    #[cfg_attr(not(CONFIG_KUNIT), expect(dead_code))]
    Info,
    /// Expected by the KUnit concurrency stress on its fake device: not
    /// logged (it feeds hundreds of thousands).
    #[cfg_attr(not(CONFIG_KUNIT), expect(dead_code))]
    Silent,
}

/// How to log a provider fault of a cm_id on `dev` (`None` when the fault
/// has no cm_id).  Always [`FaultLog::Warn`] for a real provider: only the
/// fake device the test module names ([`expect_faults`]) gets another
/// answer.  (The line may come from the delivery worker, outside the
/// KUnit case's task.)  Any context.
pub(crate) fn fault_log(dev: Option<&DevInfo>) -> FaultLog {
    #[cfg(CONFIG_KUNIT)]
    if let Some(log) = dev.and_then(|d| expected_fault_log(d.connect_op)) {
        return log;
    }
    let _ = dev;
    FaultLog::Warn
}

/// The `iw_connect` op of the test's fake provider whose faults the KUnit
/// suite provokes on purpose (0: none), and whether they are logged at all.
#[cfg(CONFIG_KUNIT)]
static EXPECTED_CONNECT_OP: Atomic<usize> = Atomic::new(0);
#[cfg(CONFIG_KUNIT)]
static QUIET: Atomic<bool> = Atomic::new(false);

/// Provider faults on every device whose `iw_connect` op is `connect_op`
/// (the KUnit suite's fake provider, through kunit_iface.rs) are expected
/// from now on: logged at info level (`quiet`: not at all) instead of
/// warned about; 0 ends that.  Any context.
#[cfg(CONFIG_KUNIT)]
pub(crate) fn expect_faults(connect_op: usize, quiet: bool) {
    QUIET.store(quiet, Relaxed);
    EXPECTED_CONNECT_OP.store(connect_op, Release);
}

/// The log level of a provider fault on a device whose `iw_connect` op is
/// `connect_op` (`DevInfo`, read at the cm_id's creation) when the KUnit
/// suite expects it there ([`expect_faults`]); `None` (a warning) for
/// every other device.  Any context.
#[cfg(CONFIG_KUNIT)]
fn expected_fault_log(connect_op: usize) -> Option<FaultLog> {
    let expected = EXPECTED_CONNECT_OP.load(Acquire);
    if expected == 0 || connect_op != expected {
        return None;
    }
    Some(if QUIET.load(Relaxed) {
        FaultLog::Silent
    } else {
        FaultLog::Info
    })
}

/// The `iw_cm_provider_fault` tracepoint for a fault at `site` (a
/// NUL-terminated literal) on `dev`.  Any context.
fn trace_provider_fault(dev: Option<&DevInfo>, site: &'static str) {
    if !trace::iw_cm_provider_fault_enabled() {
        return;
    }
    let name = dev.map_or(c"", |d| d.name.as_c_str());
    let site = CStr::from_bytes_with_nul(site.as_bytes()).unwrap_or(c"?");
    trace::iw_cm_provider_fault(name, site);
}

/// What iw_cm needs of a cm_id's device, read once at creation, while the
/// ULP holds the device (rdma_cm keeps it until its ids are destroyed).
/// The provider may call after the ULP's last reference -- a late CLOSE or
/// CONNECT_REPLY, its last `rem_ref` -- when the device may already be
/// unregistered and freed: from then on nothing reads the `ib_device` but
/// through this copy (the table, the traces, the upcall's ird/ord limit,
/// the fault log).  The provider's own ops are called only on ULP calls.
#[derive(Clone, Copy)]
pub(crate) struct DevInfo {
    /// `dev_name()` of the device ("-" when it has none), NUL-terminated.
    pub(crate) name: table::DevName,
    /// `IwDevice::max_rd_atom`: the upcall's ird/ord limit.
    pub(crate) max_rd_atom: u8,
    /// The address of the provider's `iw_connect` op, which names the
    /// KUnit suite's fake provider ([`expect_faults`]).
    #[cfg(CONFIG_KUNIT)]
    pub(crate) connect_op: usize,
}

impl DevInfo {
    /// Reads what iw_cm needs of `dev`.  Any context.
    fn read(dev: &IwDevice) -> Self {
        Self {
            name: table::copy_dev_name(dev),
            max_rd_atom: dev.max_rd_atom(),
            #[cfg(CONFIG_KUNIT)]
            connect_op: dev.connect_op(),
        }
    }
}

/// Counts a provider fault (a duplicate, out-of-state or unknown event) of
/// a cm_id on the device `$dev`, traces it and logs a warning line once per
/// call site (`pr_warn_once` in C terms), where iwcm.c has `BUG()` for some
/// of these.  Never a WARN: a remote peer can make a provider send each of
/// them (siw reports ESTABLISHED after its close work when a FIN races its
/// RTR wait, CLOSE before ESTABLISHED on a reset), and with
/// `panic_on_warn` a WARN would be a remote crash.  The count is in
/// debugfs (`iw_cm/provider_faults`), every occurrence in the
/// `iw_cm_provider_fault` tracepoint.
macro_rules! provider_fault {
    ($dev:expr, $($arg:tt)*) => {{
        PROVIDER_FAULTS.add(1, Relaxed);
        trace_provider_fault($dev, concat!(file!(), ":", line!(), "\0"));
        match fault_log($dev) {
            FaultLog::Info => pr_info!($($arg)*),
            FaultLog::Silent => {}
            FaultLog::Warn => {
                kernel::do_once_lite! {
                    pr_warn!($($arg)*);
                }
            }
        }
    }};
}

// After `provider_fault!`, which they use (textual macro scope).
mod abort;
mod delivery;
mod event;
mod portmap;
pub(crate) mod table;
pub(crate) mod upcall;

/// The mutable part of a cm_id, behind `CmId::inner`.
///
/// # Invariants
///
/// `qp` is `Some` only in a state where [`state::may_hold_qp`] holds;
/// `handled <= queued`; once `state` is `Destroying` the ring is empty and
/// has no slots (events are dropped in the upcall) and it never leaves it.
struct Inner {
    state: State,
    /// iw_cm's QP reference (Connecting, ConnSent, Accepting, AcceptSent,
    /// Established, Closing), given back at the latest when the provider's
    /// CLOSE is queued (upcall.rs).
    qp: Option<QpRef>,
    events: EventRing,
    /// The task delivering an event of this cm_id (as an address), 0 when
    /// none.  Compared with `current` to detect calls from the handler.
    delivering: usize,
    /// The ULP's reference, held for it here: the ULP has only the C
    /// pointer, from `iw_create_cm_id` or a CONNECT_REQUEST, until
    /// `iw_destroy_cm_id` or a non-zero handler return takes it out
    /// ([`CmId::take_ulp_ref`]).  `None` before the ULP gets the cm_id and
    /// after it gave it back.  Taken out under the lock, dropped after it.
    ulp: Option<Arc<CmId>>,
    /// Provider events queued, and taken off the queue and fully handled
    /// (delivered, dropped or counted as a fault); equal when this cm_id
    /// has nothing in flight.
    queued: usize,
    handled: usize,
    /// Listener, active or passive (for the table).
    role: table::Role,
    /// The delivery in progress (set with `delivering`, for the table and
    /// the stuck-handler report).
    delivery: Option<table::Delivery>,
    /// `CmId::table_id`, for the tracepoints of `take_qp`.
    table_id: u32,
    /// The bound on the provider's CLOSE, armed when the ULP disconnected
    /// this id after its accept and before ESTABLISHED (AcceptSent to
    /// Closing); taken out, and told to let go of the id, once the id has
    /// left Closing ([`CmId::drop_abort_bound`]).
    abort_bound: Option<Arc<AbortBound>>,
}

impl Inner {
    /// iw_cm's QP reference when `actions` say RELEASE_QP, to be dropped
    /// by the caller after the unlock (the provider's `rem_ref` may wake a
    /// `destroy_qp` waiter).
    fn take_qp(&mut self, actions: Actions) -> Option<QpRef> {
        if !actions.contains(Actions::RELEASE_QP) {
            return None;
        }
        let qp = self.qp.take();
        if let Some(q) = qp.as_ref() {
            trace::iw_cm_qp_ref(self.table_id.into(), q.qpn(), false);
        }
        qp
    }
}

/// An iWARP cm_id.  The C-visible `struct iw_cm_id` is embedded at a stable
/// address (`raw`); the ULP and the provider only ever see that pointer.
///
/// # Invariants
///
/// `raw.device` is an iWARP device (the one in `dev`); `raw.event_handler`,
/// `raw.add_ref` and `raw.rem_ref` are this module's functions.  Every
/// `*mut iw_cm_id` handed out points into a `CmId` owned by an `Arc`
/// (`c_entry.rs` steps back from it to the `CmId`): the ULP's pointer is
/// kept alive by `Inner::ulp`, the provider's by the references its
/// `add_ref` took.  `table_id` is reserved in the table for this cm_id from its allocation
/// until its destructor erases it; the cm_id is published at it (seen by
/// table readers) from `table::Unlisted::publish` on, and nothing else is.
#[pin_data(PinnedDrop)]
pub(crate) struct CmId {
    #[pin]
    raw: SharedCmId,
    /// Called only on the ULP's calls (which hold the device); read
    /// nothing from it otherwise: `dev_info` has it.
    dev: IwDevice,
    /// What the upcalls, the table and the traces need of the device.
    dev_info: DevInfo,
    /// Taken with interrupts off (`spin_lock_irq`, as iwcm.c's
    /// `spin_lock_irqsave` on `cm_id_priv->lock`): the provider's upcall
    /// takes it in softirq context too (siw's `sk_data_ready` callback).
    #[pin]
    inner: SpinLockIrq<Inner>,
    /// Signalled when a delivery ends or a connect/accept finishes.
    #[pin]
    waiters: CondVar,
    #[pin]
    work: Work<CmId>,
    /// References the provider holds (`add_ref` minus `rem_ref`): a
    /// `rem_ref` without a matching `add_ref` is a provider fault and is
    /// ignored, instead of dropping a reference the ULP or a queued event
    /// owns (a use-after-free later).
    provider_refs: Atomic<usize>,
    /// The cm_id's number: its index in the table, in the reports and the
    /// tracepoints.
    table_id: u32,
    /// Its creation sequence number, given when it is published in the
    /// table (`u64::MAX` before): a table read lists the cm_ids published
    /// before its count line (`table_window.rs`).  Written and read only
    /// under the table's lock.
    table_seq: Atomic<u64>,
    /// This module's reference for the cm_id's lifetime.  Last field: it
    /// is dropped after everything else of the cm_id (see [`crate::c_helpers::ModulePin`]).
    _module: ModulePin,
}

// SAFETY: the raw pointers inside (`iw_cm_id`'s context, device, provider
// data; the event's provider data) are opaque tokens owned by the ULP and the
// provider, which use them from any thread; every mutable field of ours is
// behind `inner`'s lock, and the C-visible `iw_cm_id` is written only by its
// owner of the moment (the ULP in its calls, this module while delivering).
unsafe impl Send for CmId {}
// SAFETY: as for `Send`.
unsafe impl Sync for CmId {}

impl_has_work! {
    impl HasWork<Self> for CmId { self.work }
}

impl WorkItem for CmId {
    type Pointer = Arc<CmId>;

    fn run(this: Arc<CmId>) {
        this.deliver_queued();
        // Dropping `this` may free the cm_id: the workqueue core does not
        // touch a work item after its function returns.
    }
}

fn current_task() -> usize {
    Task::current_raw() as usize
}

impl CmId {
    /// Allocates a cm_id in state Idle and enters it in the table.  May
    /// sleep (GFP_KERNEL).
    pub(crate) fn new(
        dev: IwDevice,
        cm_handler: CmHandler,
        context: *mut c_void,
    ) -> Result<Arc<CmId>> {
        if !dev.is_iwarp() {
            return Err(EINVAL);
        }
        let info = DevInfo::read(&dev);
        // Nothing else to set up: in the table at once.
        Self::alloc(dev, info, cm_handler, context, AllocContext::Process)
            .map(table::Unlisted::publish)
    }

    /// Allocates the child cm_id of a CONNECT_REQUEST in the provider's
    /// upcall: any context, never sleeps ([`request_gfp`]).  It carries the
    /// listener's handler and context; its event slots are reserved when
    /// its request is delivered (`connect_request`, GFP_KERNEL), before the
    /// ULP can accept and the provider send it events, so a queued request
    /// costs the cm_id alone.  Allocating it here, instead of at delivery
    /// as iwcm.c's `cm_conn_req_handler` does, means every queued request
    /// has a cm_id that can reject it: a request whose child cannot be
    /// allocated is refused in the upcall (-ENOMEM, the provider drops the
    /// connection), never left with the provider for good.  `ENOMEM` (also
    /// from the `fail_iw_cm` fault point).  The device is the listener's
    /// (`listener`), not read again.  It is not in the table until its
    /// request is delivered and its fields written (`connect_request`).
    fn new_child(
        listener: &CmId,
        cm_handler: CmHandler,
        context: *mut c_void,
    ) -> Result<table::Unlisted> {
        Self::alloc(
            listener.dev.for_child(),
            listener.dev_info,
            cm_handler,
            context,
            AllocContext::Upcall,
        )
    }

    /// Allocates a cm_id in state Idle as `ctx` allows, with a number
    /// reserved in the table but not published there (the caller publishes
    /// it once it is set up).  Any context with [`AllocContext::Upcall`].
    fn alloc(
        dev: IwDevice,
        dev_info: DevInfo,
        cm_handler: CmHandler,
        context: *mut c_void,
        ctx: AllocContext,
    ) -> Result<table::Unlisted> {
        crate::c_helpers::fault_point(core::mem::size_of::<CmId>())?;
        let module = ModulePin::get()?;
        let raw = SharedCmId::new(
            dev.as_raw(),
            cm_handler,
            context,
            crate::c_entry::provider_callbacks(),
        );
        let slot = table::Reservation::new(ctx)?;
        let table_id = slot.id();
        let id = Arc::pin_init(
            pin_init!(CmId {
                raw,
                dev,
                dev_info,
                inner <- new_spinlock_irq!(Inner {
                    state: State::Idle,
                    qp: None,
                    events: EventRing::new(),
                    delivering: 0,
                    ulp: None,
                    queued: 0,
                    handled: 0,
                    role: table::Role::None,
                    delivery: None,
                    table_id,
                    abort_bound: None,
                }, "CmId::inner"),
                waiters <- new_condvar!("CmId::waiters"),
                work <- new_work!("CmId::work"),
                provider_refs: Atomic::new(0),
                table_id,
                table_seq: Atomic::new(u64::MAX),
                _module: module,
            }),
            ctx.flags(),
        )?;
        // The destructor counts it down.
        LIVE.add(1, Relaxed);
        if trace::iw_cm_id_create_enabled() {
            trace::iw_cm_id_create(table_id.into(), id.dev_info.name.as_c_str());
        }
        // Its destructor releases the number from now on.
        Ok(slot.hand_over(id))
    }

    /// The C-visible `struct iw_cm_id`.
    pub(crate) fn raw(&self) -> *mut RawCmId {
        self.raw.as_ptr()
    }

    /// The C-visible `struct iw_cm_id`, shared with the ULP and the
    /// provider.
    pub(crate) fn shared(&self) -> &SharedCmId {
        &self.raw
    }

    /// The `CmId` whose `struct iw_cm_id` `raw` is, for the C entry points
    /// that step back from it (`c_entry.rs`): `container_of`.
    ///
    /// # Safety
    ///
    /// `raw` points to the `struct iw_cm_id` of a `CmId` (every `iw_cm_id`
    /// this module hands out is one: the invariants above); it need not be
    /// live for the arithmetic.
    pub(crate) unsafe fn container_of_raw(raw: *mut RawCmId) -> *const CmId {
        // SAFETY: by the caller's guarantee `raw` is the `raw` field of a
        // `CmId` (`SharedCmId` is `repr(transparent)` over the C struct):
        // stepping back to its container stays inside that allocation.
        unsafe { kernel::container_of!(raw.cast::<SharedCmId>(), CmId, raw) }
    }

    /// Gives the ULP its reference, kept for it in `Inner::ulp`, and
    /// returns its C pointer.
    pub(crate) fn into_ulp(this: Arc<CmId>) -> *mut RawCmId {
        let raw = this.raw();
        let ulp = this.clone();
        this.inner.lock().ulp = Some(ulp);
        raw
    }

    /// Takes the ULP's reference out (`None` when the ULP does not hold
    /// one), to be dropped by the caller after `destroy`: the one way the
    /// ULP's reference is given back.
    fn take_ulp_ref(&self) -> Option<Arc<CmId>> {
        self.inner.lock().ulp.take()
    }

    /// Whether every provider event queued on this cm_id has been handled
    /// (delivered, dropped or counted as a fault).  For the KUnit tests,
    /// which have no other way to wait for the work item.
    #[cfg(CONFIG_KUNIT)]
    pub(crate) fn settled(&self) -> bool {
        let g = self.inner.lock();
        g.queued == g.handled && g.delivering == 0
    }

    /// Calls `f` with the right to this cm_id's addresses and `mapped`
    /// bit when the caller is this cm_id's delivery (of a CONNECT_REPLY, or
    /// of a listener's CONNECT_REQUEST) or the cm_id is destroyed with no
    /// delivery in flight; `None` otherwise (warned: every caller is one
    /// of these).  Takes `inner`; any context.
    fn with_fields<R>(&self, f: impl FnOnce(Fields<'_>) -> R) -> Option<R> {
        let me = current_task();
        let ok = {
            let g = self.inner.lock();
            g.delivering == me || (g.state == State::Destroying && g.delivering == 0)
        };
        if !ok {
            kernel::warn_on!(true);
            return None;
        }
        // Who writes the addresses: the ULP before its listen or connect
        // call, never again (a failed connect's ULP learns of it only from
        // this delivery's handler call, after `f`); never the provider;
        // iw_cm in listen/connect before the provider has the cm_id (done:
        // the provider sent the event, or the ULP destroyed the cm_id) and
        // in a CONNECT_REPLY delivery, this thread's or over.  A destroyed
        // cm_id's are never written again.
        // SAFETY: this thread delivers this cm_id's events (`delivering`),
        // or it is destroyed and nothing delivers: by the above no one else
        // writes the addresses or `mapped` during the call.
        Some(f(unsafe { Fields::assume(&self.raw) }))
    }

    /// Reserves room for `n` queued events, allocated with `flags`.
    /// Process context, may sleep, with GFP_KERNEL; any context with
    /// GFP_ATOMIC.
    fn reserve_events(&self, n: usize, flags: kernel::alloc::Flags) -> Result {
        if self.inner.lock().events.slots.len() >= n {
            return Ok(());
        }
        let bytes = n
            .checked_mul(core::mem::size_of::<Option<Event>>())
            .ok_or(ENOMEM)?;
        crate::c_helpers::fault_point(bytes)?;
        let mut slots = KVVec::with_capacity(n, flags)?;
        for _ in 0..n {
            slots.push(None, flags)?;
        }
        let old = {
            let mut g = self.inner.lock();
            if g.events.slots.len() >= n {
                slots
            } else {
                g.events.replace_slots(slots)
            }
        };
        drop(old);
        Ok(())
    }

    // ---- ULP calls --------------------------------------------------------

    /// `iw_cm_listen`.  `EINVAL` for a negative backlog; 0 means
    /// `net/iw_cm/default_backlog`; a backlog above [`MAX_BACKLOG`] is
    /// clamped to it (rdma_ucm passes its `max_backlog`, which may be
    /// larger, for a user's `rdma_listen(id, 0)`; iwcm.c takes any).
    /// `fields` are the ULP's, handed over with its call: used once the
    /// cm_id has left Idle here, before the provider has it.
    pub(crate) fn listen(&self, backlog: i32, fields: Fields<'_>) -> Result {
        let backlog = match backlog {
            0 => crate::c_helpers::default_backlog(),
            b => u32::try_from(b).map_err(|_| EINVAL)?,
        }
        .min(MAX_BACKLOG);
        let backlog_i32 = i32::try_from(backlog).map_err(|_| EINVAL)?;
        self.reserve_events(backlog as usize, GFP_KERNEL)?;
        let actions = {
            let mut g = self.inner.lock();
            match state::step(g.state, Input::Listen) {
                Outcome::Go { next, actions } => {
                    g.state = next;
                    g.role = table::Role::Listener;
                    actions
                }
                _ => return Err(EINVAL),
            }
        };
        let ret = if actions.contains(Actions::PROVIDER_LISTEN) {
            // This call took the cm_id out of Idle: no CONNECT_REPLY
            // delivery writes its addresses, and the provider has not seen
            // it yet.
            self.map_ports(fields, false)
                .and_then(|()| self.dev.create_listen(&self.raw, backlog_i32))
        } else {
            Ok(())
        };
        if ret.is_err() {
            let mut g = self.inner.lock();
            if let Outcome::Go { next, .. } = state::step(g.state, Input::ListenFailed) {
                g.state = next;
            }
        }
        ret
    }

    /// `iw_cm_connect`; `fields` as for [`CmId::listen`].
    pub(crate) fn connect(&self, param: &mut ConnParam, fields: Fields<'_>) -> Result {
        self.reserve_events(ACTIVE_EVENT_SLOTS, GFP_KERNEL)?;
        let actions = self.attach_qp(Input::Connect, param.qpn)?;
        let ret = if actions.contains(Actions::PROVIDER_CONNECT) {
            // As in `listen`; the fields go before the provider, which may
            // deliver CONNECT_REPLY at once, has the cm_id.
            self.map_ports(fields, true)
                .and_then(|()| self.dev.connect(&self.raw, param))
        } else {
            Ok(())
        };
        self.apply_call_result(if ret.is_ok() {
            Input::ConnectDone
        } else {
            Input::ConnectFailed
        });
        ret
    }

    /// `iw_cm_accept`.
    pub(crate) fn accept(&self, param: &mut ConnParam) -> Result {
        let actions = self.attach_qp(Input::Accept, param.qpn)?;
        let ret = if actions.contains(Actions::PROVIDER_ACCEPT) {
            self.dev.accept(&self.raw, param)
        } else {
            Ok(())
        };
        self.apply_call_result(if ret.is_ok() {
            Input::AcceptDone
        } else {
            Input::AcceptFailed
        });
        ret
    }

    /// Takes the connect/accept transition `input` and, when the machine
    /// says ATTACH_QP, iw_cm's reference on QP `qpn`; returns the
    /// transition's actions.  Errors: -EINVAL for an unknown QP or a cm_id
    /// in the wrong state (the reference is then dropped after the unlock).
    fn attach_qp(&self, input: Input, qpn: u32) -> Result<Actions> {
        let qp = self.dev.get_qp(qpn).ok_or(EINVAL)?;
        let mut g = self.inner.lock();
        match state::step(g.state, input) {
            Outcome::Go { next, actions } => {
                g.state = next;
                if input == Input::Connect {
                    g.role = table::Role::Active;
                }
                if actions.contains(Actions::ATTACH_QP) {
                    trace::iw_cm_qp_ref(g.table_id.into(), qp.qpn(), true);
                    g.qp = Some(qp);
                } else {
                    drop(g);
                    drop(qp);
                }
                Ok(actions)
            }
            _ => {
                drop(g);
                drop(qp);
                Err(EINVAL)
            }
        }
    }

    /// Takes the return of a connect/accept downcall (`input`: done or
    /// failed): the state machine leaves Connecting/Accepting (or stays
    /// where the provider's events already took the id); a failure's QP
    /// reference is dropped outside the lock.  Wakes the disconnect
    /// callers that waited for the downcall.
    fn apply_call_result(&self, input: Input) {
        let qp = {
            let mut g = self.inner.lock();
            match state::step(g.state, input) {
                Outcome::Go { next, actions } => {
                    g.state = next;
                    g.take_qp(actions)
                }
                _ => None,
            }
        };
        drop(qp);
        self.waiters.notify_all();
    }

    /// `iw_cm_reject`.
    pub(crate) fn reject(&self, pdata: &[u8]) -> Result {
        let actions = {
            let mut g = self.inner.lock();
            match state::step(g.state, Input::Reject) {
                Outcome::Go { next, actions } => {
                    g.state = next;
                    actions
                }
                _ => return Err(EINVAL),
            }
        };
        let ret = if actions.contains(Actions::PROVIDER_REJECT) {
            self.dev.reject(&self.raw, pdata)
        } else {
            Ok(())
        };
        self.waiters.notify_all();
        ret
    }

    /// `iw_cm_disconnect`.  Waits only while this cm_id's own
    /// `iw_connect`/`iw_accept` downcall runs, never for the network: an
    /// accepted id still waiting for ESTABLISHED is reset (QP to ERR) and
    /// hears CLOSE from the provider (or from iw_cm after
    /// [`abort::ABORT_CLOSE_BOUND_MS`]); a connecting id waiting for
    /// CONNECT_REPLY has its QP reset and hears the CONNECT_REPLY.
    pub(crate) fn disconnect(this: ArcBorrow<'_, CmId>, abrupt: bool) -> Result {
        let me = current_task();
        let (actions, qp, aborting) = {
            let mut g = this.inner.lock();
            loop {
                match state::step(g.state, Input::Disconnect { abrupt }) {
                    Outcome::Wait if g.delivering == me => return Err(EINVAL),
                    Outcome::Wait => this.waiters.wait(&mut g),
                    Outcome::Go { next, actions } => {
                        let aborting = g.state == State::AcceptSent;
                        g.state = next;
                        // A second reference for the QP state change, so
                        // that a concurrent CLOSE may drop iw_cm's own.
                        let qp = g.qp.as_ref().and_then(QpRef::try_clone);
                        break (actions, qp, aborting);
                    }
                    _ => return Err(EINVAL),
                }
            }
        };
        if !actions.contains(Actions::QP_ERR) && !actions.contains(Actions::QP_SQD) {
            return Ok(());
        }
        // No QP: the provider's CLOSE gave it back already (its upcall
        // does, upcall.rs) and is on its way to the ULP; nothing to
        // close.  (iwcm.c's -EINVAL for a connected id without a QP, a
        // user-mode client's, cannot happen here: connect and accept
        // refuse a QP number the device does not know.)
        let Some(qp) = qp else {
            return Ok(());
        };
        // Both sides may be disconnecting: the QP may already be in ERR or
        // SQD, so the result is ignored (iwcm.c).
        let _ = if actions.contains(Actions::QP_ERR) {
            qp.modify_to_err()
        } else {
            qp.modify_to_sqd()
        };
        drop(qp);
        if aborting {
            this.arm_abort_bound();
        }
        Ok(())
    }

    /// Arms the bound on the provider's CLOSE after a disconnect before
    /// ESTABLISHED ([`abort::ABORT_CLOSE_BOUND_MS`]).  Without memory for it the
    /// id has no bound: the ULP's destroy still releases everything.  May
    /// sleep.
    fn arm_abort_bound(self: ArcBorrow<'_, CmId>) {
        let bound = match AbortBound::arm(self.into()) {
            Ok(b) => b,
            Err(e) => {
                pr_warn!(
                    "cm_id {}: no bound on the provider's CLOSE ({:?})\n",
                    self.table_id,
                    e
                );
                return;
            }
        };
        let unused = {
            let mut g = self.inner.lock();
            if g.state == State::Closing && g.abort_bound.is_none() {
                g.abort_bound = Some(bound);
                None
            } else {
                // CLOSE came meanwhile, or a bound is armed already.
                Some(bound)
            }
        };
        if let Some(b) = unused {
            b.forget();
        }
    }

    /// Gives up the bound on the provider's CLOSE once the id has left
    /// Closing (its CLOSE delivered, or destroyed), so that the bound's
    /// work item does not hold the id until it fires.  Process context.
    fn drop_abort_bound(&self) {
        let bound = {
            let mut g = self.inner.lock();
            if g.state == State::Closing {
                None
            } else {
                g.abort_bound.take()
            }
        };
        if let Some(b) = bound {
            b.forget();
        }
    }

    /// For the bound on the provider's CLOSE, when it expires: if the
    /// provider's CLOSE has not come (the id is still Closing and holds
    /// its QP reference) and nothing of the provider's is queued or being
    /// delivered, queues a CLOSE of iw_cm's own (status -ETIMEDOUT),
    /// delivered in order like any event; a later CLOSE from the provider
    /// is then a provider fault.  Any context.
    fn queue_own_close(&self) -> BoundVerdict {
        let mut ev = Some(Event::synthetic_close(
            -(kernel::bindings::ETIMEDOUT as i32),
        ));
        let verdict = {
            let mut g = self.inner.lock();
            if !(g.state == State::Closing && g.qp.is_some()) {
                BoundVerdict::Done
            } else if g.events.len > 0 || g.delivering != 0 {
                BoundVerdict::Again
            } else if g.events.push(&mut ev) {
                g.queued += 1;
                trace::iw_cm_event_queued(
                    self.table_id.into(),
                    crate::bindings::iw_cm_event_type_IW_CM_EVENT_CLOSE as i32,
                    -(kernel::bindings::ETIMEDOUT as i32),
                );
                BoundVerdict::Closed
            } else {
                // No slot at all (not reached: an accepted id has its
                // slots); the ULP's destroy releases the QP.
                BoundVerdict::Done
            }
        };
        // An event not queued is freed here, after the unlock.
        drop(ev);
        verdict
    }

    /// `iw_cm_init_qp_attr`.
    pub(crate) fn init_qp_attr(&self, attr: &mut QpAttr, mask: &mut i32) -> Result {
        let st = self.inner.lock().state;
        let target = qp_attr_target(attr);
        if target == QpAttrTarget::Other {
            return Err(EINVAL);
        }
        match state::step(st, Input::InitQpAttr) {
            Outcome::Go { .. } => {
                if target == QpAttrTarget::InitOrRtr {
                    set_init_qp_attr(attr, mask);
                } else {
                    *mask = 0;
                }
                Ok(())
            }
            _ => Err(EINVAL),
        }
    }

    /// `iw_destroy_cm_id`: destroys and gives back the ULP's reference
    /// (the caller's `self` keeps the cm_id alive meanwhile).
    pub(crate) fn destroy_from_ulp(self: &Arc<Self>) {
        let Some(ulp) = self.take_ulp_ref() else {
            pr_warn!("iw_destroy_cm_id called twice on one cm_id\n");
            kernel::warn_on!(true);
            return;
        };
        self.destroy();
        drop(ulp);
    }

    /// Moves the cm_id to Destroying and tells the provider; then waits for
    /// this cm_id's in-flight delivery, unless the caller is that delivery.
    fn destroy(&self) {
        let me = current_task();
        let (actions, qp, mut dropped) = {
            let mut g = self.inner.lock();
            match state::step(g.state, Input::Destroy) {
                Outcome::Go { next, actions } => {
                    g.state = next;
                    // Every Destroy from a state that may hold the QP
                    // says RELEASE_QP (state.rs, checked by the host tests).
                    let qp = g.take_qp(actions);
                    // Dropped unprocessed, as iwcm.c's DROP_EVENTS: handled.
                    // The slots go here, in process context: the last
                    // reference may be dropped by the provider in atomic
                    // context, where a vmalloc'ed ring could not be freed.
                    g.handled += g.events.len;
                    (actions, qp, g.events.take_all())
                }
                // Already destroyed (a handler returned non-zero first).
                _ => (Actions::NONE, None, KVVec::new()),
            }
        };
        if let Some(qp) = qp.as_ref() {
            if actions.contains(Actions::QP_ERR) {
                // Abrupt close of the connection (iwcm.c destroy_cm_id).
                let _ = qp.modify_to_err();
            }
        }
        if actions.contains(Actions::PROVIDER_DESTROY_LISTEN) {
            let _ = self.dev.destroy_listen(&self.raw);
        }
        if actions.contains(Actions::PROVIDER_REJECT) {
            // A pending request that nobody accepted.
            let _ = self.dev.reject(&self.raw, &[]);
        }
        self.reject_dropped_requests(&mut dropped);
        drop(dropped);
        // Outside any lock, after the QP state change.
        drop(qp);
        if actions.contains(Actions::WAKE_CONNECT_WAITERS) {
            self.waiters.notify_all();
        }

        {
            let mut g = self.inner.lock();
            while g.delivering != 0 && g.delivering != me {
                self.waiters.wait(&mut g);
            }
        }
        // After the in-flight delivery, which may still write the mapped
        // addresses of a CONNECT_REPLY (delivery.rs).
        if actions.contains(Actions::UNMAP) {
            self.unmap_ports();
        }
        self.drop_abort_bound();
    }

    /// Requests queued on a listener and never delivered (the events
    /// `destroy` took off the ring): each one holds a provider object
    /// (siw: a reference on its endpoint and the TCP connection) that only
    /// iw_accept/iw_reject give back.  iwcm.c drops them
    /// (IWCM_F_DROP_EVENTS) and the provider keeps them forever; reject
    /// them instead.  Process context, may sleep.
    fn reject_dropped_requests(&self, dropped: &mut KVVec<Option<Event>>) {
        for ev in dropped.iter_mut().flatten() {
            if ev.raw.event_type() == Some(EventType::ConnectRequest) {
                self.reject_undelivered_request(ev);
            }
        }
    }

    /// Hands the provider object of a CONNECT_REQUEST that no ULP will see
    /// back to the provider with `iw_reject`, through the request's child
    /// cm_id (the provider's reject takes the request from
    /// `provider_data`), which never reaches the ULP.  Nothing is
    /// allocated.  Process context, may sleep.
    fn reject_undelivered_request(&self, ev: &mut Event) {
        let Some(mut unlisted) = ev.child.take() else {
            // Every queued CONNECT_REQUEST carries one (upcall.rs).
            kernel::warn_on!(true);
            return;
        };
        // Never published in the table: a child no ULP sees is not listed.
        {
            let mut unseen = unlisted.unseen();
            // Not the ULP's: no handler call may reach it.
            unseen.clear_handler();
            unseen.set_provider_data(ev.raw.provider_data());
        }
        let req = unlisted.cm_id();
        req.inner.lock().state = State::ConnRecv;
        let _ = req.reject(&[]);
        req.destroy();
        // The last reference goes with `unlisted` (or with the provider's,
        // if its reject took one).
        drop(unlisted);
    }
}

#[pinned_drop]
impl PinnedDrop for CmId {
    fn drop(self: Pin<&mut Self>) {
        // First: the table's readers see only cm_ids whose fields are intact.
        table::unregister(&self);
        if trace::iw_cm_id_destroy_enabled() {
            trace::iw_cm_id_destroy(self.table_id.into(), self.dev_info.name.as_c_str());
        }
        let _ = LIVE.fetch_sub(1, Relaxed);
    }
}
