// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The suite's fake ULP.
//!
//! Its `cm_handler` ([`ulp_handler`]) records every delivered event with
//! the number of iw_cm QP references held at that moment and acts as the
//! running case's `MODE` says (a cm_id of the concurrency stress goes to
//! `stress_event` instead); the ULP's own calls (create, connect) and the
//! waits on what iw_cm.ko reports.

use super::{fake_provider::*, stress_ulp::*};
use crate::bindings;
use crate::iface;
use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst,
};
use kernel::prelude::*;
use kernel::time::{delay::fsleep, Delta};

// ---- fake ULP state -----------------------------------------------------
/// Delivered events: tag << 32 | event << 16 | (QP refs at delivery + 1).
pub(super) static EVENTS: [AtomicU64; 32] = [const { AtomicU64::new(0) }; 32];
pub(super) static NEVENTS: AtomicUsize = AtomicUsize::new(0);
/// Last child cm_id delivered with a CONNECT_REQUEST.
pub(super) static CHILD: AtomicPtr<bindings::iw_cm_id> = AtomicPtr::new(ptr::null_mut());
/// Every child cm_id delivered with a CONNECT_REQUEST since `reset`.
pub(super) static CHILDREN: [AtomicPtr<bindings::iw_cm_id>; 4] =
    [const { AtomicPtr::new(ptr::null_mut()) }; 4];
pub(super) static NCHILDREN: AtomicUsize = AtomicUsize::new(0);
/// ULP behaviour switches.
pub(super) static MODE: AtomicU32 = AtomicU32::new(0);
pub(super) const MODE_DESTROY_CHILD_IN_REQ: u32 = 1;
pub(super) const MODE_FAIL_REQ: u32 = 2;
pub(super) const MODE_BLOCK_TAG1_CLOSE: u32 = 3;
pub(super) const MODE_DESTROY_SELF_ON_CLOSE: u32 = 4;
pub(super) const MODE_FAIL_CLOSE: u32 = 5;
pub(super) const MODE_DESTROY_LISTENER_IN_REQ: u32 = 6;
/// As MODE_DESTROY_LISTENER_IN_REQ, with the destroy's first fault
/// point armed to fail (`fail_nth`): handing requests back must not
/// allocate.
pub(super) const MODE_DESTROY_LISTENER_IN_REQ_NO_MEM: u32 = 7;
/// The first CONNECT_REQUEST's handler waits for RELEASE (BLOCKED
/// meanwhile), so that later requests stay queued on the listener.
pub(super) const MODE_BLOCK_FIRST_REQ: u32 = 8;
/// The ESTABLISHED handler of tag 1's cm_ids waits for RELEASE (BLOCKED
/// meanwhile), as a ULP's handler waits for a mutex its QP teardown holds.
pub(super) const MODE_BLOCK_TAG1_EST: u32 = 9;
/// `current->fail_nth` left after that destroy (1: nothing allocated
/// through a fault point).
pub(super) static FAIL_NTH_LEFT: AtomicU32 = AtomicU32::new(0);
/// Addresses of the last delivered CONNECT_REPLY (see `addr_key`).
pub(super) static REPLY_LOCAL: AtomicU64 = AtomicU64::new(0);
pub(super) static REPLY_REMOTE: AtomicU64 = AtomicU64::new(0);
pub(super) static BLOCKED: AtomicBool = AtomicBool::new(false);
pub(super) static RELEASE: AtomicBool = AtomicBool::new(false);
/// The last delivered event's status, private data length, sum of its
/// private data bytes, ird and ord.
pub(super) static LAST_STATUS: AtomicI32 = AtomicI32::new(0);
pub(super) static LAST_PDATA_LEN: AtomicU32 = AtomicU32::new(0);
pub(super) static LAST_PDATA_SUM: AtomicU32 = AtomicU32::new(0);
pub(super) static LAST_IRD: AtomicU32 = AtomicU32::new(0);
pub(super) static LAST_ORD: AtomicU32 = AtomicU32::new(0);
/// Sum of the `provider_data` tokens the fake provider's reject got.
pub(super) static REJECTED_TOKENS: AtomicUsize = AtomicUsize::new(0);
/// The listener the MODE_DESTROY_LISTENER_IN_REQ handler destroys.
pub(super) static LISTENER: AtomicPtr<bindings::iw_cm_id> = AtomicPtr::new(ptr::null_mut());
/// The provider object of the fake provider's connection requests.
pub(super) const REQ_TOKEN: usize = 0x1000;
/// IRD/ORD limit of the fake device (`attrs.max_qp_rd_atom`).
pub(super) const FAKE_MAX_RD_ATOM: u32 = 16;

pub(super) fn reset() {
    for a in [
        &QP_TO_ERR, &QP_TO_SQD, &CONNECTS, &ACCEPTS, &REJECTS, &LISTENS, &UNLISTENS,
    ] {
        a.store(0, SeqCst);
    }
    QP_REFS.store(0, SeqCst);
    LISTEN_BACKLOG.store(0, SeqCst);
    NEVENTS.store(0, SeqCst);
    MODE.store(0, SeqCst);
    BLOCKED.store(false, SeqCst);
    RELEASE.store(false, SeqCst);
    CHILD.store(ptr::null_mut(), SeqCst);
    for c in &CHILDREN {
        c.store(ptr::null_mut(), SeqCst);
    }
    NCHILDREN.store(0, SeqCst);
    REPLY_LOCAL.store(0, SeqCst);
    REPLY_REMOTE.store(0, SeqCst);
    LAST_STATUS.store(0, SeqCst);
    for a in [&LAST_PDATA_LEN, &LAST_PDATA_SUM, &LAST_IRD, &LAST_ORD] {
        a.store(0, SeqCst);
    }
    REJECTED_TOKENS.store(0, SeqCst);
    LISTENER.store(ptr::null_mut(), SeqCst);
    FAIL_NTH_LEFT.store(0, SeqCst);
}

pub(super) fn tag_of(id: *mut bindings::iw_cm_id) -> u64 {
    // SAFETY: iw_cm delivers live cm_ids; `context` is our tag.
    unsafe { (*id).context as u64 }
}

/// Contexts below this are tags of the single-threaded cases (the first
/// page: no kernel object lives there); the concurrency stress gives
/// each cm_id a pointer to its `Ctx`.
pub(super) const TAG_LIMIT: usize = 4096;

/// A handler that blocks: BLOCKED while it waits for RELEASE (at most
/// 5 s).
fn block_until_release() {
    BLOCKED.store(true, SeqCst);
    let mut ms = 0;
    while !RELEASE.load(SeqCst) && ms < 5000 {
        fsleep(Delta::from_millis(5));
        ms += 5;
    }
    BLOCKED.store(false, SeqCst);
}

/// The fake ULP's `cm_handler`: records the event in the global log
/// under the cm_id's tag (its context), or, for a cm_id of the
/// concurrency stress, on its own `Ctx` (`stress_event`).
///
/// # Safety
///
/// Called by iw_cm (or the test) with live pointers, as the C op it fakes.
pub(super) unsafe extern "C" fn ulp_handler(
    id: *mut bindings::iw_cm_id,
    ev: *mut bindings::iw_cm_event,
) -> i32 {
    // SAFETY: iw_cm passes a live cm_id; `context` is the ULP's.
    if unsafe { (*id).context } as usize >= TAG_LIMIT {
        // SAFETY: a context that is not a tag is a stress `Ctx`.
        return unsafe { stress_event(id, ev) };
    }
    // SAFETY: iw_cm passes a valid event.
    let kind = unsafe { (*ev).event };
    let tag = tag_of(id);
    let refs = (QP_REFS.load(SeqCst) + 1) as u64;
    // The child before the event count: a test that saw the count go up
    // reads CHILD at once (a handler preempted between the two left it
    // null, and the test accepted a null cm_id).
    let child_no = (kind == EV_REQ).then(|| {
        CHILD.store(id, SeqCst);
        let c = NCHILDREN.fetch_add(1, SeqCst);
        if c < CHILDREN.len() {
            CHILDREN[c].store(id, SeqCst);
        }
        c
    });
    let n = NEVENTS.load(SeqCst);
    if n < EVENTS.len() {
        EVENTS[n].store(tag << 32 | u64::from(kind) << 16 | refs, SeqCst);
        NEVENTS.store(n + 1, SeqCst);
    }
    {
        // SAFETY: iw_cm passes a valid event; its private data pointer
        // is null or valid for `private_data_len` bytes (iw_cm's copy).
        let e = unsafe { &*ev };
        LAST_STATUS.store(e.status, SeqCst);
        LAST_PDATA_LEN.store(e.private_data_len.into(), SeqCst);
        let mut sum = 0u32;
        if !e.private_data.is_null() {
            // SAFETY: as above.
            let b = unsafe {
                core::slice::from_raw_parts(e.private_data.cast::<u8>(), e.private_data_len.into())
            };
            sum = b.iter().map(|&x| u32::from(x)).sum();
        } else if e.private_data_len != 0 {
            sum = u32::MAX;
        }
        LAST_PDATA_SUM.store(sum, SeqCst);
        LAST_IRD.store(e.ird.into(), SeqCst);
        LAST_ORD.store(e.ord.into(), SeqCst);
    }
    if kind == EV_REPLY {
        // SAFETY: as above; the addresses are plain data.
        let (l, r) = unsafe { (&(*ev).local_addr, &(*ev).remote_addr) };
        REPLY_LOCAL.store(addr_key(ipv4_of(l)), SeqCst);
        REPLY_REMOTE.store(addr_key(ipv4_of(r)), SeqCst);
    }
    let mode = MODE.load(SeqCst);
    if let Some(c) = child_no {
        if mode == MODE_DESTROY_CHILD_IN_REQ {
            // SAFETY: the child is ours (delivered with the request).
            unsafe { bindings::iw_destroy_cm_id(id) };
            return 0;
        }
        if mode == MODE_FAIL_REQ {
            return -1;
        }
        if mode == MODE_BLOCK_FIRST_REQ && c == 0 {
            block_until_release();
        }
        let no_mem = mode == MODE_DESTROY_LISTENER_IN_REQ_NO_MEM;
        if (mode == MODE_DESTROY_LISTENER_IN_REQ || no_mem) && c == 0 {
            // Wait until the test queued more requests behind this
            // one, then destroy the listener from its own delivery.
            let mut ms = 0;
            while !RELEASE.load(SeqCst) && ms < 5000 {
                fsleep(Delta::from_millis(5));
                ms += 5;
            }
            if no_mem {
                set_fail_nth(1);
            }
            // SAFETY: the test handed its listener over to us.
            unsafe { bindings::iw_destroy_cm_id(LISTENER.load(SeqCst)) };
            if no_mem {
                FAIL_NTH_LEFT.store(fail_nth(), SeqCst);
                set_fail_nth(0);
            }
        }
    }
    if kind == EV_EST && mode == MODE_BLOCK_TAG1_EST && tag == 1 {
        block_until_release();
    }
    if kind == EV_CLOSE {
        if mode == MODE_BLOCK_TAG1_CLOSE && tag == 1 {
            block_until_release();
        }
        if mode == MODE_DESTROY_SELF_ON_CLOSE {
            // SAFETY: the ULP owns this cm_id; destroying it from its own
            // handler must not deadlock.
            unsafe { bindings::iw_destroy_cm_id(id) };
        }
        if mode == MODE_FAIL_CLOSE {
            return -1;
        }
    }
    0
}

pub(super) fn wait_until(f: impl Fn() -> bool) -> bool {
    for _ in 0..400 {
        if f() {
            return true;
        }
        fsleep(Delta::from_millis(5));
    }
    f()
}

pub(super) fn event(i: usize) -> (u64, u32, i32) {
    let v = EVENTS[i].load(SeqCst);
    (
        v >> 32,
        ((v >> 16) & 0xffff) as u32,
        (v & 0xffff) as i32 - 1,
    )
}

pub(super) fn create(dev: &mut FakeDev, tag: usize) -> Result<*mut bindings::iw_cm_id> {
    create_on(dev.raw(), tag)
}

/// `create` on the device of a `FakeDev` shared by several threads;
/// `tag` is the fake ULP's context (see `ulp_handler`).
pub(super) fn create_on(
    dev: *mut bindings::ib_device,
    tag: usize,
) -> Result<*mut bindings::iw_cm_id> {
    // SAFETY: the fake device outlives the cm_id (destroyed in-test).
    let id = unsafe { bindings::iw_create_cm_id(dev, Some(ulp_handler), tag as *mut c_void) };
    // Not NULL and not an ERR_PTR.
    ensure!(!id.is_null() && (id as usize) < usize::MAX - 4095);
    // SAFETY: `id` is live, new and owned by the test: the addresses are
    // the ULP's to set before listen/connect (as cma.c does).
    unsafe {
        (*id).local_addr = ipv4(ULP_LOCAL);
        (*id).remote_addr = ipv4(ULP_REMOTE);
    }
    Ok(id)
}

pub(super) fn connect(id: *mut bindings::iw_cm_id) -> i32 {
    let mut p = bindings::iw_cm_conn_param {
        qpn: FAKE_QPN,
        ..Default::default()
    };
    // SAFETY: `id` is live; `p` is valid.
    unsafe { bindings::iw_cm_connect(id, &mut p) }
}

pub(super) fn wait_live(n: usize) -> bool {
    wait_until(|| iface::live() == n)
}
