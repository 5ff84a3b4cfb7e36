// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The concurrency stress, its model: the seeded draws of each worker,
//! the fake provider's scripts, the fake ULP's plans, what each cm_id
//! heard, the counters and the mailbox a provider job is handed over in.
//! The stress itself is in stress.rs, its fake ULP in stress_ulp.rs.

use super::{bad_input::*, fake_provider::*, stress::*};
use crate::bindings;
use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering::SeqCst};
use kernel::ffi::c_int;
use kernel::prelude::*;

// ---- concurrency stress -------------------------------------------------
//
// One kernel thread per online CPU (at least 2) drives the fake provider
// and fake ULPs through random cm_id lifecycles: an active id (connect,
// CONNECT_REPLY accepted or failed, ESTABLISHED, DISCONNECT, CLOSE) or a
// listener (CONNECT_REQUESTs, children accepted, rejected, destroyed or
// failed in the handler or left to the thread), each provider script
// with random duplicates and one swap of neighbours.  The provider's
// part runs on the same thread, interleaved with the ULP's disconnect
// and destroy at drawn points, or on another CPU's thread (a job handed
// over with the provider's cm_id reference), racing them; so does the
// provider's final `rem_ref`.  Handlers destroy their own id, return
// non-zero, disconnect, and destroy the listener from a child's
// CONNECT_REQUEST.  Checks: every fake ULP heard a legal sequence on
// each of its ids, no handler ran on an id after its destroy returned
// or while another handler ran on it, every provider request object
// went back once (accept or reject), no iw_cm call failed that may
// not, live cm_ids back to their count before, no QP reference left.

// Helpers of iw_cm_exports.c for the stress (prototypes there).
extern "C" {
    pub(super) fn iwcm_c_stress_seed() -> u64;
    pub(super) fn iwcm_c_stress_lifecycles() -> u32;
    pub(super) fn iwcm_c_nr_online_cpus() -> u32;
    pub(super) fn iwcm_c_kthread_start(
        f: unsafe extern "C" fn(*mut c_void) -> c_int,
        data: *mut c_void,
        idx: u32,
    ) -> *mut c_void;
    pub(super) fn iwcm_c_kthread_wait(k: *mut c_void, ms: u32) -> bool;
    pub(super) fn iwcm_c_kthread_join(k: *mut c_void) -> c_int;
    pub(super) fn iwcm_c_hung_task_reset();
}

/// splitmix64: each worker's stream from the seed.
pub(super) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// xorshift64*: one worker's decisions.  Every draw is made before the
/// lifecycle it decides starts, never on a timing-dependent branch, so
/// that a seed replays every worker's decisions (not the interleaving).
pub(super) struct Rng {
    state: u64,
    /// A digest of every draw: equal for a replay of the seed on as
    /// many CPUs.
    pub(super) digest: u64,
}

impl Rng {
    pub(super) fn new(seed: u64, stream: u64) -> Self {
        Rng {
            state: splitmix64(seed ^ splitmix64(stream)) | 1,
            digest: stream,
        }
    }

    pub(super) fn next(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        self.digest = self.digest.rotate_left(7) ^ r;
        r
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(super) fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }

    /// True with probability `num / den`.
    pub(super) fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }
}

// One step of the fake provider.
pub(super) const OP_REQ: u8 = 1;
pub(super) const OP_REPLY_OK: u8 = 2;
pub(super) const OP_REPLY_OK_PDATA: u8 = 3;
/// -ECONNREFUSED with the peer's private data (iw_cxgb4's peer reject).
pub(super) const OP_REFUSED: u8 = 4;
/// -ECONNRESET with the peer's private data (siw's peer reject).
pub(super) const OP_RESET: u8 = 5;
pub(super) const OP_TIMEDOUT: u8 = 6;
pub(super) const OP_EST: u8 = 7;
pub(super) const OP_DISC: u8 = 8;
pub(super) const OP_CLOSE: u8 = 9;
/// CLOSE -ECONNRESET (iw_cxgb4's abort).
pub(super) const OP_CLOSE_RESET: u8 = 10;

pub(super) fn op_event(op: u8) -> bindings::iw_cm_event {
    use kernel::bindings::{ECONNREFUSED, ECONNRESET, ETIMEDOUT};
    let pd = PDATA.as_ptr() as usize;
    match op {
        OP_REQ => wire_event(EV_REQ, 0),
        OP_REPLY_OK => wire_event(EV_REPLY, 0),
        OP_REPLY_OK_PDATA => with_pdata(EV_REPLY, 0, pd, 16),
        OP_REFUSED => with_pdata(EV_REPLY, errno(ECONNREFUSED), pd, 8),
        OP_RESET => with_pdata(EV_REPLY, errno(ECONNRESET), pd, 4),
        OP_TIMEDOUT => wire_event(EV_REPLY, errno(ETIMEDOUT)),
        OP_EST => wire_event(EV_EST, 0),
        OP_DISC => wire_event(EV_DISC, 0),
        OP_CLOSE_RESET => wire_event(EV_CLOSE, errno(ECONNRESET)),
        _ => wire_event(EV_CLOSE, 0),
    }
}

/// Whether `op`, once queued, ends the connect (active) or accept
/// (passive) in flight, so that a disconnect no longer waits for it.
pub(super) fn op_settles(op: u8, passive: bool) -> bool {
    match op {
        OP_CLOSE | OP_CLOSE_RESET => true,
        OP_EST => passive,
        OP_REPLY_OK..=OP_TIMEDOUT => !passive,
        _ => false,
    }
}

/// What the fake provider sends on one cm_id, in order.
#[derive(Clone, Copy)]
pub(super) struct Script {
    ops: [u8; 12],
    pub(super) n: usize,
}

impl Script {
    pub(super) const EMPTY: Script = Script { ops: [0; 12], n: 0 };

    pub(super) fn push(&mut self, op: u8) {
        if self.n < self.ops.len() {
            self.ops[self.n] = op;
            self.n += 1;
        }
    }

    pub(super) fn ops(&self) -> &[u8] {
        &self.ops[..self.n]
    }

    /// Duplicates (one in five events) and a swap of two neighbours
    /// (one script in six): a racy or buggy provider.
    pub(super) fn garble(self, rng: &mut Rng) -> Script {
        let mut out = Script::EMPTY;
        for &op in self.ops() {
            out.push(op);
            if rng.chance(1, 5) {
                out.push(op);
            }
        }
        if out.n >= 2 && rng.chance(1, 6) {
            let i = rng.below(out.n - 1);
            out.ops.swap(i, i + 1);
        }
        out
    }
}

/// After a connect: CONNECT_REPLY accepted, refused, reset or timed
/// out (or none: the ULP gives up first), then on success DISCONNECT
/// and CLOSE, sometimes an ESTABLISHED no provider sends to an active id.
pub(super) fn active_script(rng: &mut Rng) -> Script {
    let mut s = Script::EMPTY;
    let reply = match rng.below(20) {
        0..=8 => OP_REPLY_OK,
        9..=10 => OP_REPLY_OK_PDATA,
        11..=12 => OP_REFUSED,
        13..=14 => OP_RESET,
        15..=16 => OP_TIMEDOUT,
        _ => 0,
    };
    if reply != 0 {
        s.push(reply);
    }
    if reply == OP_REPLY_OK || reply == OP_REPLY_OK_PDATA {
        if rng.chance(1, 10) {
            s.push(OP_EST);
        }
        if rng.chance(1, 2) {
            s.push(OP_DISC);
        }
        if rng.chance(3, 5) {
            s.push(if rng.chance(1, 5) {
                OP_CLOSE_RESET
            } else {
                OP_CLOSE
            });
        }
    } else if rng.chance(1, 5) {
        s.push(if rng.chance(1, 2) { OP_DISC } else { OP_CLOSE });
    }
    s.garble(rng)
}

/// After an accept: ESTABLISHED (or not: the peer closed first),
/// DISCONNECT, CLOSE, sometimes a CONNECT_REPLY no provider sends to a
/// passive id.
pub(super) fn passive_script(rng: &mut Rng) -> Script {
    let mut s = Script::EMPTY;
    if rng.chance(4, 5) {
        s.push(OP_EST);
    }
    if rng.chance(1, 20) {
        s.push(OP_REPLY_OK);
    }
    if rng.chance(2, 5) {
        s.push(OP_DISC);
    }
    if rng.chance(3, 5) {
        s.push(if rng.chance(1, 5) {
            OP_CLOSE_RESET
        } else {
            OP_CLOSE
        });
    }
    s.garble(rng)
}

// What the CONNECT_REQUEST handler does with the child.
/// Nothing: the worker accepts, rejects or destroys it later, from
/// outside (as rdma_cm's user-space ULPs through ucma).
pub(super) const KID_LEAVE: u32 = 0;
/// Accept in the handler (as the in-kernel ULPs, nvmet).
pub(super) const KID_ACCEPT: u32 = 1;
pub(super) const KID_REJECT: u32 = 2;
/// `iw_destroy_cm_id` on the child from the handler.
pub(super) const KID_DESTROY: u32 = 3;
/// A non-zero return: iw_cm rejects and destroys the child.
pub(super) const KID_FAIL: u32 = 4;
/// Accept, then a non-zero return: iw_cm aborts the connection.
pub(super) const KID_ACCEPT_FAIL: u32 = 5;

/// What a fake ULP's handler does on one cm_id, fixed before it exists.
/// Event types are stored + 1; 0 is never.
#[derive(Clone, Copy)]
pub(super) struct Plan {
    /// `iw_destroy_cm_id` from the handler of this event.
    pub(super) destroy_on: u32,
    /// A non-zero return from the handler of this event.
    pub(super) fail_on: u32,
    /// `iw_cm_disconnect` from the handler of this event.
    pub(super) disconnect_on: u32,
    /// Children: the CONNECT_REQUEST handler's action (`KID_*`).
    pub(super) req: u32,
    /// Children: the provider's script once accepted.
    pub(super) script: Script,
}

impl Plan {
    pub(super) const NONE: Plan = Plan {
        destroy_on: 0,
        fail_on: 0,
        disconnect_on: 0,
        req: KID_LEAVE,
        script: Script::EMPTY,
    };
}

/// The handler's reactions on an id whose connection completes with
/// `done` (CONNECT_REPLY for an active id, ESTABLISHED for a passive one).
pub(super) fn handler_plan(rng: &mut Rng, done: u32) -> Plan {
    let mut p = Plan::NONE;
    let on = if rng.chance(1, 2) {
        done + 1
    } else {
        EV_CLOSE + 1
    };
    match rng.below(20) {
        0..=1 => p.destroy_on = on,
        2..=3 => p.fail_on = on,
        4..=5 => p.disconnect_on = done + 1,
        _ => {}
    }
    p
}

pub(super) const MAX_HEARD: usize = 8;
pub(super) const MAX_KIDS: usize = 3;

/// One cm_id of the stress: the fake ULP's context (its `context`
/// pointer), what it does and what it heard.
pub(super) struct Ctx {
    /// The lifecycle (set before the id exists).
    pub(super) lc: *const Lifecycle,
    pub(super) plan: Plan,
    pub(super) id: AtomicPtr<bindings::iw_cm_id>,
    /// Events heard, in order: type << 1 | (status == 0).
    heard: [AtomicU32; MAX_HEARD],
    pub(super) nheard: AtomicUsize,
    /// A handler of this id runs.
    pub(super) busy: AtomicBool,
    /// Who sets it (the worker from outside, or a handler) destroys the
    /// id; no one else calls iw_cm on it afterwards.
    pub(super) claimed: AtomicBool,
    /// Set right after its destroy returned (for a non-zero handler
    /// return: right before that return): no handler may run after.
    pub(super) destroyed: AtomicBool,
    /// An `iw_cm_accept` on it returned 0.
    pub(super) accepted: AtomicBool,
}

impl Ctx {
    pub(super) fn new(plan: Plan) -> Self {
        Ctx {
            lc: ptr::null(),
            plan,
            id: AtomicPtr::new(ptr::null_mut()),
            heard: [const { AtomicU32::new(0) }; MAX_HEARD],
            nheard: AtomicUsize::new(0),
            busy: AtomicBool::new(false),
            claimed: AtomicBool::new(false),
            destroyed: AtomicBool::new(false),
            accepted: AtomicBool::new(false),
        }
    }

    /// Only from this id's handler, which iw_cm never runs twice at once.
    pub(super) fn record(&self, kind: u32, ok: bool) {
        let n = self.nheard.load(SeqCst);
        if n < MAX_HEARD {
            self.heard[n].store(kind << 1 | u32::from(ok), SeqCst);
        }
        self.nheard.store(n + 1, SeqCst);
    }

    pub(super) fn heard_at(&self, i: usize) -> (u32, bool) {
        let v = self.heard[i].load(SeqCst);
        (v >> 1, v & 1 == 1)
    }

    /// Whether the ULP heard its connect or accept end (or the
    /// connection close): a disconnect then does not wait.
    pub(super) fn heard_settled(&self) -> bool {
        let n = self.nheard.load(SeqCst).min(MAX_HEARD);
        (0..n).any(|i| matches!(self.heard_at(i).0, EV_REPLY | EV_EST | EV_CLOSE))
    }

    pub(super) fn claim(&self) -> bool {
        !self.claimed.swap(true, SeqCst)
    }
}

/// The cm_ids of one lifecycle: an active id, or a listener and the
/// children its CONNECT_REQUESTs create.  Freed through the worker's
/// `Grave`, well after the last of them was destroyed.
pub(super) struct Lifecycle {
    pub(super) w: *const Worker,
    pub(super) listener: bool,
    /// The listener is destroyed by the handler of this request (+1).
    pub(super) destroy_listener_in_req: usize,
    pub(super) main: Ctx,
    pub(super) kids: [Ctx; MAX_KIDS],
    /// CONNECT_REQUESTs delivered, and their handlers finished.
    pub(super) nkids: AtomicUsize,
    pub(super) kids_done: AtomicUsize,
}

pub(super) fn new_lifecycle(
    w: &Worker,
    listener: bool,
    main: Plan,
    kids: [Plan; MAX_KIDS],
    destroy_listener_in_req: usize,
) -> Result<*mut Lifecycle> {
    let lc = KBox::new(
        Lifecycle {
            w: ptr::from_ref(w),
            listener,
            destroy_listener_in_req,
            main: Ctx::new(main),
            kids: kids.map(Ctx::new),
            nkids: AtomicUsize::new(0),
            kids_done: AtomicUsize::new(0),
        },
        GFP_KERNEL,
    )?;
    let p = KBox::into_raw(lc);
    // SAFETY: `p` is new and nobody else has it yet.
    unsafe {
        (*p).main.lc = p;
        for k in (*p).kids.iter_mut() {
            k.lc = p;
        }
    }
    Ok(p)
}

/// The last `GRAVE` lifecycles of a worker: a late handler call still
/// finds its `Ctx` (and fails the test) instead of freed memory.
pub(super) const GRAVE: usize = 32;

pub(super) struct Grave {
    pub(super) slots: KVec<*mut Lifecycle>,
    pub(super) next: usize,
}

impl Grave {
    pub(super) fn bury(&mut self, lc: *mut Lifecycle) {
        if self.slots.len() < GRAVE && self.slots.push(lc, GFP_KERNEL).is_ok() {
            return;
        }
        let old = core::mem::replace(&mut self.slots[self.next], lc);
        self.next = if self.next + 1 < self.slots.len() {
            self.next + 1
        } else {
            0
        };
        // SAFETY: `old` came from `new_lifecycle`; all its cm_ids were
        // destroyed `GRAVE` lifecycles ago.
        drop(unsafe { KBox::from_raw(old) });
    }
}

impl Drop for Grave {
    fn drop(&mut self) {
        for &lc in self.slots.iter() {
            // SAFETY: as in `bury`; the stress is over.
            drop(unsafe { KBox::from_raw(lc) });
        }
    }
}

/// Counters of one stress run.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) cm_ids: AtomicUsize,
    pub(super) upcalls: AtomicUsize,
    pub(super) refused: AtomicUsize,
    pub(super) req_taken: AtomicUsize,
    pub(super) heard: AtomicUsize,
    pub(super) handler_destroys: AtomicUsize,
    pub(super) handler_fails: AtomicUsize,
    pub(super) handler_disconnects: AtomicUsize,
    pub(super) handoffs: AtomicUsize,
    pub(super) racing_releases: AtomicUsize,
    /// Check failures.
    pub(super) late: AtomicUsize,
    pub(super) overlap: AtomicUsize,
    pub(super) illegal: AtomicUsize,
    pub(super) api_err: AtomicUsize,
}

pub(super) fn inc(a: &AtomicUsize) {
    a.fetch_add(1, SeqCst);
}

/// The first few check failures are described in the log.
pub(super) static STRESS_REPORTS: AtomicUsize = AtomicUsize::new(0);

pub(super) fn report_more() -> bool {
    STRESS_REPORTS.fetch_add(1, SeqCst) < 10
}

/// The provider's step that the provider hands to another worker, with
/// its reference on the cm_id: `script`, then `rem_ref`.
#[derive(Clone, Copy)]
pub(super) struct Job {
    pub(super) id: *mut bindings::iw_cm_id,
    pub(super) script: Script,
}

pub(super) const MAILBOX: usize = 64;

pub(super) struct Mailbox {
    pub(super) jobs: [Job; MAILBOX],
    pub(super) head: usize,
    pub(super) len: usize,
}

// SAFETY: a job's cm_id pointer comes with a provider reference, which
// any thread may use and drop (as siw's work items do).
unsafe impl Send for Mailbox {}
