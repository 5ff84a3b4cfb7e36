// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The concurrency stress (`concurrency_stress`): one worker thread per
//! online CPU runs random cm_id lifecycles (stress_model.rs has the
//! design), then the checks of the run.

use super::{bad_input::*, fake_provider::*, fake_ulp::*, stress_model::*, stress_ulp::*};
use crate::bindings;
use crate::iface;
use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::sync::{new_condvar, new_spinlock, CondVar, SpinLock};
use kernel::time::{delay::fsleep, msecs_to_jiffies, Delta, Instant, Monotonic};

/// One stress thread.
#[pin_data]
pub(super) struct Worker {
    pub(super) idx: usize,
    /// Lifecycles to run.
    quota: usize,
    stress: *const Stress,
    /// The lock and condition variable the thread waits on for its
    /// handlers' progress.
    #[pin]
    lock: SpinLock<()>,
    #[pin]
    cv: CondVar,
    #[pin]
    mailbox: SpinLock<Mailbox>,
}

// SAFETY: `stress` points to the running stress, which outlives every
// worker and is shared by all of them (it is `Sync`); the rest is
// behind locks or atomic.
unsafe impl Send for Worker {}
// SAFETY: as for `Send`.
unsafe impl Sync for Worker {}

impl Worker {
    pub(super) fn new(idx: usize, quota: usize, stress: *const Stress) -> impl PinInit<Self> {
        pin_init!(Self {
            idx,
            quota,
            stress,
            lock <- new_spinlock!((), "stress::Worker::lock"),
            cv <- new_condvar!("stress::Worker::cv"),
            mailbox <- new_spinlock!(
                Mailbox {
                    jobs: [Job {
                        id: ptr::null_mut(),
                        script: Script::EMPTY,
                    }; MAILBOX],
                    head: 0,
                    len: 0,
                },
                "stress::Worker::mailbox"
            ),
        })
    }

    pub(super) fn stress(&self) -> &Stress {
        // SAFETY: the stress outlives its workers (type invariant of `stress`).
        unsafe { &*self.stress }
    }

    /// A handler made progress on one of this worker's ids.
    pub(super) fn wake(&self) {
        drop(self.lock.lock());
        self.cv.notify_all();
    }

    /// Waits (at most 10 s) until `f` holds; `f` turns true only by a
    /// handler, which calls `wake` afterwards.
    pub(super) fn wait_until(&self, what: &str, f: impl Fn() -> bool) -> Result {
        if f() {
            return Ok(());
        }
        let start = Instant::<Monotonic>::now();
        let mut g = self.lock.lock();
        while !f() {
            if start.elapsed().as_millis() > 10_000 {
                drop(g);
                pr_err!(
                    "concurrency stress: worker {} waited 10 s for {}\n",
                    self.idx,
                    what
                );
                return Err(ETIMEDOUT);
            }
            let _ = self
                .cv
                .wait_interruptible_timeout(&mut g, msecs_to_jiffies(20));
        }
        Ok(())
    }

    pub(super) fn push(&self, job: Job) -> bool {
        let mut m = self.mailbox.lock();
        if m.len == MAILBOX {
            return false;
        }
        let i = (m.head + m.len) % MAILBOX;
        m.jobs[i] = job;
        m.len += 1;
        true
    }

    pub(super) fn pop(&self) -> Option<Job> {
        let mut m = self.mailbox.lock();
        if m.len == 0 {
            return None;
        }
        let job = m.jobs[m.head];
        m.head = (m.head + 1) % MAILBOX;
        m.len -= 1;
        Some(job)
    }

    /// Plays the jobs handed to this worker; how many there were.
    pub(super) fn drain(&self) -> usize {
        let mut n = 0;
        while let Some(job) = self.pop() {
            play(self.stress(), job);
            n += 1;
        }
        n
    }
}

/// One stress run, shared by its workers.
pub(super) struct Stress {
    seed: u64,
    dev: *mut bindings::ib_device,
    workers: KVec<Pin<KBox<Worker>>>,
    /// Lifecycles finished.
    done: AtomicUsize,
    /// Workers that will hand over no more jobs.
    producers_done: AtomicUsize,
    /// The workers' `Rng` digests, combined.
    decisions: AtomicU64,
    abort: AtomicBool,
    pub(super) c: Counters,
}

// SAFETY: `dev` is the fake device, which outlives the run and which
// iw_cm uses from any thread; everything else is atomic or pinned
// workers that are `Sync`.
unsafe impl Send for Stress {}
// SAFETY: as for `Send`.
unsafe impl Sync for Stress {}

/// The fake provider plays `op` on `id`, on which it holds a reference.
pub(super) fn play_op(s: &Stress, id: *mut bindings::iw_cm_id, op: u8) -> i32 {
    let r = upcall_ev(id, op_event(op));
    inc(&s.c.upcalls);
    if r != 0 {
        inc(&s.c.refused);
    } else if op == OP_REQ {
        inc(&s.c.req_taken);
    }
    r
}

/// The fake provider plays a job: its script, then its `rem_ref`.
pub(super) fn play(s: &Stress, job: Job) {
    for &op in job.script.ops() {
        play_op(s, job.id, op);
    }
    provider_release(job.id);
}

/// Hands `script` and the provider's reference on `id` to the next
/// worker (it plays them on its CPU); false when its mailbox is full.
pub(super) fn hand_off(
    s: &Stress,
    from: usize,
    id: *mut bindings::iw_cm_id,
    script: Script,
) -> bool {
    // (No `%` by a run-time value: objtool of 7.3 does not know Rust's
    // division-by-zero panic as noreturn.)
    let next = if from + 1 < s.workers.len() {
        from + 1
    } else {
        0
    };
    let to = &s.workers[next];
    let ok = to.push(Job { id, script });
    if ok {
        inc(&s.c.handoffs);
    }
    ok
}

/// An active id: connect, the provider's script (here, interleaved with
/// the ULP's disconnect and destroy, or on another CPU racing them).
pub(super) fn active_lifecycle(s: &Stress, w: &Worker, rng: &mut Rng, grave: &mut Grave) -> Result {
    let plan = handler_plan(rng, EV_REPLY);
    let script = active_script(rng);
    let racing = rng.chance(2, 5);
    let d = Drive::draw(rng, script.n);
    let lc = new_lifecycle(w, false, plan, [Plan::NONE; MAX_KIDS], 0)?;
    // SAFETY: freed only by the grave, after all its ids are gone.
    let l = unsafe { &*lc };
    let id = match create_on(s.dev, ptr::from_ref(&l.main) as usize) {
        Ok(id) => id,
        Err(e) => {
            // SAFETY: from `new_lifecycle`, and no cm_id knows it.
            drop(unsafe { KBox::from_raw(lc) });
            return Err(e);
        }
    };
    l.main.id.store(id, SeqCst);
    inc(&s.c.cm_ids);
    let r = connect(id);
    if r != 0 {
        api_err(s, "connect", r);
        destroy_outside(w, &l.main, false)?;
    } else if racing && hand_off(s, w.idx, id, script) {
        ulp_racing(s, w, &l.main, d)?;
    } else {
        drive(s, w, &l.main, &script, d, false)?;
    }
    check_heard(s, &l.main, false, false);
    grave.bury(lc);
    Ok(())
}

/// What the worker does with one child.
#[derive(Clone, Copy)]
pub(super) struct KidDraw {
    /// For `KID_LEAVE`: 0-3 accept, 4-6 reject, else destroy unanswered.
    action: usize,
    racing: bool,
    drive: Drive,
}

/// A listener: CONNECT_REQUESTs from here (interleaved with an early
/// destroy) or from another CPU (racing the destroy); then the
/// children, in the handler or here.
pub(super) fn listener_lifecycle(
    s: &Stress,
    w: &Worker,
    rng: &mut Rng,
    grave: &mut Grave,
) -> Result {
    let nreq = 1 + rng.below(MAX_KIDS);
    let backlog = 1 + rng.below(4) as i32;
    let mut kids = [Plan::NONE; MAX_KIDS];
    let mut draws = [KidDraw {
        action: 0,
        racing: false,
        drive: Drive::NEVER,
    }; MAX_KIDS];
    for (k, kd) in kids.iter_mut().zip(draws.iter_mut()) {
        *k = handler_plan(rng, EV_EST);
        k.req = match rng.below(20) {
            0..=5 => KID_ACCEPT,
            6..=7 => KID_REJECT,
            8..=9 => KID_DESTROY,
            10..=11 => KID_FAIL,
            12 => KID_ACCEPT_FAIL,
            _ => KID_LEAVE,
        };
        k.script = passive_script(rng);
        *kd = KidDraw {
            action: rng.below(10),
            racing: rng.chance(1, 3),
            drive: Drive::draw(rng, k.script.n),
        };
    }
    let in_req = if rng.chance(3, 20) {
        1 + rng.below(nreq)
    } else {
        0
    };
    let racing = rng.chance(1, 3);
    let early = if rng.chance(1, 6) {
        rng.below(nreq + 1)
    } else {
        usize::MAX
    };
    let listener_first = rng.chance(1, 2);
    let spin = rng.below(64);

    let lc = new_lifecycle(w, true, Plan::NONE, kids, in_req)?;
    // SAFETY: freed only by the grave, after all its ids are gone.
    let l = unsafe { &*lc };
    let id = match create_on(s.dev, ptr::from_ref(&l.main) as usize) {
        Ok(id) => id,
        Err(e) => {
            // SAFETY: from `new_lifecycle`, and no cm_id knows it.
            drop(unsafe { KBox::from_raw(lc) });
            return Err(e);
        }
    };
    l.main.id.store(id, SeqCst);
    inc(&s.c.cm_ids);
    // The provider's reference for its requests, as siw_create_listen
    // takes one: a request may come after the ULP's destroy (here, or
    // after a handler's), and is then refused.
    // SAFETY: `id` is live and iw_cm's `add_ref` is set.
    unsafe { ((*id).add_ref.unwrap())(id) };
    // SAFETY: `id` is live and the worker's.
    let r = unsafe { bindings::iw_cm_listen(id, backlog) };
    if r != 0 {
        api_err(s, "listen", r);
        provider_release(id);
        destroy_outside(w, &l.main, false)?;
        grave.bury(lc);
        return Ok(());
    }
    let mut reqs = Script::EMPTY;
    for _ in 0..nreq {
        reqs.push(OP_REQ);
    }
    if racing && hand_off(s, w.idx, id, reqs) {
        w.drain();
        for _ in 0..spin {
            core::hint::spin_loop();
        }
        destroy_outside(w, &l.main, false)?;
    } else {
        let mut taken = 0;
        for k in 0..=nreq {
            if k == early {
                destroy_outside(w, &l.main, false)?;
            }
            if k < nreq && play_op(s, id, OP_REQ) == 0 {
                taken += 1;
            }
        }
        provider_release(id);
        // Every request taken is delivered, unless the listener is
        // destroyed first (then nothing more is).
        w.wait_until("CONNECT_REQUEST deliveries", || {
            l.kids_done.load(SeqCst) == taken
                || (l.main.destroyed.load(SeqCst)
                    && l.kids_done.load(SeqCst) == l.nkids.load(SeqCst))
        })?;
    }
    if listener_first && !l.main.claimed.load(SeqCst) {
        destroy_outside(w, &l.main, false)?;
    }
    // No handler is left running on the children's requests.
    w.wait_until("CONNECT_REQUEST handlers", || {
        l.kids_done.load(SeqCst) == l.nkids.load(SeqCst)
    })?;
    let nkids = l.nkids.load(SeqCst).min(MAX_KIDS);
    for (kid, kd) in l.kids.iter().zip(draws.iter()).take(nkids) {
        kid_ulp(s, w, kid, *kd)?;
        check_heard(s, kid, false, true);
    }
    destroy_outside(w, &l.main, false)?;
    check_heard(s, &l.main, true, false);
    grave.bury(lc);
    Ok(())
}

/// The worker's part on a child after its CONNECT_REQUEST handler.
pub(super) fn kid_ulp(s: &Stress, w: &Worker, kid: &Ctx, kd: KidDraw) -> Result {
    let id = kid.id.load(SeqCst);
    match kid.plan.req {
        // No provider event comes before an accept, so no handler
        // claims the child before the worker accepted it.
        KID_LEAVE if kd.action <= 3 => {
            let r = accept(id);
            if r != 0 {
                api_err(s, "accept", r);
                return destroy_outside(w, kid, false);
            }
            kid.accepted.store(true, SeqCst);
            if kd.racing && hand_off(s, w.idx, id, kid.plan.script) {
                ulp_racing(s, w, kid, kd.drive)
            } else {
                drive(s, w, kid, &kid.plan.script, kd.drive, true)
            }
        }
        KID_LEAVE if kd.action <= 6 => {
            // SAFETY: the child is the worker's and live.
            let r = unsafe { bindings::iw_cm_reject(id, ptr::null(), 0) };
            if r != 0 {
                api_err(s, "reject", r);
            }
            destroy_outside(w, kid, false)
        }
        // Accepted in the handler: the provider plays elsewhere.
        KID_ACCEPT if kid.accepted.load(SeqCst) => ulp_racing(s, w, kid, kd.drive),
        _ => destroy_outside(w, kid, false),
    }
}

/// One stress thread: its lifecycles, then the jobs handed to it until
/// no worker can hand over more.
///
/// # Safety
///
/// `data` is a `Worker` of a running stress, which outlives the thread.
pub(super) unsafe extern "C" fn stress_thread(data: *mut c_void) -> c_int {
    // SAFETY: guaranteed by the caller (`stress_run` joins every thread
    // before it frees the workers).
    let w = unsafe { &*data.cast::<Worker>() };
    match worker_main(w) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

pub(super) fn worker_main(w: &Worker) -> Result {
    let s = w.stress();
    let mut rng = Rng::new(s.seed, w.idx as u64);
    let mut grave = Grave {
        slots: KVec::new(),
        next: 0,
    };
    let mut r = Ok(());
    for _ in 0..w.quota {
        if s.abort.load(SeqCst) {
            break;
        }
        r = if rng.chance(11, 20) {
            active_lifecycle(s, w, &mut rng, &mut grave)
        } else {
            listener_lifecycle(s, w, &mut rng, &mut grave)
        };
        if r.is_err() {
            // The failed lifecycle is not buried: a handler may still
            // use it (leaked rather than freed under it).
            s.abort.store(true, SeqCst);
            break;
        }
        s.done.fetch_add(1, SeqCst);
        w.drain();
    }
    s.decisions
        .fetch_xor(splitmix64(rng.digest ^ w.idx as u64), SeqCst);
    s.producers_done.fetch_add(1, SeqCst);
    // The jobs handed to this worker hold provider references.
    while s.producers_done.load(SeqCst) < s.workers.len() {
        if w.drain() == 0 {
            fsleep(Delta::from_micros(100));
        }
    }
    w.drain();
    r
}

/// What one run did.
pub(super) struct Report {
    workers: usize,
    failed_workers: usize,
    done: usize,
    ms: i64,
}

/// The stress stops starting lifecycles after this long, short of
/// KUnit's default case timeout (300 s); the case then fails.
pub(super) const STRESS_BUDGET_MS: i64 = 270_000;

/// Runs `total` lifecycles on the fake device `dev`, one worker per
/// online CPU (at least 2), each bound to its CPU.
pub(super) fn stress_run(s: &Stress, total: usize) -> Result<Report> {
    let n = s.workers.len();
    let start = Instant::<Monotonic>::now();
    let mut threads = KVec::with_capacity(n, GFP_KERNEL)?;
    for w in s.workers.iter() {
        let data = ptr::from_ref::<Worker>(&**w).cast_mut().cast();
        // SAFETY: `stress_thread` gets a worker of `s`, which outlives
        // the thread: every thread is joined below.
        let t = unsafe { iwcm_c_kthread_start(stress_thread, data, w.idx as u32) };
        if t.is_null() {
            pr_err!("concurrency stress: cannot start worker {}\n", w.idx);
            break;
        }
        // Cannot fail: the capacity is reserved.
        threads.push(t, GFP_KERNEL)?;
    }
    let started = threads.len();
    if started < n {
        // The workers not started hand over nothing.
        s.abort.store(true, SeqCst);
        s.producers_done.fetch_add(n - started, SeqCst);
    }
    // While lifecycles finish, the KUnit runner's wait for this case
    // (insmod, in D state) is no hang: keep the 30 s hung-task
    // detector off it.  Once they stop, it reports blocked tasks.
    let mut last = 0;
    let mut idle = 0;
    for &t in threads.iter() {
        // SAFETY: `t` is a started thread, not yet joined.
        while !unsafe { iwcm_c_kthread_wait(t, 1000) } {
            let done = s.done.load(SeqCst);
            if start.elapsed().as_millis() > STRESS_BUDGET_MS && !s.abort.swap(true, SeqCst) {
                // Stop before KUnit's timeout, which would kill this
                // case's thread with the workers still running: the
                // case fails with the count reached.
                pr_err!(
                    "concurrency stress: out of time after {} s: {} of {} lifecycles\n",
                    STRESS_BUDGET_MS / 1000,
                    done,
                    total
                );
            }
            if done != last {
                last = done;
                idle = 0;
                // SAFETY: no arguments; any process context.
                unsafe { iwcm_c_hung_task_reset() };
            } else {
                idle += 1;
                if idle == 20 {
                    pr_err!(
                        "concurrency stress: no lifecycle finished for 20 s ({} of {})\n",
                        done,
                        total
                    );
                }
            }
        }
    }
    let mut failed_workers = n - started;
    for &t in threads.iter() {
        // SAFETY: `t` is a started thread whose function returned; joined once.
        if unsafe { iwcm_c_kthread_join(t) } != 0 {
            failed_workers += 1;
        }
    }
    let ms = start.elapsed().as_millis();
    // Jobs for workers that never started (none otherwise).
    for w in s.workers.iter() {
        w.drain();
    }
    Ok(Report {
        workers: n,
        failed_workers,
        done: s.done.load(SeqCst),
        ms,
    })
}

/// Allocates a run of `total` lifecycles on `dev`.
pub(super) fn stress_new(
    seed: u64,
    dev: *mut bindings::ib_device,
    total: usize,
) -> Result<*mut Stress> {
    // SAFETY: reads the number of online CPUs.
    let n = (unsafe { iwcm_c_nr_online_cpus() } as usize).max(2);
    let sp = KBox::into_raw(KBox::new(
        Stress {
            seed,
            dev,
            workers: KVec::new(),
            done: AtomicUsize::new(0),
            producers_done: AtomicUsize::new(0),
            decisions: AtomicU64::new(0),
            abort: AtomicBool::new(false),
            c: Counters::default(),
        },
        GFP_KERNEL,
    )?);
    for i in 0..n {
        let quota = total / n + usize::from(i < total % n);
        let r = KBox::pin_init(Worker::new(i, quota, sp), GFP_KERNEL).and_then(|w| {
            // SAFETY: `sp` is new; no worker runs yet.
            unsafe { (*sp).workers.push(w, GFP_KERNEL) }.map_err(Into::into)
        });
        if let Err(e) = r {
            // SAFETY: `sp` came from `KBox::into_raw` above; unused.
            drop(unsafe { KBox::from_raw(sp) });
            return Err(e);
        }
    }
    Ok(sp)
}

/// Threads on every CPU drive random cm_id lifecycles through the fake
/// provider (see stress_model.rs).  `iw_cm_kunit.stress_seed`
/// replays a printed seed, `iw_cm_kunit.stress_lifecycles` sets the
/// count (default 0: skipped, with an info line; make check asks for 75000).
pub(super) fn concurrency_stress() -> Result {
    // SAFETY: reads module parameters.
    let (seed, total) = unsafe { (iwcm_c_stress_seed(), iwcm_c_stress_lifecycles()) };
    let total = total as usize;
    if total == 0 {
        // KUnit's Rust tests cannot report a skip in 7.3: say it here;
        // kunit.sh fails when the stress was wanted and did not run.
        pr_info!("concurrency stress: skipped (iw_cm_kunit.stress_lifecycles=0)\n");
        return Ok(());
    }
    reset();
    STRESS_REPORTS.store(0, SeqCst);
    let base = iface::live();
    let faults = iface::provider_faults();
    let mut dev = FakeDev::new()?;
    let sp = stress_new(seed, dev.raw(), total)?;
    // SAFETY: freed below, after every worker was joined.
    let s = unsafe { &*sp };
    pr_info!(
        "concurrency stress: seed {:#x} (replay: iw_cm_kunit.stress_seed={:#x}), {} lifecycles on {} workers\n",
        seed,
        seed,
        total,
        s.workers.len()
    );
    expect_faults(true);
    let r = stress_run(s, total);
    expect_no_faults();
    let live_ok = wait_live(base);
    let qp_refs = QP_REFS.load(SeqCst);
    let given_back = (ACCEPTS.load(SeqCst) + REJECTS.load(SeqCst)) as usize;
    let c = &s.c;
    let ld = |a: &AtomicUsize| a.load(SeqCst);
    let taken = ld(&c.req_taken);
    let rep = match r {
        Ok(rep) => rep,
        Err(e) => {
            // SAFETY: no worker was started.
            drop(unsafe { KBox::from_raw(sp) });
            return Err(e);
        }
    };
    let bad = usize::from(rep.done != total)
        + rep.failed_workers
        + ld(&c.late)
        + ld(&c.overlap)
        + ld(&c.illegal)
        + ld(&c.api_err)
        + usize::from(!live_ok)
        + usize::from(qp_refs != 0)
        + usize::from(taken != given_back);
    pr_info!(
        "concurrency stress: {} lifecycles ({} cm_ids) on {} CPUs in {} ms, decisions {:#x}: {} upcalls ({} refused), {} events heard, {} provider faults, {} destroys, {} non-zero returns and {} disconnects in handlers, {} jobs handed over ({} racing releases); {} late, {} overlapping, {} illegal sequences, {} API errors, {} requests taken and {} given back, live cm_ids {} (before {}), QP refs {}, {} failed workers: {} bad\n",
        rep.done,
        ld(&c.cm_ids),
        rep.workers,
        rep.ms,
        s.decisions.load(SeqCst),
        ld(&c.upcalls),
        ld(&c.refused),
        ld(&c.heard),
        iface::provider_faults() - faults,
        ld(&c.handler_destroys),
        ld(&c.handler_fails),
        ld(&c.handler_disconnects),
        ld(&c.handoffs),
        ld(&c.racing_releases),
        ld(&c.late),
        ld(&c.overlap),
        ld(&c.illegal),
        ld(&c.api_err),
        taken,
        given_back,
        iface::live(),
        base,
        qp_refs,
        rep.failed_workers,
        bad
    );
    let late = ld(&c.late);
    let overlap = ld(&c.overlap);
    let illegal = ld(&c.illegal);
    let api = ld(&c.api_err);
    if live_ok {
        // SAFETY: every worker was joined and every cm_id is gone:
        // nothing uses `sp` any more.
        drop(unsafe { KBox::from_raw(sp) });
        drop(dev);
    } else {
        // Cm_ids are left whose handlers and provider would use the
        // workers and the device: leaked, not freed under them.
        core::mem::forget(dev);
    }
    // (A failed assertion ends this thread without running
    // destructors: everything is released above.)
    assert_eq!(rep.done, total);
    assert_eq!(rep.failed_workers, 0);
    assert_eq!(late, 0);
    assert_eq!(overlap, 0);
    assert_eq!(illegal, 0);
    assert_eq!(api, 0);
    assert_eq!(taken, given_back);
    assert!(live_ok);
    assert_eq!(qp_refs, 0);
    Ok(())
}
