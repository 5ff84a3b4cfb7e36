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
//! The provider's upcall ([`cm_event_handler`], possibly atomic) copies the
//! event and its private data into this cm_id's ring (preallocated: backlog
//! slots for a listener, 4 for an active id, 3 for a passive one) and queues
//! this cm_id's work item.  The work item delivers the ring's events in
//! order, one at a time; different cm_ids' work items run concurrently.
//! While one thread delivers, `Inner::delivering` names it: destroy waits
//! for that delivery unless it is that very thread.

use crate::bindings;
use crate::event_check::{self, Faults, Kind, Verdict};
use crate::rdma::iw_provider::{IwDevice, QpRef};
use crate::rdma::sockaddr;
use crate::state::{self, Actions, Input, Outcome, State};
use core::ffi::c_void;
use core::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use kernel::{
    new_condvar, new_spinlock_irq,
    prelude::*,
    sync::{Arc, ArcBorrow, CondVar, SpinLockIrq},
    task::Task,
    types::Opaque,
    workqueue::{impl_has_work, new_work, Work, WorkItem},
};

/// The number of live cm_ids (debugfs iw_cm/cm_ids).
pub(crate) type LiveCount = AtomicUsize;
/// See [`LiveCount`].
pub(crate) static LIVE: LiveCount = AtomicUsize::new(0);

/// Event slots of an active cm_id: CONNECT_REPLY, ESTABLISHED, DISCONNECT,
/// CLOSE (iwcm.c preallocates as many work entries).
const ACTIVE_EVENT_SLOTS: usize = 4;
/// Event slots of a passive cm_id: ESTABLISHED, DISCONNECT, CLOSE.
const PASSIVE_EVENT_SLOTS: usize = 3;

/// Provider faults seen since the module was loaded (every one; the WARN
/// is once per call site).
pub(crate) static PROVIDER_FAULTS: AtomicUsize = AtomicUsize::new(0);

/// How a provider fault is logged.
#[derive(PartialEq, Eq)]
pub(crate) enum FaultLog {
    /// The production case: a warning (and a WARN once per call site).
    Warn,
    /// Expected by the KUnit suite on its fake device: an info line.
    Info,
    /// Expected by the KUnit concurrency stress on its fake device: not
    /// logged (it feeds hundreds of thousands).
    Silent,
}

/// How to log a provider fault of a cm_id on `dev` (null when the fault
/// has no cm_id).  Always [`FaultLog::Warn`] for a real provider: only the
/// fake device the test module names (`kunit_iface.rs`) gets another
/// answer.  (The WARN may come from the delivery worker, where KUnit's
/// per-task warning suppression does not reach.)  Any context.
pub(crate) fn fault_log(dev: *const bindings::ib_device) -> FaultLog {
    #[cfg(CONFIG_KUNIT)]
    if let Some(log) = crate::kunit_iface::expected_fault_log(dev) {
        return log;
    }
    let _ = dev;
    FaultLog::Warn
}

/// Counts a provider fault (a duplicate, out-of-state or unknown event) of
/// a cm_id on the device `$dev` and warns once per call site: `WARN_ONCE`
/// in C terms, where iwcm.c has `BUG()` for some of these.
macro_rules! provider_fault {
    ($dev:expr, $($arg:tt)*) => {{
        static WARNED: AtomicBool = AtomicBool::new(false);
        PROVIDER_FAULTS.fetch_add(1, Ordering::Relaxed);
        match fault_log($dev) {
            FaultLog::Info => pr_info!($($arg)*),
            FaultLog::Silent => {}
            FaultLog::Warn => {
                if !WARNED.swap(true, Ordering::Relaxed) {
                    pr_warn!($($arg)*);
                    kernel::warn_on!(true);
                }
            }
        }
    }};
}

/// The kinds of event-content fault ([`Faults`] bits) already warned about.
static CONTENT_FAULTS_WARNED: AtomicU16 = AtomicU16::new(0);

/// One provider event, copied out of the provider's `struct iw_cm_event`
/// after [`event_check::check`] judged it.
///
/// # Invariants
///
/// `raw.private_data` is null with `raw.private_data_len == 0`, or points
/// to the buffer of `pdata` with `raw.private_data_len == pdata.len()`: it
/// never points at the provider's buffer, which may be freed as soon as the
/// upcall returns.  (`pdata`'s heap buffer does not move with the `Event`.)
/// `raw.event` is one of the five event types; `raw.status`, `raw.ird` and
/// `raw.ord` are the checked values.
struct Event {
    raw: bindings::iw_cm_event,
    /// The event's private data, copied in the upcall (the provider may
    /// free its buffer as soon as the upcall returns).
    pdata: KVec<u8>,
    /// The event's addresses passed the check (CONNECT_REQUEST and
    /// CONNECT_REPLY); otherwise the cm_id's own are used.
    use_addrs: bool,
}

// SAFETY: `raw.private_data` points into `pdata` or is null (type
// invariant) and `raw.provider_data` is an opaque token of the provider
// that iw_cm only stores; both may move between threads.
unsafe impl Send for Event {}

impl Event {
    /// Copies `src` with the checked `status`/`ird`/`ord` and its private
    /// data already copied into `pdata`.
    fn new(src: &bindings::iw_cm_event, pdata: KVec<u8>, v: Checked) -> Self {
        let mut ev = Self {
            raw: *src,
            pdata,
            use_addrs: v.use_addrs,
        };
        ev.raw.status = v.status;
        ev.raw.ird = v.ird;
        ev.raw.ord = v.ord;
        // Establishes the type invariant (`pdata` is at most 512 bytes:
        // it was copied from a `u8` length).
        if ev.pdata.is_empty() {
            ev.raw.private_data = core::ptr::null_mut();
            ev.raw.private_data_len = 0;
        } else {
            ev.raw.private_data_len = ev.pdata.len() as u8;
            ev.raw.private_data = ev.pdata.as_mut_ptr().cast();
        }
        ev
    }

    fn input(&self) -> Option<Input> {
        Some(match self.raw.event {
            bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REQUEST => Input::EvConnectRequest,
            bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REPLY => Input::EvConnectReply {
                ok: self.raw.status == 0,
            },
            bindings::iw_cm_event_type_IW_CM_EVENT_ESTABLISHED => Input::EvEstablished,
            bindings::iw_cm_event_type_IW_CM_EVENT_DISCONNECT => Input::EvDisconnect,
            bindings::iw_cm_event_type_IW_CM_EVENT_CLOSE => Input::EvClose,
            _ => return None,
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
struct EventRing {
    /// One slot per event that may be pending: `backlog` of them for a
    /// listener, so kvmalloc'ed (a large backlog must not need one
    /// physically contiguous allocation; iwcm.c allocates entries one by one).
    slots: KVVec<Option<Event>>,
    head: usize,
    len: usize,
}

impl EventRing {
    const fn new() -> Self {
        Self {
            slots: KVVec::new(),
            head: 0,
            len: 0,
        }
    }

    /// Moves `*ev` into the ring; leaves it in place (to be freed by the
    /// caller, outside the lock) and returns false when the ring is full.
    fn push(&mut self, ev: &mut Option<Event>) -> bool {
        let cap = self.slots.len();
        if self.len == cap {
            return false;
        }
        let idx = (self.head + self.len) % cap;
        self.slots[idx] = ev.take();
        self.len += 1;
        true
    }

    fn pop(&mut self) -> Option<Event> {
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
    fn replace_slots(&mut self, mut new: KVVec<Option<Event>>) -> KVVec<Option<Event>> {
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
    fn take_all(&mut self) -> KVVec<Option<Event>> {
        self.head = 0;
        self.len = 0;
        core::mem::replace(&mut self.slots, KVVec::new())
    }
}

/// The mutable part of a cm_id, behind `CmId::inner`.
///
/// # Invariants
///
/// `qp` is `Some` only in a state where [`state::may_hold_qp`] holds;
/// `handled <= queued`; once `state` is `Destroying` the ring is empty and
/// has no slots (events are dropped in the upcall) and it never leaves it.
struct Inner {
    state: State,
    /// iw_cm's QP reference (ConnSent, Accepting, Established, Closing).
    qp: Option<QpRef>,
    events: EventRing,
    /// The task delivering an event of this cm_id (as an address), 0 when
    /// none.  Compared with `current` to detect calls from the handler.
    delivering: usize,
    /// The ULP still owns its reference (not yet destroyed).
    ulp_owned: bool,
    /// Provider events queued, and taken off the queue and fully handled
    /// (delivered, dropped or counted as a fault); equal when this cm_id
    /// has nothing in flight.
    queued: usize,
    handled: usize,
}

/// An iWARP cm_id.  The C-visible `struct iw_cm_id` is embedded at a stable
/// address (`raw`); the ULP and the provider only ever see that pointer.
///
/// # Invariants
///
/// `raw.device` is an iWARP device (the one in `dev`); `raw.event_handler`,
/// `raw.add_ref` and `raw.rem_ref` are this module's functions.  Every
/// `*mut iw_cm_id` handed out points into a `CmId` owned by an `Arc`.
#[pin_data(PinnedDrop)]
pub(crate) struct CmId {
    #[pin]
    raw: Opaque<bindings::iw_cm_id>,
    dev: IwDevice,
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
    provider_refs: AtomicUsize,
    /// This module's reference for the cm_id's lifetime.  Last field: it
    /// is dropped after everything else of the cm_id (see [`ModulePin`]).
    _module: ModulePin,
}

/// A reference on this module (`try_module_get(THIS_MODULE)`), held by
/// every live cm_id, so that `rmmod iw_cm` answers "in use" while a
/// provider can still call `event_handler`, `add_ref` or `rem_ref`, a
/// queued event can still run, or the ULP still owns a cm_id.  (rdma_cm,
/// the only ULP of the exported API, already holds the module through its
/// symbol dependency; the provider references are what the pin adds.)
///
/// The window it leaves: the reference is dropped in the cm_id's
/// destructor, after which the thread that dropped the last `Arc` still
/// runs a few instructions of this module (the rest of the `Arc` drop:
/// `kfree`, then the return through `cm_rem_ref`, `iw_destroy_cm_id` or
/// the delivery work's `run`).  A concurrent `rmmod` that sees the count
/// at 0 in that window runs the module exit and then `synchronize_rcu()`
/// before the module's memory is freed; the window is therefore only
/// open if that thread is preempted (or interrupted) for longer than a
/// grace period between `module_put()` and its return.  The kernel's own
/// modules that drop their own reference (`module_put()` outside
/// `module_put_and_kthread_exit()`) have the same window; closing it
/// would need the final put in core kernel code.
///
/// # Invariants
///
/// Holds one reference on this module, taken in [`ModulePin::get`] and
/// given back in `drop`.
struct ModulePin(());

impl ModulePin {
    /// Takes a reference on this module.  `ENODEV` when the module is being
    /// unloaded (cannot happen while a listener or rdma_cm holds it, which
    /// every caller of `iw_create_cm_id` and every CONNECT_REQUEST does).
    /// Any context.
    fn get() -> Result<Self> {
        // SAFETY: `try_module_get(THIS_MODULE)`, callable from any context.
        if unsafe { crate::c::iwcm_c_module_get() } {
            Ok(Self(()))
        } else {
            Err(ENODEV)
        }
    }
}

impl Drop for ModulePin {
    fn drop(&mut self) {
        // SAFETY: gives back the reference taken in `get` (type invariant).
        unsafe { crate::c::iwcm_c_module_put() };
    }
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
    /// Allocates a cm_id in state Idle.  May sleep (GFP_KERNEL).
    pub(crate) fn new(
        dev: IwDevice,
        cm_handler: bindings::iw_cm_handler,
        context: *mut c_void,
    ) -> Result<Arc<CmId>> {
        if !dev.is_iwarp() {
            return Err(EINVAL);
        }
        crate::fault_point(core::mem::size_of::<CmId>())?;
        let module = ModulePin::get()?;
        let raw = bindings::iw_cm_id {
            cm_handler,
            context,
            device: dev.as_raw(),
            event_handler: Some(cm_event_handler),
            add_ref: Some(cm_add_ref),
            rem_ref: Some(cm_rem_ref),
            ..Default::default()
        };
        let id = Arc::pin_init(
            pin_init!(CmId {
                raw: Opaque::new(raw),
                dev,
                inner <- new_spinlock_irq!(Inner {
                    state: State::Idle,
                    qp: None,
                    events: EventRing::new(),
                    delivering: 0,
                    ulp_owned: true,
                    queued: 0,
                    handled: 0,
                }, "CmId::inner"),
                waiters <- new_condvar!("CmId::waiters"),
                work <- new_work!("CmId::work"),
                provider_refs: AtomicUsize::new(0),
                _module: module,
            }),
            GFP_KERNEL,
        )?;
        LIVE.fetch_add(1, Ordering::Relaxed);
        Ok(id)
    }

    /// The C-visible `struct iw_cm_id`.
    pub(crate) fn raw(&self) -> *mut bindings::iw_cm_id {
        self.raw.get()
    }

    /// Hands the ULP's reference out as the C pointer.
    pub(crate) fn into_ulp(this: Arc<CmId>) -> *mut bindings::iw_cm_id {
        let raw = this.raw();
        let _ = Arc::into_raw(this);
        raw
    }

    /// The `CmId` whose `raw` field `raw` is.
    ///
    /// # Safety
    ///
    /// `raw` points to the `raw` field of a `CmId` (every `iw_cm_id` this
    /// module hands out is one); it need not be live for the arithmetic.
    unsafe fn container_of(raw: *mut bindings::iw_cm_id) -> *const CmId {
        // `Opaque<T>` is `repr(transparent)` over `T`.
        let field = raw.cast::<Opaque<bindings::iw_cm_id>>();
        // SAFETY: by the caller's guarantee `raw` is the `raw` field of a
        // `CmId`, so stepping back to the container stays inside that
        // allocation.
        unsafe { kernel::container_of!(field, CmId, raw) }
    }

    /// Borrows the cm_id behind a C pointer.
    ///
    /// # Safety
    ///
    /// `raw` was handed out by this module and a reference on its cm_id is
    /// held for `'a` (the ULP's or the provider's).
    pub(crate) unsafe fn borrow<'a>(raw: *mut bindings::iw_cm_id) -> ArcBorrow<'a, CmId> {
        // SAFETY: by the type invariant `raw` is inside an `Arc<CmId>`
        // allocation, which the caller keeps alive for `'a`.
        unsafe { ArcBorrow::from_raw(Self::container_of(raw)) }
    }

    /// Whether every provider event queued on the cm_id behind `raw` has
    /// been handled (delivered, dropped or counted as a fault).  For the
    /// KUnit tests, which have no other way to wait for the work item.
    ///
    /// # Safety
    ///
    /// `raw` is a live cm_id of this module.
    #[cfg(CONFIG_KUNIT)]
    pub(crate) unsafe fn settled(raw: *mut bindings::iw_cm_id) -> bool {
        // SAFETY: guaranteed by the caller.
        let this = unsafe { Self::borrow(raw) };
        let g = this.inner.lock();
        g.queued == g.handled && g.delivering == 0
    }

    /// Takes back one reference that was handed out with `Arc::into_raw`.
    ///
    /// # Safety
    ///
    /// The caller owns one reference on the cm_id behind `raw` and gives it
    /// up.
    unsafe fn from_raw_ref(raw: *mut bindings::iw_cm_id) -> Arc<CmId> {
        // SAFETY: guaranteed by the caller.
        unsafe { Arc::from_raw(Self::container_of(raw)) }
    }

    /// Reserves room for `n` queued events.  Process context, may sleep.
    fn reserve_events(&self, n: usize) -> Result {
        if self.inner.lock().events.slots.len() >= n {
            return Ok(());
        }
        crate::fault_point(n * core::mem::size_of::<Option<Event>>())?;
        let mut slots = KVVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            slots.push(None, GFP_KERNEL)?;
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

    /// `iw_cm_listen`.
    pub(crate) fn listen(&self, backlog: i32) -> Result {
        let backlog = match backlog {
            b if b < 0 => return Err(EINVAL),
            0 => crate::default_backlog(),
            b => b as u32,
        };
        let backlog_i32 = i32::try_from(backlog).map_err(|_| EINVAL)?;
        self.reserve_events(backlog as usize)?;
        let actions = {
            let mut g = self.inner.lock();
            match state::step(g.state, Input::Listen) {
                Outcome::Go { next, actions } => {
                    g.state = next;
                    actions
                }
                _ => return Err(EINVAL),
            }
        };
        let ret = if actions.contains(Actions::PROVIDER_LISTEN) {
            self.map_ports(false).and_then(|()| {
                // SAFETY: `raw` is this live cm_id of `dev`.
                unsafe { self.dev.create_listen(self.raw(), backlog_i32) }
            })
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

    /// `iw_cm_connect`.
    ///
    /// # Safety
    ///
    /// `param` is valid for the call.
    pub(crate) unsafe fn connect(&self, param: *mut bindings::iw_cm_conn_param) -> Result {
        if param.is_null() {
            return Err(EINVAL);
        }
        self.reserve_events(ACTIVE_EVENT_SLOTS)?;
        // SAFETY: `param` is valid (caller).
        let qpn = unsafe { (*param).qpn };
        let actions = self.attach_qp(Input::Connect, qpn)?;
        let ret = if actions.contains(Actions::PROVIDER_CONNECT) {
            self.map_ports(true).and_then(|()| {
                // SAFETY: `raw` is this live cm_id of `dev`; `param` is valid.
                unsafe { self.dev.connect(self.raw(), param) }
            })
        } else {
            Ok(())
        };
        if ret.is_err() {
            self.apply_call_failure(Input::ConnectFailed);
        }
        ret
    }

    /// `iw_cm_accept`.
    ///
    /// # Safety
    ///
    /// `param` is valid for the call.
    pub(crate) unsafe fn accept(&self, param: *mut bindings::iw_cm_conn_param) -> Result {
        if param.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `param` is valid (caller).
        let qpn = unsafe { (*param).qpn };
        let actions = self.attach_qp(Input::Accept, qpn)?;
        let ret = if actions.contains(Actions::PROVIDER_ACCEPT) {
            // SAFETY: `raw` is this live cm_id of `dev`; `param` is valid.
            unsafe { self.dev.accept(self.raw(), param) }
        } else {
            Ok(())
        };
        if ret.is_err() {
            self.apply_call_failure(Input::AcceptFailed);
        }
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
                if actions.contains(Actions::ATTACH_QP) {
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

    /// Undoes a failed connect/accept downcall: releases the QP reference
    /// outside the lock and wakes disconnect waiters.
    fn apply_call_failure(&self, input: Input) {
        let qp = {
            let mut g = self.inner.lock();
            match state::step(g.state, input) {
                Outcome::Go { next, actions } => {
                    g.state = next;
                    if actions.contains(Actions::RELEASE_QP) {
                        g.qp.take()
                    } else {
                        None
                    }
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
            // SAFETY: `raw` is this live cm_id of `dev`, with a pending request.
            unsafe { self.dev.reject(self.raw(), pdata) }
        } else {
            Ok(())
        };
        self.waiters.notify_all();
        ret
    }

    /// `iw_cm_disconnect`.
    pub(crate) fn disconnect(&self, abrupt: bool) -> Result {
        let me = current_task();
        let (actions, qp) = {
            let mut g = self.inner.lock();
            loop {
                match state::step(g.state, Input::Disconnect { abrupt }) {
                    Outcome::Wait if g.delivering == me => return Err(EINVAL),
                    Outcome::Wait => self.waiters.wait(&mut g),
                    Outcome::Go { next, actions } => {
                        g.state = next;
                        // A second reference for the QP state change, so
                        // that a concurrent CLOSE may drop iw_cm's own.
                        let qp = g.qp.as_ref().and_then(QpRef::try_clone);
                        break (actions, qp);
                    }
                    _ => return Err(EINVAL),
                }
            }
        };
        if !actions.contains(Actions::QP_ERR) && !actions.contains(Actions::QP_SQD) {
            return Ok(());
        }
        // QP could be null for a user-mode client (iwcm.c): -EINVAL.
        let qp = qp.ok_or(EINVAL)?;
        // Both sides may be disconnecting: the QP may already be in ERR or
        // SQD, so the result is ignored (iwcm.c).
        let _ = if actions.contains(Actions::QP_ERR) {
            qp.modify_to_err()
        } else {
            qp.modify_to_sqd()
        };
        Ok(())
    }

    /// `iw_cm_init_qp_attr`.
    pub(crate) fn init_qp_attr(&self, attr: &mut bindings::ib_qp_attr, mask: &mut i32) -> Result {
        let st = self.inner.lock().state;
        let target = attr.qp_state;
        if target == bindings::ib_qp_state_IB_QPS_INIT || target == bindings::ib_qp_state_IB_QPS_RTR
        {
            match state::step(st, Input::InitQpAttr) {
                Outcome::Go { .. } => {
                    *mask = (bindings::ib_qp_attr_mask_IB_QP_STATE
                        | bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS)
                        as i32;
                    attr.qp_access_flags = (bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE
                        | bindings::ib_access_flags_IB_ACCESS_REMOTE_READ)
                        as i32;
                    Ok(())
                }
                _ => Err(EINVAL),
            }
        } else if target == bindings::ib_qp_state_IB_QPS_RTS {
            match state::step(st, Input::InitQpAttr) {
                Outcome::Go { .. } => {
                    *mask = 0;
                    Ok(())
                }
                _ => Err(EINVAL),
            }
        } else {
            Err(EINVAL)
        }
    }

    /// `iw_destroy_cm_id`: destroys and gives back the ULP's reference.
    ///
    /// # Safety
    ///
    /// As for `crate::iw_destroy_cm_id`.
    pub(crate) unsafe fn destroy_from_ulp(raw: *mut bindings::iw_cm_id) {
        // SAFETY: the caller owns the ULP reference.
        let this = unsafe { Self::borrow(raw) };
        {
            let mut g = this.inner.lock();
            if !g.ulp_owned {
                drop(g);
                pr_warn!("iw_destroy_cm_id called twice on one cm_id\n");
                kernel::warn_on!(true);
                return;
            }
            g.ulp_owned = false;
        }
        this.destroy();
        // SAFETY: `ulp_owned` was true and is now false: we give back the
        // ULP's reference exactly once.
        drop(unsafe { Self::from_raw_ref(raw) });
    }

    /// Moves the cm_id to Destroying and tells the provider; then waits for
    /// this cm_id's in-flight delivery, unless the caller is that delivery.
    fn destroy(&self) {
        let me = current_task();
        let (actions, qp, dropped) = {
            let mut g = self.inner.lock();
            match state::step(g.state, Input::Destroy) {
                Outcome::Go { next, actions } => {
                    g.state = next;
                    let qp = g.qp.take();
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
            // SAFETY: `raw` is this live, listening cm_id of `dev`.
            let _ = unsafe { self.dev.destroy_listen(self.raw()) };
        }
        if actions.contains(Actions::PROVIDER_REJECT) {
            // SAFETY: `raw` is this live cm_id of `dev`, with a pending
            // request that nobody accepted.
            let _ = unsafe { self.dev.reject(self.raw(), &[]) };
        }
        // Requests queued on a listener and never delivered: each one
        // holds a provider object (siw: a reference on its endpoint and the
        // TCP connection) that only iw_accept/iw_reject give back.  iwcm.c
        // drops them (IWCM_F_DROP_EVENTS) and the provider keeps them
        // forever; reject them instead.
        for ev in dropped.iter().flatten() {
            if ev.raw.event == bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REQUEST {
                self.reject_undelivered_request(ev);
            }
        }
        drop(dropped);
        // Outside any lock, after the QP state change.
        drop(qp);
        if actions.contains(Actions::UNMAP) {
            self.unmap_ports();
        }
        self.waiters.notify_all();

        let mut g = self.inner.lock();
        while g.delivering != 0 && g.delivering != me {
            self.waiters.wait(&mut g);
        }
    }

    /// Hands the provider object of a CONNECT_REQUEST that no ULP will see
    /// back to the provider with `iw_reject`, through a cm_id of its own
    /// (the provider's reject takes the request from `provider_data`).
    /// Process context, may sleep.
    fn reject_undelivered_request(&self, ev: &Event) {
        let Ok(req) = CmId::new(self.dev, None, core::ptr::null_mut()) else {
            pr_warn!("no memory to reject an undelivered connect request: the provider keeps it\n");
            // (As for a request whose child cm_id cannot be created.)
            return;
        };
        // SAFETY: `req` is new and not yet visible to anyone: this is the
        // only access to its `iw_cm_id`.
        unsafe { (*req.raw()).provider_data = ev.raw.provider_data };
        req.inner.lock().state = State::ConnRecv;
        let _ = req.reject(&[]);
        req.destroy();
        // The last reference goes with `req` (or with the provider's, if
        // its reject took one).
    }

    // ---- port mapper (iwpm) ----------------------------------------------

    /// `iw_cm_map()` of iwcm.c: asks the user-space port mapper (iwpmd), if
    /// one runs, for the mapped addresses.
    fn map_ports(&self, active: bool) -> Result {
        let raw = self.raw();
        // The fields are read and written through `raw`, never through a
        // `&mut iw_cm_id`: the struct is shared with the ULP and provider.
        // SAFETY: `raw` is live (we hold a reference); the ULP set the
        // addresses before listen/connect and does not change them during
        // the call, and the provider has not seen the id yet.
        let (local, remote) = unsafe { ((*raw).local_addr, (*raw).remote_addr) };
        let mut reg = bindings::iwpm_dev_data::default();
        // SAFETY: the device is valid (IwDevice invariant).
        let devname = unsafe { crate::c::iwcm_c_dev_name(self.dev.as_raw().cast()) };
        // SAFETY: `dev_name` returns a NUL-terminated string owned by the
        // device, which outlives this call.
        let devname = unsafe { CStr::from_char_ptr(devname) }.to_bytes();
        // SAFETY: as above; `iw_ifname` is a NUL-terminated array.
        let ifname_arr = unsafe { &(*self.dev.as_raw()).iw_ifname };
        let ifname_len = ifname_arr
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(ifname_arr.len());
        if devname.len() >= reg.dev_name.len() || ifname_len >= reg.if_name.len() {
            return Err(EINVAL);
        }
        // SAFETY: as above; nobody else writes the mapped addresses now.
        unsafe {
            (*raw).m_local_addr = local;
            (*raw).m_remote_addr = remote;
        }
        for (d, s) in reg.dev_name.iter_mut().zip(devname) {
            *d = *s;
        }
        for (d, s) in reg.if_name.iter_mut().zip(&ifname_arr[..ifname_len]) {
            *d = *s;
        }
        // SAFETY: `reg` is a valid, initialised message.
        let registered =
            unsafe { bindings::iwpm_register_pid(&mut reg, bindings::RDMA_NL_IWCM as u8) };
        // SAFETY: reads the port mapper's state.
        if registered != 0 || unsafe { bindings::iwpm_valid_pid() } == 0 {
            return Ok(());
        }
        // SAFETY: as above.
        unsafe { bindings::iw_cm_id::set_mapped_raw(raw, true) };
        let mut pm = bindings::iwpm_sa_data {
            loc_addr: local,
            rem_addr: remote,
            ..Default::default()
        };
        // SAFETY: the device is valid (IwDevice invariant).
        let drv_flags = unsafe { (*self.dev.as_raw()).iw_driver_flags };
        pm.flags = if drv_flags & bindings::iw_flags_IW_F_NO_PORT_MAP != 0 {
            bindings::IWPM_FLAGS_NO_PORT_MAP
        } else {
            0
        };
        // SAFETY: `pm` is a valid message; the port mapper fills it in.
        let status = unsafe {
            if active {
                bindings::iwpm_add_and_query_mapping(&mut pm, bindings::RDMA_NL_IWCM as u8)
            } else {
                bindings::iwpm_add_mapping(&mut pm, bindings::RDMA_NL_IWCM as u8)
            }
        };
        // The port mapper can answer 0 without filling the mapped
        // addresses in (iwpmd gone between the pid check and the
        // request): a mapped address of another family than the cm_id's
        // own is not adopted; the id keeps its own addresses, as without
        // a port mapper.  (iwcm.c adopts it, and the provider then fails
        // with "Invalid sockaddr family".)
        let same_family = sockaddr::family(&pm.mapped_loc_addr) == sockaddr::family(&local)
            && (!active || sockaddr::family(&pm.mapped_rem_addr) == sockaddr::family(&remote));
        static FAMILY_NOTED: AtomicBool = AtomicBool::new(false);
        if status == 0 && !same_family && !FAMILY_NOTED.swap(true, Ordering::Relaxed) {
            pr_info!(
                "port mapper answered with an address of another family ({} / {} for {}): mapping not used (said once)\n",
                sockaddr::family(&pm.mapped_loc_addr),
                sockaddr::family(&pm.mapped_rem_addr),
                sockaddr::family(&local)
            );
        }
        if status == 0 && same_family {
            let mut m_remote = remote;
            if active {
                m_remote = pm.mapped_rem_addr;
                sockaddr::check_wildcard(&pm.mapped_rem_addr, &remote, &mut m_remote);
            }
            // SAFETY: as above.
            unsafe {
                (*raw).m_local_addr = pm.mapped_loc_addr;
                (*raw).m_remote_addr = m_remote;
            }
        }
        // SAFETY: `raw` is live; both fields are valid sockaddr_storage
        // values, which the port mapper only reads.
        kernel::error::to_result(unsafe {
            bindings::iwpm_create_mapinfo(
                &raw mut (*raw).local_addr,
                &raw mut (*raw).m_local_addr,
                bindings::RDMA_NL_IWCM as u8,
                pm.flags,
            )
        })
    }

    /// Removes the port mapper's mapping (iwcm.c destroy_cm_id).
    fn unmap_ports(&self) {
        let raw = self.raw();
        // SAFETY: `raw` is live; the id is Destroying: nobody changes
        // `mapped` or the addresses any more.
        if unsafe { bindings::iw_cm_id::mapped_raw(raw) } {
            // SAFETY: as above; valid addresses, only read by the port
            // mapper; the mapping was created by map_ports.
            unsafe {
                bindings::iwpm_remove_mapinfo(
                    &raw mut (*raw).local_addr,
                    &raw mut (*raw).m_local_addr,
                );
                bindings::iwpm_remove_mapping(
                    &raw mut (*raw).local_addr,
                    bindings::RDMA_NL_IWCM as u8,
                );
            }
        }
    }

    // ---- delivery ---------------------------------------------------------

    /// Queues this cm_id's work item (a reference goes with it).
    fn kick(this: ArcBorrow<'_, CmId>) {
        let arc: Arc<CmId> = this.into();
        // `Err` means already queued: that run will see our event.
        let _ = crate::delivery_queue().enqueue(arc);
    }

    /// The work item: delivers the queued events in order.
    fn deliver_queued(self: &Arc<Self>) {
        let me = current_task();
        loop {
            let mut g = self.inner.lock();
            // Another task delivers for this id (the listener delivering
            // our CONNECT_REQUEST): it re-queues us when done.
            if g.delivering != 0 {
                return;
            }
            let Some(mut ev) = g.events.pop() else {
                return;
            };
            let Some(input) = ev.input() else {
                drop(g);
                provider_fault!(
                    self.dev.as_raw(),
                    "unknown provider event {}\n",
                    ev.raw.event
                );
                self.inner.lock().handled += 1;
                continue;
            };
            let (next, actions) = match state::step(g.state, input) {
                Outcome::Go { next, actions } => (next, actions),
                Outcome::Drop => {
                    g.handled += 1;
                    continue;
                }
                Outcome::ProviderFault { next, actions } => {
                    let from = g.state;
                    g.state = next;
                    let qp = if actions.contains(Actions::RELEASE_QP) {
                        g.qp.take()
                    } else {
                        None
                    };
                    drop(g);
                    drop(qp);
                    if actions.contains(Actions::WAKE_CONNECT_WAITERS) {
                        self.waiters.notify_all();
                    }
                    provider_fault!(
                        self.dev.as_raw(),
                        "provider event {:?} in state {:?} dropped\n",
                        input,
                        from
                    );
                    // A request on a cm_id that does not listen (any
                    // more): still the provider's object to give back.
                    if input == Input::EvConnectRequest {
                        self.reject_undelivered_request(&ev);
                    }
                    self.inner.lock().handled += 1;
                    continue;
                }
                Outcome::Invalid | Outcome::Wait => {
                    g.handled += 1;
                    continue;
                }
            };
            g.state = next;
            g.delivering = me;
            let qp = if actions.contains(Actions::RELEASE_QP) {
                g.qp.take()
            } else {
                None
            };
            drop(g);
            // The QP reference goes before the ULP hears CLOSE or a failed
            // CONNECT_REPLY: the ULP destroys its QP next, and
            // siw_destroy_qp / c4iw_destroy_qp wait for this reference.
            drop(qp);

            let mut ret = 0;
            if actions.contains(Actions::DELIVER) {
                if let Input::EvConnectReply { ok } = input {
                    let raw = self.raw();
                    // SAFETY: `raw` is live; only this delivering thread
                    // writes the addresses of a connecting id (iwcm.c
                    // cm_conn_rep_handler), through `raw`, not a `&mut`.
                    unsafe {
                        if ok && ev.use_addrs {
                            (*raw).m_local_addr = ev.raw.local_addr;
                            (*raw).m_remote_addr = ev.raw.remote_addr;
                        }
                        // The ULP sees its own addresses on success (as
                        // iwcm.c), and on failure when the provider's are
                        // unusable (a provider fault).
                        if ok || !ev.use_addrs {
                            ev.raw.local_addr = (*raw).local_addr;
                            ev.raw.remote_addr = (*raw).remote_addr;
                        }
                    }
                }
                ret = self.call_ulp(self.raw(), &mut ev);
            }
            if actions.contains(Actions::WAKE_CONNECT_WAITERS) {
                self.waiters.notify_all();
            }
            if actions.contains(Actions::SPAWN_CHILD) {
                self.connect_request(&mut ev);
            }
            if ret != 0 {
                // The ULP asked us to destroy the id (rdma_cm forgets it):
                // we give back the ULP's reference ourselves.
                self.destroy_for_handler();
            }
            {
                let mut g = self.inner.lock();
                g.delivering = 0;
                g.handled += 1;
            }
            self.waiters.notify_all();
        }
    }

    /// A handler returned non-zero: destroy and drop the ULP's reference.
    fn destroy_for_handler(self: &Arc<Self>) {
        let owned = {
            let mut g = self.inner.lock();
            core::mem::replace(&mut g.ulp_owned, false)
        };
        self.destroy();
        if owned {
            // SAFETY: `ulp_owned` was true: the ULP's reference is ours to
            // give back, exactly once; `self` keeps the id alive meanwhile.
            drop(unsafe { Self::from_raw_ref(self.raw()) });
        }
    }

    /// Calls the ULP's handler for `raw` (this id or a new child).
    fn call_ulp(&self, raw: *mut bindings::iw_cm_id, ev: &mut Event) -> i32 {
        // SAFETY: `raw` is live; `cm_handler` was set at creation.
        let handler = unsafe { (*raw).cm_handler };
        match handler {
            // SAFETY: the ULP's handler takes a live cm_id and a valid event;
            // both outlive the call.
            Some(h) => unsafe { h(raw, &mut ev.raw) },
            None => 0,
        }
    }

    /// CONNECT_REQUEST on a listener: create the child cm_id and deliver
    /// the request on it (`cm_conn_req_handler` in iwcm.c).
    fn connect_request(self: &Arc<Self>, ev: &mut Event) {
        // The upcall refused requests with a status, without provider_data
        // or with unusable addresses (event_check).
        // SAFETY: `raw` is live.
        let (handler, context) = unsafe { ((*self.raw()).cm_handler, (*self.raw()).context) };
        // If the cm_id cannot be created (no memory), the request stays
        // with the provider, as in iwcm.c: there is no cm_id to pass to
        // iw_reject.  (siw then keeps the endpoint; see README, known
        // issues.)
        let Ok(child) = CmId::new(self.dev, handler, context) else {
            return;
        };
        let craw = child.raw();
        {
            let lraw = self.raw();
            // SAFETY: `lraw` is live; the listener's addresses are stable
            // while it listens; read through the pointer (the struct is
            // shared with the ULP).
            let (l_local, mut l_m_local) = unsafe { ((*lraw).local_addr, (*lraw).m_local_addr) };
            // SAFETY: the child is new and not yet visible to the ULP or the
            // provider: this is the only access to it.
            let c = unsafe { &mut *craw };
            c.provider_data = ev.raw.provider_data;
            c.m_local_addr = ev.raw.local_addr;
            c.m_remote_addr = ev.raw.remote_addr;
            c.local_addr = l_local;
            // SAFETY: valid addresses; the port mapper fills `remote_addr`.
            let ret = unsafe {
                bindings::iwpm_get_remote_info(
                    &mut l_m_local,
                    &mut ev.raw.remote_addr,
                    &mut c.remote_addr,
                    bindings::RDMA_NL_IWCM as u8,
                )
            };
            if ret != 0 {
                c.remote_addr = ev.raw.remote_addr;
            } else {
                let ev_local = ev.raw.local_addr;
                sockaddr::check_wildcard(&l_m_local, &ev_local, &mut c.local_addr);
                ev.raw.local_addr = c.local_addr;
                ev.raw.remote_addr = c.remote_addr;
            }
        }
        {
            let mut g = child.inner.lock();
            g.state = State::ConnRecv;
            // The child's first event is this request: its own later events
            // wait until the request's delivery is done.
            g.delivering = current_task();
        }
        // The ULP's reference on the child: handed out with the request,
        // given back by iw_destroy_cm_id or by `destroy_for_handler` below.
        let _ = Arc::into_raw(child.clone());
        let listening = self.inner.lock().state == State::Listen;
        let ok = listening && child.reserve_events(PASSIVE_EVENT_SLOTS).is_ok();
        let ret = if ok { self.call_ulp(craw, ev) } else { -1 };
        if ret != 0 {
            // Not listening any more, no memory, or the ULP refused: reject
            // and destroy the child; the ULP's reference is ours.  If the
            // ULP already accepted, destroy aborts the connection instead.
            let _ = child.reject(&[]);
            child.destroy_for_handler();
        }
        {
            let mut g = child.inner.lock();
            g.delivering = 0;
            if g.events.len > 0 {
                drop(g);
                Self::kick(child.as_arc_borrow());
            }
        }
        child.waiters.notify_all();
    }
}

#[pinned_drop]
impl PinnedDrop for CmId {
    fn drop(self: Pin<&mut Self>) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The values of a provider event that passed [`event_check::check`].
#[derive(Clone, Copy)]
struct Checked {
    status: i32,
    ird: u8,
    ord: u8,
    use_addrs: bool,
}

/// The event type of a raw `iw_cm_event`, `None` for an unknown one.
fn kind_of(event: u32) -> Option<Kind> {
    Some(match event {
        bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REQUEST => Kind::ConnectRequest,
        bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REPLY => Kind::ConnectReply,
        bindings::iw_cm_event_type_IW_CM_EVENT_ESTABLISHED => Kind::Established,
        bindings::iw_cm_event_type_IW_CM_EVENT_DISCONNECT => Kind::Disconnect,
        bindings::iw_cm_event_type_IW_CM_EVENT_CLOSE => Kind::Close,
        _ => return None,
    })
}

/// Reports the faults `f` found in a provider event of type `event` with
/// `status` (the provider's values, before correction): counted, and
/// logged with a warning line the first time each kind of fault is seen,
/// without a WARN() backtrace: a peer on the wire can shape these fields
/// through a buggy provider (siw passes on the MPA reply's IRD/ORD and
/// private data), and a WARN would let it panic a `panic_on_warn` machine.
fn report_event_faults(this: &CmId, src: &bindings::iw_cm_event, f: Faults, refused: bool) {
    let (event, status, pdata_len) = (src.event, src.status, src.private_data_len);
    if f.is_empty() {
        return;
    }
    PROVIDER_FAULTS.fetch_add(1, Ordering::Relaxed);
    let what = if refused {
        "refused"
    } else {
        "delivered with the faulty fields dropped or corrected"
    };
    // One message, at info level while the KUnit matrix feeds faults on
    // purpose, else as a warning the first time each kind is seen.
    macro_rules! say {
        ($log:ident) => {
            $log!(
                "provider event {} (status {}, private data length {}) malformed (faults {:#x}): {}\n",
                event,
                status,
                pdata_len,
                f.bits(),
                what
            )
        };
    }
    match fault_log(this.dev.as_raw()) {
        FaultLog::Info => say!(pr_info),
        FaultLog::Silent => {}
        FaultLog::Warn => {
            if f.bits() & !CONTENT_FAULTS_WARNED.fetch_or(f.bits(), Ordering::Relaxed) != 0 {
                say!(pr_warn);
            }
        }
    }
}

/// Judges and copies one provider event in the upcall: the checked values
/// and the copied private data, or the errno the upcall returns.
fn check_and_copy(this: &CmId, src: &bindings::iw_cm_event) -> Result<(Checked, KVec<u8>)> {
    let Some(kind) = kind_of(src.event) else {
        report_event_faults(this, src, Faults::UNKNOWN_EVENT, true);
        return Err(EINVAL);
    };
    let fields = event_check::Fields {
        kind,
        status: src.status,
        pdata_addr: src.private_data as usize,
        pdata_len: src.private_data_len.into(),
        ird: src.ird,
        ord: src.ord,
        local_family: sockaddr::family(&src.local_addr) as u16,
        remote_family: sockaddr::family(&src.remote_addr) as u16,
        provider_data: !src.provider_data.is_null(),
    };
    let lim = event_check::Limits {
        max_rd_atom: this.dev.max_rd_atom(),
    };
    let (checked, copy_pdata, mut faults) = match event_check::check(&fields, &lim) {
        Verdict::Refuse(f) => {
            report_event_faults(this, src, f, true);
            return Err(EINVAL);
        }
        Verdict::Deliver {
            status,
            copy_pdata,
            ird,
            ord,
            use_addrs,
            faults,
        } => (
            Checked {
                status,
                ird,
                ord,
                use_addrs,
            },
            copy_pdata,
            faults,
        ),
    };
    let mut pdata = KVec::<u8>::new();
    if copy_pdata {
        let len = usize::from(src.private_data_len);
        pdata.reserve(len, GFP_ATOMIC)?;
        // SAFETY: `pdata` has room for `len` bytes; the helper reads the
        // untrusted source with copy_from_kernel_nofault() and fails
        // instead of faulting.
        let r = unsafe {
            crate::c::iwcm_c_copy_pdata(
                pdata.as_mut_ptr().cast(),
                src.private_data.cast_const(),
                len,
            )
        };
        if r == 0 {
            // SAFETY: the helper initialised the first `len` bytes.
            unsafe { pdata.inc_len(len) };
        } else {
            faults = faults.with(Faults::PDATA_BAD_POINTER);
            if kind == Kind::ConnectRequest {
                report_event_faults(this, src, faults, true);
                return Err(EINVAL);
            }
        }
    }
    report_event_faults(this, src, faults, false);
    Ok((checked, pdata))
}

/// The provider's upcall (`cm_id->event_handler`): check the event, copy
/// it and queue it for in-order delivery on this cm_id's work item.
///
/// Context: process or softirq (siw calls it from its `sk_data_ready`
/// callback), with or without the provider's spinlocks held; not hard
/// interrupt context (the cm_id lock is a `spinlock_t`, as in iwcm.c).
/// Never sleeps, allocates only with GFP_ATOMIC (private data).
///
/// Every field of the event is untrusted (see [`event_check`]): the
/// private data is copied only when its status allows it, with a
/// length within the MPA limit, from a pointer that is readable
/// (`copy_from_kernel_nofault`); malformed fields are provider faults,
/// warned once and corrected or dropped.
///
/// Returns 0; -ENOMEM when the cm_id's preallocated event slots are full
/// or the private data cannot be copied (as iwcm.c: the provider then
/// rejects or drops the connection); -EINVAL for a provider fault that
/// leaves nothing to deliver: a null pointer, an unknown event type, a
/// malformed CONNECT_REQUEST (the provider keeps and releases its
/// connection object), or an event on a cm_id that never listened,
/// connected or accepted (where iwcm.c reaches `BUG()`), with a warning;
/// -ECONNABORTED for a CONNECT_REQUEST on a listener being destroyed (the
/// provider releases the request, as for -ENOMEM).
///
/// # Safety
///
/// Called by the provider with a cm_id it holds a reference on and a valid
/// `struct iw_cm_event` (whose contents are checked here).
unsafe extern "C" fn cm_event_handler(
    raw: *mut bindings::iw_cm_id,
    event: *mut bindings::iw_cm_event,
) -> i32 {
    if raw.is_null() || event.is_null() {
        provider_fault!(core::ptr::null(), "event upcall with a null pointer\n");
        return EINVAL.to_errno();
    }
    // SAFETY: the provider holds a reference on the cm_id (add_ref).
    let this = unsafe { CmId::borrow(raw) };
    // SAFETY: the event is valid for the duration of the upcall.
    let src = unsafe { &*event };
    let (checked, pdata) = match check_and_copy(&this, src) {
        Ok(v) => v,
        Err(e) => return e.to_errno(),
    };
    let is_request = src.event == bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REQUEST;
    let mut ev = Some(Event::new(src, pdata, checked));
    let (queued, no_slots, refused) = {
        let mut g = this.inner.lock();
        if g.state == State::Destroying {
            // A request the listener will never deliver: refused, so
            // that the provider releases it (siw_proc_mpareq drops its
            // reference and the connection).  Other events after
            // destroy are dropped, as iwcm.c's IWCM_F_DROP_EVENTS does;
            // `ev` is freed after the unlock either way.
            (true, false, is_request)
        } else if g.events.push(&mut ev) {
            g.queued += 1;
            (true, false, false)
        } else {
            (false, g.events.slots.is_empty(), false)
        }
    };
    if refused {
        return ECONNABORTED.to_errno();
    }
    if no_slots {
        // Slots are reserved by listen, connect and accept: a cm_id
        // without any never gave the provider a reason to call it.
        provider_fault!(
            this.dev.as_raw(),
            "provider event {} on a cm_id that is not connecting, accepting or listening\n",
            src.event
        );
        return EINVAL.to_errno();
    }
    if !queued {
        return ENOMEM.to_errno();
    }
    if ev.is_none() {
        CmId::kick(this);
    }
    0
}

/// `cm_id->add_ref`: the provider takes a reference.  Any context.
///
/// # Safety
///
/// `raw` is a live cm_id of this module (the caller holds a reference).
unsafe extern "C" fn cm_add_ref(raw: *mut bindings::iw_cm_id) {
    if raw.is_null() {
        provider_fault!(core::ptr::null(), "add_ref on a null cm_id\n");
        return;
    }
    // SAFETY: guaranteed by the caller.
    let b = unsafe { CmId::borrow(raw) };
    b.provider_refs.fetch_add(1, Ordering::Relaxed);
    let arc: Arc<CmId> = b.into();
    let _ = Arc::into_raw(arc);
}

/// `cm_id->rem_ref`: the provider drops a reference (may free the cm_id).
/// Any context.  A `rem_ref` beyond the provider's `add_ref`s is a
/// provider fault, warned once and ignored: it would otherwise drop the
/// ULP's (or a queued event's) reference and free the cm_id under them.
///
/// # Safety
///
/// `raw` is a cm_id of this module on which the provider took a reference
/// with `add_ref` (checked as far as the count goes: an unbalanced call is
/// caught while another reference keeps the cm_id alive).
unsafe extern "C" fn cm_rem_ref(raw: *mut bindings::iw_cm_id) {
    if raw.is_null() {
        provider_fault!(core::ptr::null(), "rem_ref on a null cm_id\n");
        return;
    }
    // The count below is a best-effort guard against a provider that breaks
    // the contract while another reference (the ULP's, a queued event's)
    // still keeps the cm_id alive; after the last one it cannot help.
    // SAFETY: by the caller's contract the provider holds a reference.
    let b = unsafe { CmId::borrow(raw) };
    let dec = b
        .provider_refs
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    if dec.is_err() {
        provider_fault!(
            b.dev.as_raw(),
            "rem_ref without a matching add_ref: ignored\n"
        );
        return;
    }
    // SAFETY: the provider owned one reference taken with `add_ref`.
    drop(unsafe { CmId::from_raw_ref(raw) });
}
