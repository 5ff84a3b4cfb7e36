// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The suite's fake iWARP provider.
//!
//! A zeroed `struct ib_device` whose `iw_*` ops and `modify_qp` are the
//! functions below; it counts QP references, provider calls and QP state
//! changes, and injects events through the cm_id's `event_handler` exactly
//! as siw and iw_cxgb4 do ([`upcall`]).  Also the addresses rdma_cm and the
//! provider fill in, and the per-task fault injection (`fail_nth`).

use super::fake_ulp::*;
use crate::bindings;
use crate::iface;
use core::ffi::c_void;
use core::mem::MaybeUninit;
use core::ptr;
use core::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, Ordering::SeqCst};
use kernel::prelude::*;

pub(super) const EV_REQ: u32 = bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REQUEST;
pub(super) const EV_REPLY: u32 = bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REPLY;
pub(super) const EV_EST: u32 = bindings::iw_cm_event_type_IW_CM_EVENT_ESTABLISHED;
pub(super) const EV_DISC: u32 = bindings::iw_cm_event_type_IW_CM_EVENT_DISCONNECT;
pub(super) const EV_CLOSE: u32 = bindings::iw_cm_event_type_IW_CM_EVENT_CLOSE;
pub(super) const FAKE_QPN: u32 = 7;

// ---- fake provider state ------------------------------------------------
pub(super) static QP_REFS: AtomicI32 = AtomicI32::new(0);
pub(super) static QP_TO_ERR: AtomicU32 = AtomicU32::new(0);
pub(super) static QP_TO_SQD: AtomicU32 = AtomicU32::new(0);
pub(super) static CONNECTS: AtomicU32 = AtomicU32::new(0);
pub(super) static ACCEPTS: AtomicU32 = AtomicU32::new(0);
pub(super) static REJECTS: AtomicU32 = AtomicU32::new(0);
pub(super) static LISTENS: AtomicU32 = AtomicU32::new(0);
/// The backlog of the last `create_listen`.
pub(super) static LISTEN_BACKLOG: AtomicI32 = AtomicI32::new(0);
pub(super) static UNLISTENS: AtomicU32 = AtomicU32::new(0);
pub(super) static FAKE_QP: AtomicPtr<bindings::ib_qp> = AtomicPtr::new(ptr::null_mut());

// The kernel's per-task fault injection (`current->fail_nth`, as
// /proc/self/fail-nth): the Nth fault point this task reaches fails,
// `fail_iw_cm`'s included, whatever its probability.  Helpers of
// iw_cm_kunit_glue.c; `iwcm_kunit_set_fail_nth` says false on a kernel
// without CONFIG_FAULT_INJECTION.
extern "C" {
    pub(super) fn iwcm_kunit_set_fail_nth(n: u32) -> bool;
    pub(super) fn iwcm_kunit_fail_nth() -> u32;
}

/// Arms the `n`th fault point of the current task to fail (0: disarm).
/// False without CONFIG_FAULT_INJECTION.
pub(super) fn set_fail_nth(n: u32) -> bool {
    // SAFETY: writes the current task's own fail_nth; no pointers.
    unsafe { iwcm_kunit_set_fail_nth(n) }
}

/// What is left of the current task's `fail_nth` (0 once it fired).
pub(super) fn fail_nth() -> u32 {
    // SAFETY: reads the current task's own fail_nth; no pointers.
    unsafe { iwcm_kunit_fail_nth() }
}

/// Provider faults of the fake provider's devices are provoked on
/// purpose from now on: iw_cm counts them and logs them at info level
/// (`quiet`: not at all) instead of warning.  A real provider's faults
/// still warn.
pub(super) fn expect_faults(quiet: bool) {
    let op: unsafe extern "C" fn(*mut bindings::iw_cm_id, *mut bindings::iw_cm_conn_param) -> i32 =
        fake_connect;
    iface::expect_faults(op as *const c_void, quiet);
}

/// Ends [`expect_faults`].
pub(super) fn expect_no_faults() {
    iface::expect_faults(ptr::null(), false);
}

/// Fake provider op.
///
/// # Safety
///
/// Called by iw_cm (or the test) with live pointers, as the C op it fakes.
pub(super) unsafe extern "C" fn fake_add_ref(_qp: *mut bindings::ib_qp) {
    QP_REFS.fetch_add(1, SeqCst);
}
/// Fake provider op.
///
/// # Safety
///
/// Called by iw_cm (or the test) with live pointers, as the C op it fakes.
pub(super) unsafe extern "C" fn fake_rem_ref(_qp: *mut bindings::ib_qp) {
    QP_REFS.fetch_sub(1, SeqCst);
}
/// Fake provider op.
///
/// # Safety
///
/// Called by iw_cm (or the test) with live pointers, as the C op it fakes.
pub(super) unsafe extern "C" fn fake_get_qp(
    _d: *mut bindings::ib_device,
    qpn: i32,
) -> *mut bindings::ib_qp {
    if qpn as u32 == FAKE_QPN {
        FAKE_QP.load(SeqCst)
    } else {
        ptr::null_mut()
    }
}
/// As siw_connect: the provider keeps a reference on the cm_id.
///
/// # Safety
///
/// Called by iw_cm (or the test) with live pointers, as the C op it fakes.
pub(super) unsafe extern "C" fn fake_connect(
    id: *mut bindings::iw_cm_id,
    _p: *mut bindings::iw_cm_conn_param,
) -> i32 {
    CONNECTS.fetch_add(1, SeqCst);
    // SAFETY: iw_cm passes a live cm_id with `add_ref` set.
    unsafe { ((*id).add_ref.unwrap())(id) };
    0
}
/// Fake provider op.
///
/// # Safety
///
/// Called by iw_cm (or the test) with live pointers, as the C op it fakes.
pub(super) unsafe extern "C" fn fake_accept(
    id: *mut bindings::iw_cm_id,
    _p: *mut bindings::iw_cm_conn_param,
) -> i32 {
    ACCEPTS.fetch_add(1, SeqCst);
    // SAFETY: as in `fake_connect`.
    unsafe { ((*id).add_ref.unwrap())(id) };
    0
}
/// Fake provider op.
///
/// # Safety
///
/// Called by iw_cm (or the test) with live pointers, as the C op it fakes.
pub(super) unsafe extern "C" fn fake_reject(
    id: *mut bindings::iw_cm_id,
    _p: *const c_void,
    _l: u8,
) -> i32 {
    // SAFETY: iw_cm passes a live cm_id; `provider_data` is the token
    // of the request (as siw_reject reads its endpoint from it).
    let token = unsafe { (*id).provider_data } as usize;
    REJECTED_TOKENS.fetch_add(token, SeqCst);
    // Counted after the token: a test that waits for the count reads
    // every counted reject's token (rejects run on iw_cm's workers).
    REJECTS.fetch_add(1, SeqCst);
    0
}
/// Fake provider op.
///
/// # Safety
///
/// Called by iw_cm (or the test) with live pointers, as the C op it fakes.
pub(super) unsafe extern "C" fn fake_create_listen(_id: *mut bindings::iw_cm_id, b: i32) -> i32 {
    LISTEN_BACKLOG.store(b, SeqCst);
    LISTENS.fetch_add(1, SeqCst);
    0
}
/// Fake provider op.
///
/// # Safety
///
/// Called by iw_cm (or the test) with live pointers, as the C op it fakes.
pub(super) unsafe extern "C" fn fake_destroy_listen(_id: *mut bindings::iw_cm_id) -> i32 {
    UNLISTENS.fetch_add(1, SeqCst);
    0
}
/// Fake provider op.
///
/// # Safety
///
/// Called by iw_cm (or the test) with live pointers, as the C op it fakes.
pub(super) unsafe extern "C" fn fake_modify_qp(
    _qp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    _mask: i32,
    _udata: *mut bindings::ib_udata,
) -> i32 {
    // SAFETY: ib_modify_qp passes the caller's valid attributes.
    let st = unsafe { (*attr).qp_state };
    if st == bindings::ib_qp_state_IB_QPS_ERR {
        QP_TO_ERR.fetch_add(1, SeqCst);
    } else if st == bindings::ib_qp_state_IB_QPS_SQD {
        QP_TO_SQD.fetch_add(1, SeqCst);
    }
    0
}

/// A zeroed allocation of a C struct.
pub(super) fn zeroed_box<T>() -> Result<KBox<T>> {
    let b = KBox::<T>::new_uninit(GFP_KERNEL | __GFP_ZERO)?;
    // SAFETY: `__GFP_ZERO` zeroed it; an all-zero C struct of bindgen
    // types (integers, raw pointers, `Option<fn>`) is valid.
    Ok(unsafe { b.assume_init() })
}

/// A fake iWARP device with one QP (number FAKE_QPN).
pub(super) struct FakeDev {
    dev: KBox<bindings::ib_device>,
    _port_data: KVec<MaybeUninit<bindings::ib_port_data>>,
    qp: KBox<bindings::ib_qp>,
}

impl FakeDev {
    pub(super) fn new() -> Result<Self> {
        let mut dev = zeroed_box::<bindings::ib_device>()?;
        // Ports 0 and 1 with no capability flags: neither IB nor RoCE,
        // so ib_modify_qp goes straight to `ops.modify_qp`.
        let mut port_data = KVec::with_capacity(2, GFP_KERNEL | __GFP_ZERO)?;
        for _ in 0..2 {
            port_data.push(MaybeUninit::zeroed(), GFP_KERNEL)?;
        }
        dev.port_data = port_data.as_mut_ptr().cast();
        dev.ops.iw_add_ref = Some(fake_add_ref);
        dev.ops.iw_rem_ref = Some(fake_rem_ref);
        dev.ops.iw_get_qp = Some(fake_get_qp);
        dev.ops.iw_connect = Some(fake_connect);
        dev.ops.iw_accept = Some(fake_accept);
        dev.ops.iw_reject = Some(fake_reject);
        dev.ops.iw_create_listen = Some(fake_create_listen);
        dev.ops.iw_destroy_listen = Some(fake_destroy_listen);
        dev.ops.modify_qp = Some(fake_modify_qp);
        dev.attrs.max_qp_rd_atom = FAKE_MAX_RD_ATOM;
        dev.attrs.max_qp_init_rd_atom = FAKE_MAX_RD_ATOM;
        let mut qp = zeroed_box::<bindings::ib_qp>()?;
        qp.device = &mut *dev;
        let qp_ptr: *mut bindings::ib_qp = &mut *qp;
        qp.real_qp = qp_ptr;
        FAKE_QP.store(qp_ptr, SeqCst);
        Ok(Self {
            dev,
            _port_data: port_data,
            qp,
        })
    }

    pub(super) fn raw(&mut self) -> *mut bindings::ib_device {
        &mut *self.dev
    }
}

impl Drop for FakeDev {
    fn drop(&mut self) {
        let p: *mut bindings::ib_qp = &mut *self.qp;
        let _ = FAKE_QP.compare_exchange(p, ptr::null_mut(), SeqCst, SeqCst);
    }
}

/// A well-formed event of type `kind` with `status`, as siw and
/// iw_cxgb4 send it (a request carries its provider object).
pub(super) fn wire_event(kind: u32, status: i32) -> bindings::iw_cm_event {
    bindings::iw_cm_event {
        event: kind,
        status,
        local_addr: ipv4(WIRE_LOCAL),
        remote_addr: ipv4(WIRE_REMOTE),
        provider_data: if kind == EV_REQ {
            REQ_TOKEN as *mut c_void
        } else {
            ptr::null_mut()
        },
        ..Default::default()
    }
}

/// The provider's upcall of `ev` on `id`.
pub(super) fn upcall_ev(id: *mut bindings::iw_cm_id, mut ev: bindings::iw_cm_event) -> i32 {
    // SAFETY: `id` is live and its `event_handler` is iw_cm's; `ev`
    // outlives the call.
    unsafe { ((*id).event_handler.unwrap())(id, &mut ev) }
}

pub(super) fn upcall(id: *mut bindings::iw_cm_id, kind: u32, status: i32) -> i32 {
    upcall_ev(id, wire_event(kind, status))
}

/// The provider drops the reference it took in connect/accept.
pub(super) fn provider_release(id: *mut bindings::iw_cm_id) {
    // SAFETY: the fake provider took one reference in connect/accept.
    unsafe { ((*id).rem_ref.unwrap())(id) };
}

pub(super) type SockAddr = bindings::__kernel_sockaddr_storage;

/// The listener's (and active side's) address, as rdma_cm sets it
/// before iw_cm_listen / iw_cm_connect (TEST-NET-1, RFC 5737).
pub(super) const ULP_LOCAL: ([u8; 4], u16) = ([192, 0, 2, 1], 4420);
/// The peer's address, as rdma_cm sets it before iw_cm_connect.
pub(super) const ULP_REMOTE: ([u8; 4], u16) = ([192, 0, 2, 2], 4420);
/// The addresses of the provider's events (its TCP connection's ends),
/// as siw_cm.c and cxgb4 cm.c fill them in.
pub(super) const WIRE_LOCAL: ([u8; 4], u16) = ([192, 0, 2, 1], 4420);
pub(super) const WIRE_REMOTE: ([u8; 4], u16) = ([192, 0, 2, 2], 50000);

/// An AF_INET `sockaddr_storage`; the port in host order.
pub(super) fn ipv4((ip, port): ([u8; 4], u16)) -> SockAddr {
    let mut s = SockAddr::default();
    let sin = bindings::sockaddr_in {
        sin_family: bindings::AF_INET as u16,
        sin_port: port.to_be(),
        sin_addr: bindings::in_addr {
            s_addr: u32::from_ne_bytes(ip),
        },
        __pad: [0; 8],
    };
    // SAFETY: `sockaddr_storage` is larger than and at least as aligned
    // as `sockaddr_in` (include/linux/socket.h); `s` is exclusively ours.
    unsafe {
        ptr::from_mut(&mut s)
            .cast::<bindings::sockaddr_in>()
            .write(sin)
    };
    s
}

/// The first bytes of an address that matter for AF_INET comparisons
/// (family, port, IPv4 address).
pub(super) fn ipv4_of(s: &SockAddr) -> (u16, [u8; 4], u16) {
    // SAFETY: as in `ipv4`; any bit pattern is a valid `sockaddr_in`.
    let sin = unsafe { &*ptr::from_ref(s).cast::<bindings::sockaddr_in>() };
    (
        sin.sin_family,
        sin.sin_addr.s_addr.to_ne_bytes(),
        u16::from_be(sin.sin_port),
    )
}

pub(super) fn inet((ip, port): ([u8; 4], u16)) -> (u16, [u8; 4], u16) {
    (bindings::AF_INET as u16, ip, port)
}

/// `ipv4_of` packed into a u64, for the atomics the ULP handler fills.
pub(super) fn addr_key((family, ip, port): (u16, [u8; 4], u16)) -> u64 {
    u64::from(family) << 48 | u64::from(u32::from_be_bytes(ip)) << 16 | u64::from(port)
}
