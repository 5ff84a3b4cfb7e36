// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The concurrency stress, its population (`iw_cm_kunit.stress_peak=N`):
//! cm_ids the workers keep alive across many lifecycles, so that the
//! lifecycles run beside a table of `N` live ids, as on an adapter that
//! holds tens of thousands of connections.
//!
//! Each worker keeps its share of `N` in a [`Park`]: an idle cm_id, a
//! listener, or an active id connected (CONNECT_REPLY accepted) whose
//! provider still holds its reference.  Until its share is full a worker
//! parks one id per lifecycle; then, one lifecycle in eight, it parks a
//! new one and evicts a parked id drawn at random (a moment with one more
//! than its share): a disconnect, the provider's DISCONNECT and CLOSE, its
//! release and the destroy, in drawn order.  The draws are made before
//! the id exists, as the lifecycles' are, so a seed replays them.  The
//! workers empty their parks only once every worker has finished its
//! lifecycles; the highest live count any of them saw after a park is the
//! run's peak, which must reach `N`.

use super::{fake_provider::*, fake_ulp::*, stress::*, stress_model::*, stress_ulp::*};
use crate::bindings;
use crate::iface;
use core::ptr;
use core::sync::atomic::Ordering::SeqCst;
use kernel::prelude::*;

/// What a parked cm_id is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Created, nothing else.
    Idle,
    /// Listening (no request comes).
    Listener,
    /// Connected: its CONNECT_REPLY accepted, the provider's reference
    /// and iw_cm's QP reference held.
    Connected,
}

/// One parked cm_id and how its eviction goes, drawn at its park.
#[derive(Clone, Copy)]
struct Parked {
    lc: *mut Lifecycle,
    kind: Kind,
    /// The provider's last events (DISCONNECT, CLOSE) of a connected id.
    close: Script,
    /// The ULP disconnects first (abruptly or not).
    disconnect: Option<bool>,
    /// The ULP destroys before the provider's last events.
    destroy_first: bool,
}

impl Parked {
    /// The draws for a parked id, before it exists.
    fn draw(rng: &mut Rng) -> Self {
        let kind = match rng.below(4) {
            0 => Kind::Idle,
            1 => Kind::Listener,
            _ => Kind::Connected,
        };
        let mut close = Script::EMPTY;
        if rng.chance(1, 2) {
            close.push(OP_DISC);
        }
        if rng.chance(4, 5) {
            close.push(if rng.chance(1, 5) {
                OP_CLOSE_RESET
            } else {
                OP_CLOSE
            });
        }
        let disconnect = rng.chance(1, 3).then(|| rng.chance(1, 2));
        Parked {
            lc: ptr::null_mut(),
            kind,
            close,
            disconnect,
            destroy_first: rng.chance(1, 4),
        }
    }

    fn ctx(&self) -> &Ctx {
        // SAFETY: `lc` is from `new_lifecycle`, buried only after the
        // eviction that ends with this id destroyed.
        unsafe { &(*self.lc).main }
    }
}

/// The cm_ids one worker keeps alive.
pub(super) struct Park {
    slots: KVec<Parked>,
    /// This worker's share of the peak.
    share: usize,
}

// SAFETY: the lifecycles behind the slots are the worker's; their
// cm_ids may be used and destroyed from any thread.
unsafe impl Send for Park {}

impl Park {
    /// The park of a worker whose share of the peak is `share`; its
    /// slots are reserved now, so that parking never allocates.
    pub(super) fn new(share: usize) -> Result<Self> {
        let slots = if share == 0 {
            KVec::new()
        } else {
            KVec::with_capacity(share + 1, GFP_KERNEL)?
        };
        Ok(Park { slots, share })
    }

    /// The park of a worker with no share.
    pub(super) fn none() -> Self {
        Park {
            slots: KVec::new(),
            share: 0,
        }
    }

    /// After each lifecycle: parks one cm_id while the share is not full,
    /// then one lifecycle in eight parks one and evicts another.  No draw
    /// at all with no share: a run without `stress_peak` replays as
    /// before.
    pub(super) fn step(
        &mut self,
        s: &Stress,
        w: &Worker,
        rng: &mut Rng,
        grave: &mut Grave,
    ) -> Result {
        if self.share == 0 || (self.slots.len() >= self.share && !rng.chance(1, 8)) {
            return Ok(());
        }
        let p = Parked::draw(rng);
        self.park(s, w, p)?;
        s.saw_live(iface::live());
        if self.slots.len() > self.share {
            let (n, victim) = (self.slots.len(), rng.below(self.slots.len()));
            self.slots.swap(victim, n - 1);
            if let Some(old) = self.slots.pop() {
                evict(s, w, old)?;
                grave.bury(old.lc);
            }
        }
        Ok(())
    }

    /// Creates the cm_id `p` says and parks it.
    fn park(&mut self, s: &Stress, w: &Worker, mut p: Parked) -> Result {
        let listener = p.kind == Kind::Listener;
        let lc = new_lifecycle(w, listener, Plan::NONE, [Plan::NONE; MAX_KIDS], 0)?;
        // SAFETY: freed only by the grave, after its id is gone.
        let l = unsafe { &*lc };
        let id = match create_on(s.dev(), ptr::from_ref(&l.main) as usize) {
            Ok(id) => id,
            Err(e) => {
                // SAFETY: from `new_lifecycle`, and no cm_id knows it.
                drop(unsafe { KBox::from_raw(lc) });
                return Err(e);
            }
        };
        l.main.id.store(id, SeqCst);
        inc(&s.c.cm_ids);
        inc(&s.c.parked);
        p.lc = lc;
        let r = match p.kind {
            Kind::Idle => 0,
            // SAFETY: `id` is live and the worker's.
            Kind::Listener => unsafe { bindings::iw_cm_listen(id, 1) },
            Kind::Connected => match connect(id) {
                0 => play_op(s, id, OP_REPLY_OK),
                r => {
                    // No provider reference to release: evicted as an
                    // idle id.
                    p.kind = Kind::Idle;
                    r
                }
            },
        };
        if r != 0 {
            api_err(s, "parking", r);
        }
        // Within the capacity reserved in `new`: never allocates.
        self.slots.push_within_capacity(p).map_err(|_| ENOMEM)
    }

    /// Evicts every parked cm_id (the worker's lifecycles are over).
    pub(super) fn empty(&mut self, s: &Stress, w: &Worker, grave: &mut Grave) -> Result {
        let mut r = Ok(());
        while let Some(p) = self.slots.pop() {
            let e = evict(s, w, p);
            if e.is_ok() {
                grave.bury(p.lc);
            } else {
                r = e;
            }
        }
        r
    }
}

/// Ends a parked cm_id's life as drawn, then checks what it heard.
fn evict(s: &Stress, w: &Worker, p: Parked) -> Result {
    let c = p.ctx();
    let id = c.id.load(SeqCst);
    // No handler of a parked id claims it (its plan is `NONE`).
    let mine = c.claim();
    if p.kind != Kind::Connected {
        destroy_outside(w, c, mine)?;
        check_heard(s, c, p.kind == Kind::Listener, false);
        inc(&s.c.evicted);
        return Ok(());
    }
    if let Some(abrupt) = p.disconnect {
        disconnect_outside(s, c, abrupt);
    }
    if p.destroy_first {
        destroy_outside(w, c, mine)?;
    }
    for &op in p.close.ops() {
        play_op(s, id, op);
    }
    provider_release(id);
    if !p.destroy_first {
        destroy_outside(w, c, mine)?;
    }
    check_heard(s, c, false, false);
    inc(&s.c.evicted);
    Ok(())
}
