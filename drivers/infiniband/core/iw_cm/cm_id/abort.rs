// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The bound on the provider's CLOSE after the ULP disconnected an
//! accepted cm_id before ESTABLISHED (Documentation/iw_cm.rst, "Teardown
//! never waits for the network").
//!
//! The disconnect moved the QP to ERR, on which siw, iw_cxgb4 and irdma
//! report CLOSE at once.  A provider that reports nothing would leave the
//! id in Closing with iw_cm's QP reference, and a ULP that waits for its
//! DISCONNECTED before it destroys the QP would wait with it; iwcm.c has
//! no such state (it waits for ESTABLISHED in `iw_cm_disconnect`).  So the
//! disconnect arms an [`AbortBound`]: after [`ABORT_CLOSE_BOUND_MS`] iw_cm
//! queues a CLOSE of its own, which drops the QP reference and reaches the
//! ULP as C's would.

use super::*;
use kernel::new_spinlock;
use kernel::sync::SpinLock;
use kernel::time::msecs_to_jiffies;
use kernel::workqueue::{impl_has_delayed_work, new_delayed_work, DelayedWork};

/// How long an accepted cm_id that its ULP disconnected before
/// ESTABLISHED waits for the provider's CLOSE before iw_cm delivers one
/// of its own (status -ETIMEDOUT), in milliseconds: twice siw's 5 s MPA
/// reply timer.
pub(super) const ABORT_CLOSE_BOUND_MS: u32 = 10_000;

/// What the bound found when it expired ([`CmId::queue_own_close`]).
pub(super) enum BoundVerdict {
    /// iw_cm's own CLOSE is queued: kick the delivery.
    Closed,
    /// Events are in flight (the provider's CLOSE may be among them): wait
    /// one bound more.
    Again,
    /// The id moved on (its CLOSE came, or it was destroyed): nothing to do.
    Done,
}

/// One armed bound: a delayed work item on the delivery queue that holds
/// the cm_id until it fires or the id has left Closing, whichever comes
/// first (the id lets go of it then, [`AbortBound::forget`]), so that the
/// bound never keeps a cm_id alive past its own use.  It holds the module
/// while it exists: its work item runs this module's code, and the
/// module's exit destroys the queue it waits on.
#[pin_data]
pub(super) struct AbortBound {
    /// The cm_id, until the bound has done with it.  Taken in process
    /// context only.
    #[pin]
    id: SpinLock<Option<Arc<CmId>>>,
    #[pin]
    work: DelayedWork<AbortBound>,
    _module: ModulePin,
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self> for AbortBound { self.work }
}

impl WorkItem for AbortBound {
    type Pointer = Arc<AbortBound>;

    fn run(this: Arc<AbortBound>) {
        let id = this.id.lock().clone();
        let Some(id) = id else {
            return;
        };
        match id.queue_own_close() {
            BoundVerdict::Closed => {
                pr_info!(
                    "cm_id {}: no CLOSE from the provider {} ms after a disconnect before ESTABLISHED: closed by iw_cm\n",
                    id.table_id,
                    ABORT_CLOSE_BOUND_MS
                );
                CmId::kick(id.as_arc_borrow());
                this.forget();
            }
            BoundVerdict::Again => {
                let _ = crate::c_helpers::delivery_queue()
                    .enqueue_delayed(this, msecs_to_jiffies(ABORT_CLOSE_BOUND_MS));
            }
            BoundVerdict::Done => this.forget(),
        }
        // `id`, a reference of the bound's, may be the cm_id's last: this
        // is process context.
    }
}

impl AbortBound {
    /// Arms a bound on `id`'s CLOSE, [`ABORT_CLOSE_BOUND_MS`] from now.
    /// `ENOMEM`, or `ENODEV` while the module is being unloaded.  May
    /// sleep (GFP_KERNEL).
    pub(super) fn arm(id: Arc<CmId>) -> Result<Arc<Self>> {
        let module = ModulePin::get()?;
        let bound = Arc::pin_init(
            pin_init!(Self {
                id <- new_spinlock!(Some(id), "AbortBound::id"),
                work <- new_delayed_work!("AbortBound::work"),
                _module: module,
            }),
            GFP_KERNEL,
        )?;
        // `Err` is not possible: the work item is new.
        let _ = crate::c_helpers::delivery_queue()
            .enqueue_delayed(bound.clone(), msecs_to_jiffies(ABORT_CLOSE_BOUND_MS));
        Ok(bound)
    }

    /// The bound has done with its cm_id (it has left Closing): lets go of
    /// it now rather than when the work item fires.  Process context (the
    /// reference may be the cm_id's last).
    pub(super) fn forget(&self) {
        let id = self.id.lock().take();
        drop(id);
    }
}
