// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! rdma_cm ids ([`CmId`]) and their event handler ([`Handler`]).
//!
//! C header: [`include/rdma/rdma_cm.h`](srctree/include/rdma/rdma_cm.h).
//!
//! # Contexts
//!
//! The `context` of every id created here holds one reference of an
//! `Arc<T>` (`T: Handler`), owned by the [`CmId<T>`] that stands for the
//! ULP's ownership of the id.  rdma_cm calls [`Handler::event`] with that
//! `T`.  A new id announced by `RDMA_CM_EVENT_CONNECT_REQUEST` inherits its
//! listener's handler and context (`iw_conn_req_handler` and
//! `cma_ib_req_handler` in drivers/infiniband/core/cma.c); the trampoline
//! gives it a context of its own before it can see another event.
//!
//! # Destruction
//!
//! An id ends in one of two ways: its owner calls [`CmId::destroy`] (never
//! from the id's own handler: `rdma_destroy_id` waits for that handler), or
//! its handler returns [`Disposition::Destroy`] and rdma_cm destroys it
//! after the handler returns.  Either way the context reference is dropped
//! once no handler can run for the id any more.  A `CmId` that is dropped
//! without either leaks the id (it has no destructor, because destroying
//! is only correct in some contexts).

use super::verbs::{Device, Pd, Qp, QpInitAttr};
use crate::bindings;
use core::{ffi::c_int, ffi::c_void, marker::PhantomData, ops::Deref, ptr::NonNull};
use kernel::{
    error::{from_err_ptr, to_result},
    prelude::*,
    sync::{Arc, ArcBorrow},
    types::Opaque,
};

/// The rdma_cm events a ULP tells apart (`enum rdma_cm_event_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// `RDMA_CM_EVENT_ADDR_RESOLVED`.
    AddrResolved,
    /// `RDMA_CM_EVENT_ADDR_ERROR`.
    AddrError,
    /// `RDMA_CM_EVENT_ROUTE_RESOLVED`.
    RouteResolved,
    /// `RDMA_CM_EVENT_ROUTE_ERROR`.
    RouteError,
    /// `RDMA_CM_EVENT_CONNECT_REQUEST`.
    ConnectRequest,
    /// `RDMA_CM_EVENT_CONNECT_ERROR`.
    ConnectError,
    /// `RDMA_CM_EVENT_UNREACHABLE`.
    Unreachable,
    /// `RDMA_CM_EVENT_REJECTED`.
    Rejected,
    /// `RDMA_CM_EVENT_ESTABLISHED`.
    Established,
    /// `RDMA_CM_EVENT_DISCONNECTED`.
    Disconnected,
    /// `RDMA_CM_EVENT_DEVICE_REMOVAL`.
    DeviceRemoval,
    /// `RDMA_CM_EVENT_ADDR_CHANGE`.
    AddrChange,
    /// `RDMA_CM_EVENT_TIMEWAIT_EXIT`.
    TimewaitExit,
    /// Any other event: its `enum rdma_cm_event_type` value.
    Other(u32),
}

impl EventKind {
    fn from_raw(e: bindings::rdma_cm_event_type) -> Self {
        match e {
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED => Self::AddrResolved,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_ERROR => Self::AddrError,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED => Self::RouteResolved,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_ERROR => Self::RouteError,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST => Self::ConnectRequest,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_ERROR => Self::ConnectError,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_UNREACHABLE => Self::Unreachable,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_REJECTED => Self::Rejected,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED => Self::Established,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED => Self::Disconnected,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL => Self::DeviceRemoval,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_CHANGE => Self::AddrChange,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_TIMEWAIT_EXIT => Self::TimewaitExit,
            other => Self::Other(other),
        }
    }
}

/// One rdma_cm event, valid while the handler that received it runs.
pub(crate) struct Event<'a> {
    raw: &'a bindings::rdma_cm_event,
}

impl<'a> Event<'a> {
    fn new(raw: &'a bindings::rdma_cm_event) -> Self {
        Self { raw }
    }

    /// The event type.
    pub(crate) fn kind(&self) -> EventKind {
        EventKind::from_raw(self.raw.event)
    }

    /// The event's status (a negative errno, 0, or a transport reason).
    pub(crate) fn status(&self) -> i32 {
        self.raw.status
    }

    /// The peer's private data of a CONNECT_REQUEST, ESTABLISHED or
    /// REJECTED event of a connected (RC) id; empty for other events.
    pub(crate) fn private_data(&self) -> &'a [u8] {
        match self.kind() {
            EventKind::ConnectRequest | EventKind::Established | EventKind::Rejected => {}
            _ => return &[],
        }
        // SAFETY: for the connection events of an RC id rdma_cm fills
        // `param.conn` (cma.c); every bit pattern is valid for its fields.
        let conn = unsafe { &self.raw.param.conn };
        if conn.private_data.is_null() || conn.private_data_len == 0 {
            return &[];
        }
        // SAFETY: rdma_cm's private data buffer holds `private_data_len`
        // bytes and lives until the handler returns (`'a`).
        unsafe {
            core::slice::from_raw_parts(
                conn.private_data.cast::<u8>(),
                usize::from(conn.private_data_len),
            )
        }
    }
}

/// An IPv4 socket address (`struct sockaddr_in`).
#[derive(Clone, Copy)]
pub(crate) struct SockAddrIn(bindings::sockaddr_in);

impl SockAddrIn {
    /// `a.b.c.d:port`.
    pub(crate) fn new(octets: [u8; 4], port: u16) -> Self {
        Self(bindings::sockaddr_in {
            sin_family: bindings::AF_INET as bindings::__kernel_sa_family_t,
            sin_port: port.to_be(),
            sin_addr: bindings::in_addr {
                s_addr: u32::from_ne_bytes(octets),
            },
            __pad: [0; 8],
        })
    }

    fn as_sockaddr(&self) -> *mut bindings::sockaddr {
        // `rdma_resolve_addr` and `rdma_bind_addr` take a non-const pointer
        // but only read the address.
        core::ptr::from_ref(&self.0).cast_mut().cast()
    }
}

/// Connection parameters of `rdma_connect` / `rdma_accept`.
pub(crate) struct ConnParam<'a> {
    raw: bindings::rdma_conn_param,
    _private_data: PhantomData<&'a [u8]>,
}

impl<'a> ConnParam<'a> {
    /// RC parameters with `private_data` (at most 255 bytes, and what the
    /// transport allows: 196 for rdma_cm over iWARP's MPA) and `rd_atomic`
    /// outstanding RDMA reads each way.
    pub(crate) fn new(private_data: &'a [u8], rd_atomic: u8) -> Result<Self> {
        let len = u8::try_from(private_data.len()).map_err(|_| EINVAL)?;
        Ok(Self {
            raw: bindings::rdma_conn_param {
                private_data: if len == 0 {
                    core::ptr::null()
                } else {
                    private_data.as_ptr().cast()
                },
                private_data_len: len,
                responder_resources: rd_atomic,
                initiator_depth: rd_atomic,
                flow_control: 1,
                retry_count: 7,
                rnr_retry_count: 7,
                ..Default::default()
            },
            _private_data: PhantomData,
        })
    }
}

/// A borrowed rdma_cm id (`struct rdma_cm_id`).
///
/// # Invariants
///
/// The id is alive (created and not yet destroyed) for the lifetime of the
/// reference.
#[repr(transparent)]
pub(crate) struct CmIdRef(Opaque<bindings::rdma_cm_id>);

impl CmIdRef {
    /// # Safety
    ///
    /// `ptr` points to an rdma_cm id that stays alive for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::rdma_cm_id) -> &'a Self {
        // SAFETY: `CmIdRef` is a transparent wrapper of the C struct; the
        // caller guarantees the lifetime.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The raw `struct rdma_cm_id *`.
    pub(crate) fn as_raw(&self) -> *mut bindings::rdma_cm_id {
        self.0.get()
    }

    fn context(&self) -> *mut c_void {
        // SAFETY: the id is alive (type invariant); `context` is written
        // only by the id's owner (this module) before the id can see events.
        unsafe { (*self.as_raw()).context }
    }

    /// The device the id is bound to, once rdma_cm has bound it (address
    /// resolved, bound to a local address, or a connection request).
    pub(crate) fn device(&self) -> Option<Device> {
        // rdma_cm sets `device` once, when it binds the id, before the event
        // that reports it, and keeps the device registered while an id is
        // bound to it (device removal waits for every such id to go).
        let dev = self.as_raw();
        // SAFETY: the id is alive and its `device` set for good (above).
        unsafe { Device::from_raw((*dev).device) }
    }

    /// The id's QP (`id->qp`), null before `rdma_create_qp` and after
    /// `rdma_destroy_qp`.
    fn qp(&self) -> *mut bindings::ib_qp {
        // SAFETY: the id is alive (type invariant); `qp` is written only by
        // `rdma_create_qp` and `rdma_destroy_qp`, which the id's owner calls
        // through `create_qp` and `destroy_qp`, not concurrently with the
        // other operations of the id.
        unsafe { (*self.as_raw()).qp }
    }

    /// `rdma_resolve_addr`: resolve `dst` (asynchronous: ADDR_RESOLVED or
    /// ADDR_ERROR follows).
    pub(crate) fn resolve_addr(&self, dst: &SockAddrIn, timeout_ms: u32) -> Result {
        let ms = usize::try_from(timeout_ms).map_err(|_| EINVAL)?;
        // SAFETY: the id is alive; the address is read during the call.
        to_result(unsafe {
            bindings::rdma_resolve_addr(self.as_raw(), core::ptr::null_mut(), dst.as_sockaddr(), ms)
        })
    }

    /// `rdma_resolve_route` (asynchronous: ROUTE_RESOLVED or ROUTE_ERROR).
    pub(crate) fn resolve_route(&self, timeout_ms: u32) -> Result {
        let ms = usize::try_from(timeout_ms).map_err(|_| EINVAL)?;
        // SAFETY: the id is alive.
        to_result(unsafe { bindings::rdma_resolve_route(self.as_raw(), ms) })
    }

    /// `rdma_bind_addr` to a local address.
    pub(crate) fn bind_addr(&self, addr: &SockAddrIn) -> Result {
        // SAFETY: the id is alive; the address is read during the call.
        to_result(unsafe { bindings::rdma_bind_addr(self.as_raw(), addr.as_sockaddr()) })
    }

    /// `rdma_listen` with `backlog` (0: the rdma_cm default).
    pub(crate) fn listen(&self, backlog: i32) -> Result {
        // SAFETY: the id is alive.
        to_result(unsafe { bindings::rdma_listen(self.as_raw(), backlog) })
    }

    /// `rdma_create_qp`: an RC QP on the id's device, in `pd`.
    ///
    /// The QP must be destroyed before `pd` and the CQs of `attr` are freed.
    pub(crate) fn create_qp(&self, pd: &Pd, attr: &QpInitAttr) -> Result<Qp> {
        let mut attr = attr.to_raw();
        // SAFETY: the id is alive and bound to the device of `pd`; `attr`
        // is a valid init attribute block read during the call.
        to_result(unsafe { bindings::rdma_create_qp(self.as_raw(), pd.as_raw(), &mut attr) })?;
        // SAFETY: `rdma_create_qp` succeeded, so `id->qp` is the QP just
        // created, owned by the caller from now on.
        unsafe { Qp::from_raw(self.qp()) }.ok_or(EINVAL)
    }

    /// `rdma_destroy_qp`: drains (unless done) and destroys `qp`, this id's
    /// QP, through rdma_cm.  Sleeps.
    ///
    /// A QP that is not this id's is destroyed with `ib_destroy_qp`.
    pub(crate) fn destroy_qp(&self, qp: Qp) {
        if self.qp() != qp.as_raw() {
            drop(qp);
            return;
        }
        qp.forget();
        // SAFETY: the id is alive and `id->qp` is the QP we owned.
        unsafe { bindings::rdma_destroy_qp(self.as_raw()) };
    }

    /// `rdma_connect_locked`: connect (asynchronous: ESTABLISHED, REJECTED,
    /// ...).  Only from this id's own handler (ROUTE_RESOLVED).
    pub(crate) fn connect_locked(&self, param: &ConnParam<'_>) -> Result {
        let mut raw = param.raw;
        // SAFETY: the id is alive; `raw` and its private data are read
        // during the call.
        to_result(unsafe { bindings::rdma_connect_locked(self.as_raw(), &mut raw) })
    }

    /// `rdma_accept`: accept a connection request.  Only from the
    /// CONNECT_REQUEST handler of this (new) id.
    pub(crate) fn accept(&self, param: &ConnParam<'_>) -> Result {
        let mut raw = param.raw;
        // SAFETY: the id is alive; `raw` and its private data are read
        // during the call.
        to_result(unsafe { bindings::rdma_accept(self.as_raw(), &mut raw) })
    }

    /// `rdma_disconnect`: start closing the connection (DISCONNECTED follows).
    pub(crate) fn disconnect(&self) -> Result {
        // SAFETY: the id is alive.
        to_result(unsafe { bindings::rdma_disconnect(self.as_raw()) })
    }
}

/// What happens to an id when its handler returns.
pub(crate) enum Disposition<T: Handler> {
    /// The id stays; its owner destroys it later with [`CmId::destroy`].
    Keep,
    /// The handler gives up the id it was called for: rdma_cm destroys it
    /// after the handler returns (a non-zero return).  Everything created
    /// through the id (its QP) must be gone by then.
    Destroy(CmId<T>),
}

/// The event handler of the ids whose context is an `Arc<Self>`.
pub(crate) trait Handler: Send + Sync + Sized {
    /// An event for `id`, whose context is `this`.
    ///
    /// Runs with the id's `handler_mutex` held (rdma_cm), in process context.
    fn event(this: ArcBorrow<'_, Self>, id: &CmIdRef, ev: &Event<'_>) -> Disposition<Self>;

    /// A connection request on the listener whose context is `listener`;
    /// `id` is the new id.  `Ok(child)` keeps the id with `child` as its
    /// context (then [`Handler::adopt`] hands over its [`CmId`]); `Err`
    /// makes rdma_cm destroy it.
    fn connect_request(
        listener: ArcBorrow<'_, Self>,
        id: &CmIdRef,
        ev: &Event<'_>,
    ) -> Result<Arc<Self>>;

    /// Hands the owner of a new id, accepted by
    /// [`Handler::connect_request`], to its context.
    fn adopt(this: &Arc<Self>, id: CmId<Self>);
}

/// The rdma_cm event handler of every id created here.
///
/// # Safety
///
/// Called by rdma_cm only, for an id created by [`CmId::new`] (or a
/// connection request on one) with `handler::<T>`.
unsafe extern "C" fn handler<T: Handler>(
    id: *mut bindings::rdma_cm_id,
    event: *mut bindings::rdma_cm_event,
) -> c_int {
    // SAFETY: rdma_cm passes an id and an event that are valid during the
    // call.
    let (cm_id, ev) = unsafe { (CmIdRef::from_raw(id), Event::new(&*event)) };
    let ctx = cm_id.context().cast::<T>().cast_const();
    // SAFETY: the context of an id created here is one reference of an
    // `Arc<T>` (see the module documentation): the id's own, or for a
    // CONNECT_REQUEST its listener's.  It outlives this call: references are
    // dropped only when no handler can run for the id any more.
    let this = unsafe { ArcBorrow::from_raw(ctx) };
    if ev.kind() == EventKind::ConnectRequest {
        return match T::connect_request(this, cm_id, &ev) {
            Ok(child) => {
                // SAFETY: the new id is alive and its handler cannot run
                // before this one returns (rdma_cm holds its handler_mutex),
                // so nobody reads `context` concurrently.
                unsafe { (*id).context = Arc::into_raw(child.clone()).cast_mut().cast() };
                // INVARIANT: the id is alive, uses `handler::<T>` (inherited)
                // and its context is now a reference owned by the `CmId`.
                let owned = CmId {
                    ptr: NonNull::from(cm_id).cast(),
                    _ctx: PhantomData,
                };
                T::adopt(&child, owned);
                0
            }
            // A non-zero return makes rdma_cm destroy the new id.
            Err(_) => 1,
        };
    }
    match T::event(this, cm_id, &ev) {
        Disposition::Keep => 0,
        Disposition::Destroy(own) => {
            if own.ptr.as_ptr() != id {
                // Another id cannot be destroyed from here: keep both.
                kernel::warn_on!(true);
                return 0;
            }
            // SAFETY: `own` owned this id's context reference (type invariant
            // of `CmId`); rdma_cm destroys the id after a non-zero return and
            // calls no handler for it again.
            drop(unsafe { Arc::from_raw(ctx) });
            1
        }
    }
}

/// The ULP's ownership of an rdma_cm id whose context is an `Arc<T>`.
///
/// # Invariants
///
/// `ptr` is an alive rdma_cm id with event handler `handler::<T>`; its
/// `context` is one reference of an `Arc<T>` (from `Arc::into_raw`) that this
/// value owns.
pub(crate) struct CmId<T: Handler> {
    ptr: NonNull<bindings::rdma_cm_id>,
    _ctx: PhantomData<Arc<T>>,
}

// SAFETY: rdma_cm ids may be used and destroyed from any thread in process
// context; the context reference is an `Arc<T>` with `T: Send + Sync`.
unsafe impl<T: Handler> Send for CmId<T> {}
// SAFETY: as for `Send`; the operations on `&CmIdRef` are rdma_cm calls that
// lock internally.
unsafe impl<T: Handler> Sync for CmId<T> {}

impl<T: Handler> CmId<T> {
    /// A new RC id in the initial network namespace (`rdma_create_id`,
    /// RDMA_PS_TCP, IB_QPT_RC) with `ctx` as its context.
    pub(crate) fn new(ctx: Arc<T>) -> Result<Self> {
        let raw_ctx = Arc::into_raw(ctx);
        // SAFETY: `handler::<T>` matches the context type; the context
        // reference is handed to the id.
        let id =
            unsafe { bindings::rdma_ulp_create_id(Some(handler::<T>), raw_ctx.cast_mut().cast()) };
        match from_err_ptr(id) {
            Ok(id) => Ok(Self {
                // INVARIANT: a new id with `handler::<T>` and our context.
                ptr: NonNull::new(id).ok_or(ENOMEM)?,
                _ctx: PhantomData,
            }),
            Err(e) => {
                // SAFETY: the id was not created; the reference is ours again.
                drop(unsafe { Arc::from_raw(raw_ctx) });
                Err(e)
            }
        }
    }

    /// Destroys the id (`rdma_destroy_id`) and drops its context reference.
    ///
    /// Waits for a running handler of the id, so it must not be called from
    /// that handler (nor, for an id being accepted, from its listener's).
    /// The id's QP may still exist (it is destroyed separately).
    pub(crate) fn destroy(self) {
        let ctx = self.context().cast::<T>().cast_const();
        // SAFETY: the id is alive (type invariant) and destroyed once: `self`
        // is consumed.
        unsafe { bindings::rdma_destroy_id(self.ptr.as_ptr()) };
        // SAFETY: no handler runs or will run for the id any more, so the
        // context reference it owned is released.
        drop(unsafe { Arc::from_raw(ctx) });
    }
}

impl<T: Handler> Deref for CmId<T> {
    type Target = CmIdRef;

    fn deref(&self) -> &CmIdRef {
        // SAFETY: the id is alive while `self` exists (type invariant).
        unsafe { CmIdRef::from_raw(self.ptr.as_ptr()) }
    }
}
