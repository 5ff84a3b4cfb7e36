// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Cases of a provider that misbehaves.
//!
//! Every event type in every state (`bad_provider_input_matrix`), every
//! field of an event malformed (`malformed_event_contents`), an unbalanced
//! `rem_ref` and a CONNECT_REQUEST on a cm_id that does not listen: iw_cm
//! counts a fault, never oopses, and the ULP hears only legal sequences.

use super::{fake_provider::*, fake_ulp::*};
use crate::bindings;
use crate::iface;
use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::Ordering::SeqCst;
use kernel::prelude::*;

// ---- bad provider input: every event type in every state -------------

/// Where the cm_id is when the provider's event arrives.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum At {
    Idle,
    ConnSent,
    Established,
    Closing,
    Closed,
    Listen,
    ConnRecv,
    Accepting,
    PassiveEstablished,
    Destroyed,
}

pub(super) const ALL_AT: [At; 10] = [
    At::Idle,
    At::ConnSent,
    At::Established,
    At::Closing,
    At::Closed,
    At::Listen,
    At::ConnRecv,
    At::Accepting,
    At::PassiveEstablished,
    At::Destroyed,
];

/// A provider event: type and status; 99 is no event type at all.
pub(super) const INPUTS: [(u32, i32); 7] = [
    (EV_REQ, 0),
    (EV_REPLY, 0),
    (EV_REPLY, -(kernel::bindings::ECONNREFUSED as i32)),
    (EV_EST, 0),
    (EV_DISC, 0),
    (EV_CLOSE, 0),
    (99, 0),
];

/// Events a correct provider may send in `at` (siw_cm.c, cxgb4 cm.c):
/// these must never count as provider faults.  Events after destroy are
/// dropped silently (iwcm.c's IWCM_F_DROP_EVENTS).
pub(super) fn legal(at: At, ev: u32, status: i32) -> bool {
    match at {
        At::ConnSent => ev == EV_REPLY,
        At::Established | At::Closing | At::PassiveEstablished => ev == EV_DISC || ev == EV_CLOSE,
        At::Listen => ev == EV_REQ && status == 0,
        // CLOSE too: siw's peer close before an RTR frame.
        At::Accepting => ev == EV_EST || ev == EV_CLOSE,
        // Any event type after destroy, but never an unknown one.
        At::Destroyed => ev != 99,
        At::Idle | At::Closed | At::ConnRecv => false,
    }
}

/// Illegal events that iwcm.c ignores without complaint, and so do we
/// (state.rs): a DISCONNECT racing a connect/accept or after CLOSE.
pub(super) fn tolerated(at: At, ev: u32) -> bool {
    ev == EV_DISC && matches!(at, At::ConnSent | At::Accepting | At::Closed)
}

/// The order in which the ULP may hear events on the fed cm_id after
/// `at` was reached; each at most once.  A listener hears only
/// CONNECT_REQUESTs (on new children), any number.
pub(super) fn may_follow(at: At) -> &'static [u32] {
    match at {
        At::ConnSent => &[EV_REPLY, EV_DISC, EV_CLOSE],
        At::Established | At::Closing | At::PassiveEstablished => &[EV_DISC, EV_CLOSE],
        At::Accepting => &[EV_EST, EV_DISC, EV_CLOSE],
        At::Idle | At::Closed | At::ConnRecv | At::Destroyed | At::Listen => &[],
    }
}

/// ULP-owned cm_ids, the provider's references, and the cm_id to feed.
pub(super) struct Scene {
    feed: *mut bindings::iw_cm_id,
    own: KVec<*mut bindings::iw_cm_id>,
    prov: KVec<*mut bindings::iw_cm_id>,
}

pub(super) fn accept(child: *mut bindings::iw_cm_id) -> i32 {
    let mut p = bindings::iw_cm_conn_param {
        qpn: FAKE_QPN,
        ..Default::default()
    };
    // SAFETY: the child is the test's since its CONNECT_REQUEST.
    unsafe { bindings::iw_cm_accept(child, &mut p) }
}

/// Brings a fresh cm_id to `at` with legal input only.
pub(super) fn reach(dev: &mut FakeDev, at: At) -> Result<Scene> {
    let mut sc = Scene {
        feed: ptr::null_mut(),
        own: KVec::new(),
        prov: KVec::new(),
    };
    let passive = matches!(
        at,
        At::Listen | At::ConnRecv | At::Accepting | At::PassiveEstablished
    );
    let id = create(dev, 20)?;
    sc.own.push(id, GFP_KERNEL)?;
    sc.feed = id;
    if passive {
        // SAFETY: `id` is live and owned by the test.
        ensure!(unsafe { bindings::iw_cm_listen(id, 4) } == 0);
        if at == At::Listen {
            return Ok(sc);
        }
        ensure!(upcall(id, EV_REQ, 0) == 0);
        ensure!(wait_until(|| NEVENTS.load(SeqCst) == 1));
        let child = CHILD.load(SeqCst);
        ensure!(!child.is_null());
        sc.feed = child;
        if at == At::ConnRecv {
            return Ok(sc);
        }
        ensure!(accept(child) == 0);
        sc.prov.push(child, GFP_KERNEL)?;
        if at == At::PassiveEstablished {
            ensure!(upcall(child, EV_EST, 0) == 0);
            ensure!(wait_until(|| NEVENTS.load(SeqCst) == 2));
        }
        return Ok(sc);
    }
    if at == At::Idle {
        return Ok(sc);
    }
    ensure!(connect(id) == 0);
    sc.prov.push(id, GFP_KERNEL)?;
    match at {
        At::Destroyed => {
            // SAFETY: the test owns `id`; the provider keeps its ref.
            unsafe { bindings::iw_destroy_cm_id(id) };
            sc.own.clear();
        }
        At::Established | At::Closing | At::Closed => {
            ensure!(upcall(id, EV_REPLY, 0) == 0);
            ensure!(wait_until(|| NEVENTS.load(SeqCst) == 1));
            if at == At::Closing {
                // SAFETY: `id` is live and owned by the test.
                ensure!(unsafe { bindings::iw_cm_disconnect(id, 0) } == 0);
            }
            if at == At::Closed {
                ensure!(upcall(id, EV_CLOSE, 0) == 0);
                ensure!(wait_until(|| NEVENTS.load(SeqCst) == 2));
            }
        }
        _ => {}
    }
    Ok(sc)
}

/// Destroys every cm_id of the scene (listeners before the children
/// they delivered), then drops the provider's references.  After
/// iw_destroy_cm_id returns no callback runs for that id, so the event
/// log is final afterwards.
pub(super) fn teardown(sc: Scene) {
    for &id in sc.own.iter() {
        // SAFETY: the test owns these ids.
        unsafe { bindings::iw_destroy_cm_id(id) };
    }
    let n = NCHILDREN.load(SeqCst).min(CHILDREN.len());
    for c in CHILDREN.iter().take(n) {
        let child = c.load(SeqCst);
        if !child.is_null() {
            // SAFETY: delivered children are the test's.
            unsafe { bindings::iw_destroy_cm_id(child) };
        }
    }
    for &id in sc.prov.iter() {
        provider_release(id);
    }
}

pub(super) fn bad_provider_input_matrix() -> Result {
    expect_faults(false);
    let r = bad_provider_matrix();
    expect_no_faults();
    assert_eq!(r, Ok(0));
    Ok(())
}

/// Runs the matrix; the number of failing scenarios.
pub(super) fn bad_provider_matrix() -> Result<usize> {
    let base = iface::live();
    let faults_before = iface::provider_faults();
    let mut bad = 0;
    let mut scenarios = 0;
    let mut illegal_fed = 0;
    for at in ALL_AT {
        for (ev, status) in INPUTS {
            for dup in [false, true] {
                reset();
                let mut dev = FakeDev::new()?;
                let sc = reach(&mut dev, at)?;
                let first = NEVENTS.load(SeqCst);
                let faults = iface::provider_faults();
                let feed = sc.feed;
                let times = if dup { 2 } else { 1 };
                for _ in 0..times {
                    // Any return is fine (-ENOMEM when the event slots
                    // are full); what matters is what happens next.
                    let _ = upcall(feed, ev, status);
                }
                // Let the work item handle what was queued before the
                // teardown (destroy drops pending events).
                // SAFETY: `feed` is live: the test or the provider
                // holds it until `teardown`.
                let settled = wait_until(|| unsafe { iface::settled(feed) });
                teardown(sc);
                let faulted = iface::provider_faults() - faults;
                scenarios += 1;
                if !legal(at, ev, status) {
                    illegal_fed += 1;
                }
                let mut ok = settled && wait_live(base);
                ok &= QP_REFS.load(SeqCst) == 0;
                // A legal event, once, is never a provider fault; an
                // illegal one always is (unless iwcm.c tolerates it).
                if legal(at, ev, status) {
                    ok &= dup || faulted == 0;
                } else if !tolerated(at, ev) {
                    ok &= faulted >= 1;
                }
                // What the ULP heard after `at` was reached.
                let order = may_follow(at);
                let mut pos = 0;
                for i in first..NEVENTS.load(SeqCst).min(EVENTS.len()) {
                    let (_, kind, _) = event(i);
                    if at == At::Listen && kind == EV_REQ {
                        continue;
                    }
                    match order[pos..].iter().position(|&k| k == kind) {
                        Some(p) => pos += p + 1,
                        None => ok = false,
                    }
                }
                if !ok {
                    bad += 1;
                    pr_err!(
                        "bad provider input: {:?} + event {} status {} x{}: live {} (base {}), qp refs {}, faults {}, {} event(s) to the ULP\n",
                        at,
                        ev,
                        status,
                        times,
                        iface::live(),
                        base,
                        QP_REFS.load(SeqCst),
                        faulted,
                        NEVENTS.load(SeqCst) - first
                    );
                }
            }
        }
    }
    let faults = iface::provider_faults() - faults_before;
    pr_info!(
        "bad provider input: {} scenarios ({} with an illegal event), {} provider faults counted, {} bad\n",
        scenarios,
        illegal_fed,
        faults,
        bad
    );
    Ok(bad)
}

// ---- bad provider input: the contents of an event --------------------

/// Private data the tests hand in (bytes 1, 2, 3, ...).
pub(super) static PDATA: [u8; 40] = {
    let mut a = [0u8; 40];
    let mut i = 0;
    while i < 40 {
        a[i] = i as u8 + 1;
        i += 1;
    }
    a
};

/// The sum of the first `n` bytes of `PDATA`.
pub(super) const fn pdata_sum(n: u32) -> u32 {
    n * (n + 1) / 2
}

/// A non-canonical x86_64 address: never mapped, and a pointer no
/// provider could hand out (copy_from_kernel_nofault refuses it).
pub(super) const UNREADABLE: usize = 0xdead_0000_0000_0000;

/// What the ULP must hear after one malformed event.
pub(super) struct Want {
    /// The upcall's return.
    ret: i32,
    /// Whether the ULP hears the event (on the cm_id or, for a
    /// CONNECT_REQUEST, on a new child).
    delivered: bool,
    status: i32,
    pdata_len: u32,
    pdata_sum: u32,
    ird: u32,
    /// Whether it is a provider fault.
    fault: bool,
}

pub(super) const fn heard(status: i32, pdata_len: u32, ird: u32, fault: bool) -> Want {
    Want {
        ret: 0,
        delivered: true,
        status,
        pdata_len,
        pdata_sum: pdata_sum(pdata_len),
        ird,
        fault,
    }
}

pub(super) const REFUSED: Want = Want {
    ret: -(kernel::bindings::EINVAL as i32),
    delivered: false,
    status: 0,
    pdata_len: 0,
    pdata_sum: 0,
    ird: 0,
    fault: true,
};

pub(super) fn errno(e: u32) -> i32 {
    -(e as i32)
}

/// One case: reach `at`, feed `ev`, compare with `want`.
pub(super) fn content_case(
    name: &str,
    at: At,
    ev: bindings::iw_cm_event,
    want: Want,
) -> Result<bool> {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let sc = reach(&mut dev, at)?;
    let first = NEVENTS.load(SeqCst);
    let faults = iface::provider_faults();
    let feed = sc.feed;
    let ret = upcall_ev(feed, ev);
    // SAFETY: `feed` is live: the test or the provider holds it.
    let settled = wait_until(|| unsafe { iface::settled(feed) });
    let heard_n = NEVENTS.load(SeqCst) - first;
    let faulted = iface::provider_faults() - faults;
    let got = (
        LAST_STATUS.load(SeqCst),
        LAST_PDATA_LEN.load(SeqCst),
        LAST_PDATA_SUM.load(SeqCst),
        LAST_IRD.load(SeqCst),
    );
    let rejects = REJECTS.load(SeqCst);
    teardown(sc);
    let wanted = (want.status, want.pdata_len, want.pdata_sum, want.ird);
    let mut ok = settled && ret == want.ret && wait_live(base);
    ok &= QP_REFS.load(SeqCst) == 0;
    ok &= (faulted > 0) == want.fault;
    ok &= (heard_n == 1) == want.delivered && heard_n <= 1;
    if want.delivered {
        ok &= got == wanted;
    } else if at == At::Listen {
        // A refused request stays the provider's: never rejected.
        ok &= rejects == 0;
    }
    if !ok {
        pr_err!(
            "event contents: {}: ret {} (want {}), heard {}, status/len/sum/ird {:?} (want {:?}), faults {}, live {} (base {}), qp refs {}\n",
            name,
            ret,
            want.ret,
            heard_n,
            got,
            wanted,
            faulted,
            iface::live(),
            base,
            QP_REFS.load(SeqCst)
        );
    }
    Ok(ok)
}

/// Sets the address family of `s`.
pub(super) fn set_family(s: &mut SockAddr, family: u16) {
    // `ss_family` is the first member of every variant of the
    // `sockaddr_storage` union (a plain write, no unsafe needed).
    s.__bindgen_anon_1.__bindgen_anon_1.ss_family = family;
}

/// `wire_event` with private data at `addr`, `len` bytes.
pub(super) fn with_pdata(kind: u32, status: i32, addr: usize, len: u8) -> bindings::iw_cm_event {
    let mut ev = wire_event(kind, status);
    ev.private_data = addr as *mut c_void;
    ev.private_data_len = len;
    ev
}

/// Every field of a provider event is untrusted: private data pointer
/// and length per event type and status, impossible statuses, wrong
/// address families, ird/ord beyond the device, a request without its
/// provider object, an unknown type.  The first case is the malformed
/// MPA reply siw passes on (`NULL + 4`, the bogus length minus 4),
/// which oopsed iwcm.c and the previous version of this module.
pub(super) fn malformed_event_contents() -> Result {
    expect_faults(false);
    let r = malformed_event_contents_cases();
    expect_no_faults();
    assert_eq!(r, Ok(0));
    Ok(())
}

pub(super) fn malformed_event_contents_cases() -> Result<usize> {
    use kernel::bindings::{ECONNREFUSED, ECONNRESET, EINVAL, EPROTO};
    let pd = PDATA.as_ptr() as usize;
    let mut bad = 0;
    let mut n = 0;
    let mut case = |name: &str, at: At, ev: bindings::iw_cm_event, want: Want| -> Result {
        n += 1;
        if !content_case(name, at, ev, want)? {
            bad += 1;
        }
        Ok(())
    };
    // CONNECT_REPLY.
    case(
        "siw's malformed MPA reply: -EINVAL, NULL+4, length 0x54",
        At::ConnSent,
        with_pdata(EV_REPLY, errno(EINVAL), 4, 0x54),
        heard(errno(EINVAL), 0, 0, false),
    )?;
    case(
        "accepted reply, private data at NULL+4",
        At::ConnSent,
        with_pdata(EV_REPLY, 0, 4, 10),
        heard(0, 0, 0, true),
    )?;
    case(
        "accepted reply, unreadable private data pointer",
        At::ConnSent,
        with_pdata(EV_REPLY, 0, UNREADABLE, 8),
        heard(0, 0, 0, true),
    )?;
    case(
        "accepted reply with 40 bytes of private data",
        At::ConnSent,
        with_pdata(EV_REPLY, 0, pd, 40),
        heard(0, 40, 0, false),
    )?;
    case(
        "peer reject with private data, siw (-ECONNRESET)",
        At::ConnSent,
        with_pdata(EV_REPLY, errno(ECONNRESET), pd, 20),
        heard(errno(ECONNRESET), 20, 0, false),
    )?;
    case(
        "peer reject with private data, iw_cxgb4 (-ECONNREFUSED)",
        At::ConnSent,
        with_pdata(EV_REPLY, errno(ECONNREFUSED), pd, 20),
        heard(errno(ECONNREFUSED), 20, 0, false),
    )?;
    case(
        "protocol error with private data: dropped",
        At::ConnSent,
        with_pdata(EV_REPLY, errno(EPROTO), pd, 20),
        heard(errno(EPROTO), 0, 0, false),
    )?;
    case(
        "positive status",
        At::ConnSent,
        wire_event(EV_REPLY, 5),
        heard(errno(EPROTO), 0, 0, true),
    )?;
    case(
        "status below -MAX_ERRNO",
        At::ConnSent,
        wire_event(EV_REPLY, -5000),
        heard(errno(EPROTO), 0, 0, true),
    )?;
    let mut ev = wire_event(EV_REPLY, 0);
    set_family(&mut ev.local_addr, 0);
    case(
        "accepted reply with an AF_UNSPEC local address",
        At::ConnSent,
        ev,
        heard(0, 0, 0, true),
    )?;
    let mut ev = wire_event(EV_REPLY, 0);
    set_family(&mut ev.local_addr, 0);
    set_family(&mut ev.remote_addr, 0);
    case(
        "accepted reply without addresses (qedr): the cm_id's own, no fault",
        At::ConnSent,
        ev,
        heard(0, 0, 0, false),
    )?;
    let mut ev = wire_event(EV_REPLY, 0);
    ev.ird = 255;
    ev.ord = 200;
    case(
        "accepted reply, ird/ord beyond the device (the peer's, siw and qedr): clamped, no fault",
        At::ConnSent,
        ev,
        heard(0, 0, FAKE_MAX_RD_ATOM, false),
    )?;
    let mut ev = wire_event(EV_REPLY, 0);
    ev.ird = FAKE_MAX_RD_ATOM as u8;
    case(
        "accepted reply, ird at the device's limit",
        At::ConnSent,
        ev,
        heard(0, 0, FAKE_MAX_RD_ATOM, false),
    )?;
    case(
        "unknown event type",
        At::ConnSent,
        wire_event(42, 0),
        REFUSED,
    )?;
    // CONNECT_REQUEST.
    case(
        "request, private data at NULL+4",
        At::Listen,
        with_pdata(EV_REQ, 0, 4, 8),
        REFUSED,
    )?;
    case(
        "request, unreadable private data pointer",
        At::Listen,
        with_pdata(EV_REQ, 0, UNREADABLE, 8),
        REFUSED,
    )?;
    let mut ev = wire_event(EV_REQ, 0);
    ev.provider_data = ptr::null_mut();
    case("request without provider_data", At::Listen, ev, REFUSED)?;
    let mut ev = wire_event(EV_REQ, 0);
    set_family(&mut ev.local_addr, bindings::AF_INET6 as u16);
    case(
        "request with mixed address families",
        At::Listen,
        ev,
        REFUSED,
    )?;
    let mut ev = wire_event(EV_REQ, 0);
    set_family(&mut ev.remote_addr, 1);
    set_family(&mut ev.local_addr, 1);
    case("request with AF_UNIX addresses", At::Listen, ev, REFUSED)?;
    case(
        "request with a status",
        At::Listen,
        wire_event(EV_REQ, errno(ECONNRESET)),
        REFUSED,
    )?;
    let mut ev = wire_event(EV_REQ, 0);
    ev.ird = 200;
    case(
        "request, ird beyond the device: clamped, no fault",
        At::Listen,
        ev,
        heard(0, 0, FAKE_MAX_RD_ATOM, false),
    )?;
    case(
        "well-formed request with 40 bytes of private data",
        At::Listen,
        with_pdata(EV_REQ, 0, pd, 40),
        heard(0, 40, 0, false),
    )?;
    // ESTABLISHED, DISCONNECT, CLOSE.
    case(
        "ESTABLISHED with private data",
        At::Accepting,
        with_pdata(EV_EST, 0, pd, 5),
        heard(0, 0, 0, true),
    )?;
    case(
        "ESTABLISHED with a negative errno (qedr's failed passive connection): passed on as iwcm.c does",
        At::Accepting,
        wire_event(EV_EST, errno(ECONNRESET)),
        heard(errno(ECONNRESET), 0, 0, false),
    )?;
    case(
        "ESTABLISHED with a status that is no errno",
        At::Accepting,
        wire_event(EV_EST, 7),
        heard(0, 0, 0, true),
    )?;
    case(
        "CLOSE with a status below -MAX_ERRNO",
        At::Established,
        wire_event(EV_CLOSE, -5000),
        heard(0, 0, 0, true),
    )?;
    let mut ev = wire_event(EV_CLOSE, 0);
    ev.ird = 3;
    case(
        "CLOSE with an ird (qedr fills it on every event): cleared, no fault",
        At::Established,
        ev,
        heard(0, 0, 0, false),
    )?;
    case(
        "CLOSE with private data at NULL+4",
        At::Established,
        with_pdata(EV_CLOSE, 0, 4, 9),
        heard(0, 0, 0, true),
    )?;
    case(
        "CLOSE -ECONNRESET (iw_cxgb4's abort)",
        At::Established,
        wire_event(EV_CLOSE, errno(ECONNRESET)),
        heard(errno(ECONNRESET), 0, 0, false),
    )?;
    pr_info!("event contents: {} cases, {} bad\n", n, bad);
    Ok(bad)
}

/// A `rem_ref` without a matching `add_ref` (a provider's refcount bug)
/// is a fault and is ignored: the cm_id stays alive for its ULP.
pub(super) fn unbalanced_rem_ref_is_ignored() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let id = create(&mut dev, 30)?;
    let faults = iface::provider_faults();
    expect_faults(false);
    provider_release(id);
    expect_no_faults();
    assert_eq!(iface::provider_faults() - faults, 1);
    assert_eq!(iface::live(), base + 1);
    // The id still works: connect, the provider's add_ref/rem_ref.
    assert_eq!(connect(id), 0);
    provider_release(id);
    // SAFETY: the test owns `id`.
    unsafe { bindings::iw_destroy_cm_id(id) };
    assert!(wait_live(base));
    assert_eq!(QP_REFS.load(SeqCst), 0);
    Ok(())
}

/// A CONNECT_REQUEST on a cm_id that does not listen is a provider
/// fault, and its provider object still goes back with iw_reject.
pub(super) fn connect_request_on_a_non_listener_is_rejected_back() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let id = create(&mut dev, 32)?;
    assert_eq!(connect(id), 0);
    let faults = iface::provider_faults();
    expect_faults(false);
    assert_eq!(upcall(id, EV_REQ, 0), 0);
    // SAFETY: `id` is live: the test and the provider hold it.
    let settled = wait_until(|| unsafe { iface::settled(id) });
    expect_no_faults();
    assert!(settled);
    assert!(iface::provider_faults() > faults);
    assert_eq!(REJECTS.load(SeqCst), 1);
    assert_eq!(REJECTED_TOKENS.load(SeqCst), REQ_TOKEN);
    assert_eq!(NEVENTS.load(SeqCst), 0);
    provider_release(id);
    // SAFETY: the test owns `id`.
    unsafe { bindings::iw_destroy_cm_id(id) };
    assert!(wait_live(base));
    assert_eq!(QP_REFS.load(SeqCst), 0);
    Ok(())
}
