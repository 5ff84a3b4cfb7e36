// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The concurrency stress, its fake ULP: the handler of the stress's
//! cm_ids (`stress_event`, from `ulp_handler`), the ULP's calls from
//! outside its handlers, the drive of one provider script against them,
//! and the check of what each cm_id heard.

use super::{bad_input::*, fake_provider::*, stress::*, stress_model::*};
use crate::bindings;
use core::ptr;
use core::sync::atomic::Ordering::SeqCst;
use kernel::prelude::*;

pub(super) fn api_err(s: &Stress, what: &str, r: i32) {
    inc(&s.c.api_err);
    if report_more() {
        pr_err!("concurrency stress: {} returned {}\n", what, r);
    }
}

/// The stress's fake ULP (from `ulp_handler`): records the event on the
/// id's `Ctx` and does what its plan says.
///
/// # Safety
///
/// `id` and `ev` as for `ulp_handler`; the context of `id` is a `Ctx` of
/// the running stress.
pub(super) unsafe fn stress_event(
    id: *mut bindings::iw_cm_id,
    ev: *mut bindings::iw_cm_event,
) -> i32 {
    // SAFETY: the context is a `Ctx` (caller); its lifecycle is freed
    // only `GRAVE` lifecycles after its ids were destroyed.
    let c = unsafe { &*(*id).context.cast::<Ctx>() };
    // SAFETY: a lifecycle's worker outlives it.
    let w = unsafe { &*(*c.lc).w };
    let s = w.stress();
    // SAFETY: iw_cm passes a valid event.
    let (kind, ok) = unsafe { ((*ev).event, (*ev).status == 0) };
    inc(&s.c.heard);
    if c.destroyed.load(SeqCst) {
        inc(&s.c.late);
        if report_more() {
            pr_err!(
                "concurrency stress: event {} delivered after the destroy of its cm_id returned\n",
                kind
            );
        }
        // A request on a destroyed listener: iw_cm rejects and
        // destroys the child.
        return if kind == EV_REQ { -1 } else { 0 };
    }
    if c.busy.swap(true, SeqCst) {
        inc(&s.c.overlap);
        if report_more() {
            pr_err!("concurrency stress: two handlers at once on one cm_id\n");
        }
    }
    let ret = if kind == EV_REQ {
        // SAFETY: as above.
        stress_request(s, unsafe { &*c.lc }, c, id)
    } else {
        stress_other(s, c, id, kind, ok)
    };
    c.busy.store(false, SeqCst);
    w.wake();
    ret
}

/// A CONNECT_REQUEST on a listener `c` of `lc`, delivered on the child `id`.
pub(super) fn stress_request(
    s: &Stress,
    lc: &Lifecycle,
    c: &Ctx,
    id: *mut bindings::iw_cm_id,
) -> i32 {
    if !lc.listener || !ptr::eq(c, &lc.main) {
        inc(&s.c.illegal);
        if report_more() {
            pr_err!("concurrency stress: CONNECT_REQUEST on a cm_id that does not listen\n");
        }
        return -1;
    }
    let k = lc.nkids.fetch_add(1, SeqCst);
    if k >= MAX_KIDS {
        inc(&s.c.illegal);
        if report_more() {
            pr_err!("concurrency stress: more CONNECT_REQUESTs delivered than taken\n");
        }
        lc.kids_done.fetch_add(1, SeqCst);
        return -1;
    }
    let kid = &lc.kids[k];
    kid.busy.store(true, SeqCst);
    kid.id.store(id, SeqCst);
    // SAFETY: the child is the ULP's since this delivery; rdma_cm sets
    // its child's context in this handler too (iw_conn_req_handler).
    unsafe { (*id).context = ptr::from_ref(kid).cast_mut().cast() };
    kid.record(EV_REQ, true);
    inc(&s.c.cm_ids);
    let mut ret = 0;
    match kid.plan.req {
        KID_ACCEPT | KID_ACCEPT_FAIL => {
            let r = accept(id);
            if r == 0 {
                kid.accepted.store(true, SeqCst);
                // SAFETY: a lifecycle's worker outlives it.
                let from = unsafe { (*lc.w).idx };
                let job = Job {
                    id,
                    script: kid.plan.script,
                };
                // The provider took a reference in accept; when no
                // worker can take the job, the provider plays it
                // here (its events wait for this delivery to end).
                if !hand_off(s, from, id, job.script) {
                    play(s, job);
                }
            } else {
                api_err(s, "accept in the CONNECT_REQUEST handler", r);
            }
            if kid.plan.req == KID_ACCEPT_FAIL && kid.claim() {
                kid.destroyed.store(true, SeqCst);
                inc(&s.c.handler_fails);
                ret = -1;
            }
        }
        KID_REJECT => {
            // SAFETY: the child is the ULP's and live.
            let r = unsafe { bindings::iw_cm_reject(id, ptr::null(), 0) };
            if r != 0 {
                api_err(s, "reject in the CONNECT_REQUEST handler", r);
            }
        }
        KID_DESTROY => {
            if kid.claim() {
                // SAFETY: the claim makes this handler the child's
                // only destroyer.
                unsafe { bindings::iw_destroy_cm_id(id) };
                kid.destroyed.store(true, SeqCst);
                inc(&s.c.handler_destroys);
            }
        }
        KID_FAIL => {
            if kid.claim() {
                kid.destroyed.store(true, SeqCst);
                inc(&s.c.handler_fails);
                ret = -1;
            }
        }
        _ => {}
    }
    kid.busy.store(false, SeqCst);
    if lc.destroy_listener_in_req == k + 1 && lc.main.claim() {
        // SAFETY: the claim makes this handler the listener's only
        // destroyer; called from the listener's own delivery, it does
        // not wait.
        unsafe { bindings::iw_destroy_cm_id(lc.main.id.load(SeqCst)) };
        lc.main.destroyed.store(true, SeqCst);
        inc(&s.c.handler_destroys);
    }
    // The worker may finish the lifecycle from here on.
    lc.kids_done.fetch_add(1, SeqCst);
    ret
}

/// Any other event on `c`'s `id`.
pub(super) fn stress_other(
    s: &Stress,
    c: &Ctx,
    id: *mut bindings::iw_cm_id,
    kind: u32,
    ok: bool,
) -> i32 {
    c.record(kind, ok);
    if c.plan.disconnect_on == kind + 1 {
        // SAFETY: the ULP's reference is held until this delivery ends
        // (a destroy waits for it); a destroy already begun makes it
        // -EINVAL.
        let r = unsafe { bindings::iw_cm_disconnect(id, 0) };
        inc(&s.c.handler_disconnects);
        if r != 0 && r != errno(kernel::bindings::EINVAL) {
            api_err(s, "disconnect in the handler", r);
        }
    }
    if c.plan.destroy_on == kind + 1 && c.claim() {
        // SAFETY: the claim makes this handler the id's only destroyer;
        // from its own handler, it does not wait.
        unsafe { bindings::iw_destroy_cm_id(id) };
        c.destroyed.store(true, SeqCst);
        inc(&s.c.handler_destroys);
    } else if c.plan.fail_on == kind + 1 && c.claim() {
        c.destroyed.store(true, SeqCst);
        inc(&s.c.handler_fails);
        return -1;
    }
    0
}

/// The ULP destroys `c`'s id from outside its handlers (claiming it
/// first unless `mine`), or, when a handler claimed it, waits until that
/// handler destroyed it (a handler that claims is running).
pub(super) fn destroy_outside(w: &Worker, c: &Ctx, mine: bool) -> Result {
    if mine || c.claim() {
        // SAFETY: the claim makes the worker the id's only destroyer; the
        // ULP's reference is still held.
        unsafe { bindings::iw_destroy_cm_id(c.id.load(SeqCst)) };
        c.destroyed.store(true, SeqCst);
        Ok(())
    } else {
        w.wait_until("a handler's destroy", || c.destroyed.load(SeqCst))
    }
}

pub(super) fn disconnect_outside(s: &Stress, c: &Ctx, abrupt: bool) {
    // SAFETY: the worker holds the claim: the id is live and only it
    // may destroy it.
    let r = unsafe { bindings::iw_cm_disconnect(c.id.load(SeqCst), i32::from(abrupt)) };
    if r != 0 {
        api_err(s, "disconnect", r);
    }
}

/// Where the ULP acts while the provider plays a script of `n` steps.
#[derive(Clone, Copy)]
pub(super) struct Drive {
    /// Destroy before this step (`n`: after the script, `n + 1`: after
    /// the provider's release).
    destroy_at: usize,
    /// Disconnect before this step, if the connect/accept is settled by
    /// then (`usize::MAX`: never).
    disconnect_at: usize,
    abrupt: bool,
    /// The provider's release goes to another worker, racing the destroy.
    release_elsewhere: bool,
    /// Spins before the ULP acts when the provider plays elsewhere.
    spin: usize,
}

impl Drive {
    pub(super) const NEVER: Drive = Drive {
        destroy_at: 0,
        disconnect_at: usize::MAX,
        abrupt: false,
        release_elsewhere: false,
        spin: 0,
    };

    pub(super) fn draw(rng: &mut Rng, n: usize) -> Self {
        let destroy_at = rng.below(n + 2);
        let disconnect_at = if rng.chance(1, 3) {
            rng.below(n + 1)
        } else {
            usize::MAX
        };
        Drive {
            destroy_at,
            disconnect_at,
            abrupt: rng.chance(1, 2),
            release_elsewhere: rng.chance(1, 3),
            spin: rng.below(64),
        }
    }
}

/// The provider plays `script` on `c`'s id here, with the ULP's
/// disconnect and destroy at the drawn steps; then the provider's
/// release, here or on another worker, racing the destroy.
pub(super) fn drive(
    s: &Stress,
    w: &Worker,
    c: &Ctx,
    script: &Script,
    d: Drive,
    passive: bool,
) -> Result {
    let id = c.id.load(SeqCst);
    let ops = script.ops();
    let mut settled = false;
    let mut mine = false;
    let mut gone = false;
    for i in 0..=ops.len() {
        if i == d.disconnect_at && settled && !gone && (mine || c.claim()) {
            mine = true;
            disconnect_outside(s, c, d.abrupt);
        }
        if i == d.destroy_at {
            destroy_outside(w, c, mine)?;
            gone = true;
        }
        if i < ops.len() && play_op(s, id, ops[i]) == 0 && op_settles(ops[i], passive) {
            settled = true;
        }
    }
    if !(d.release_elsewhere && hand_off(s, w.idx, id, Script::EMPTY)) {
        provider_release(id);
    } else {
        inc(&s.c.racing_releases);
    }
    if !gone {
        destroy_outside(w, c, mine)?;
    }
    Ok(())
}

/// The ULP's part while another worker plays the provider: the jobs
/// handed to this worker and a few spins (the other worker may be
/// playing by then), a disconnect if the connect/accept is settled,
/// the destroy.
pub(super) fn ulp_racing(s: &Stress, w: &Worker, c: &Ctx, d: Drive) -> Result {
    w.drain();
    for _ in 0..d.spin {
        core::hint::spin_loop();
    }
    let mut mine = false;
    if d.disconnect_at != usize::MAX && c.heard_settled() && c.claim() {
        mine = true;
        disconnect_outside(s, c, d.abrupt);
    }
    destroy_outside(w, c, mine)
}

/// Whether `c` heard a legal sequence: the order of `may_follow` for
/// the state its provider events start in (an active id: ConnSent; a
/// child after its CONNECT_REQUEST: Accepting once accepted, else
/// ConnRecv; a listener: nothing, its requests go to the children),
/// each event at most once; and, which the table does not say, nothing
/// after a failed CONNECT_REPLY, no CLOSE before an accepted one.
pub(super) fn heard_legal(c: &Ctx, listener: bool, kid: bool) -> bool {
    let n = c.nheard.load(SeqCst);
    if n > MAX_HEARD {
        return false;
    }
    let (at, first) = if kid {
        if n == 0 || c.heard_at(0) != (EV_REQ, true) {
            return false;
        }
        if c.accepted.load(SeqCst) {
            (At::Accepting, 1)
        } else {
            (At::ConnRecv, 1)
        }
    } else if listener {
        (At::Listen, 0)
    } else {
        (At::ConnSent, 0)
    };
    let order = may_follow(at);
    let mut pos = 0;
    let mut replied = false;
    let mut ended = false;
    for i in first..n {
        let (kind, ok) = c.heard_at(i);
        if ended {
            return false;
        }
        match order[pos..].iter().position(|&k| k == kind) {
            Some(p) => pos += p + 1,
            None => return false,
        }
        if kind == EV_REPLY {
            replied = ok;
            ended = !ok;
        }
        if kind == EV_CLOSE && at == At::ConnSent && !replied {
            return false;
        }
    }
    true
}

pub(super) fn check_heard(s: &Stress, c: &Ctx, listener: bool, kid: bool) {
    if heard_legal(c, listener, kid) {
        return;
    }
    inc(&s.c.illegal);
    if report_more() {
        let n = c.nheard.load(SeqCst).min(MAX_HEARD);
        let mut seq = [(0u32, false); MAX_HEARD];
        for (i, e) in seq.iter_mut().enumerate().take(n) {
            *e = c.heard_at(i);
        }
        pr_err!(
            "concurrency stress: illegal sequence on a{} cm_id (accepted {}): {:?} (event, status 0)\n",
            if kid {
                " child"
            } else if listener {
                " listener"
            } else {
                "n active"
            },
            c.accepted.load(SeqCst),
            &seq[..n]
        );
    }
}
