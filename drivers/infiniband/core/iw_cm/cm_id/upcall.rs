// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The provider's calls into a cm_id: `event_handler`, `add_ref` and
//! `rem_ref` (iwcm.c's `cm_event_handler`, `add_ref`, `rem_ref`), and the
//! checks that treat every field of a provider event as untrusted input.
//! Their C entry points are in `c_entry.rs`, which passes the cm_id and the
//! event here as typed values (`None` for a null pointer).

use super::*;

/// The kinds of event-content fault ([`Faults`] bits) already warned about.
static CONTENT_FAULTS_WARNED: Atomic<u32> = Atomic::new(0);

/// Marks the kinds of fault in `f` as warned about; returns whether one of
/// them was not yet (`fetch_or`, which `kernel::sync::atomic` lacks).
fn first_warning(f: Faults) -> bool {
    let bits = u32::from(f.bits());
    let mut old = CONTENT_FAULTS_WARNED.load(Relaxed);
    while old & bits != bits {
        match CONTENT_FAULTS_WARNED.cmpxchg(old, old | bits, Relaxed) {
            Ok(_) => return true,
            Err(now) => old = now,
        }
    }
    false
}

/// The event type of a raw `iw_cm_event`, `None` for an unknown one.
pub(super) fn kind_of(event: u32) -> Option<Kind> {
    Some(match EventType::from_raw(event)? {
        EventType::ConnectRequest => Kind::ConnectRequest,
        EventType::ConnectReply => Kind::ConnectReply,
        EventType::Established => Kind::Established,
        EventType::Disconnect => Kind::Disconnect,
        EventType::Close => Kind::Close,
    })
}

/// Reports the faults `f` found in a provider event of type `event` with
/// `status` (the provider's values, before correction): counted, and
/// logged with a warning line the first time each kind of fault is seen,
/// without a WARN() backtrace: a peer on the wire can shape these fields
/// through a buggy provider (siw passes on the MPA reply's IRD/ORD and
/// private data), and a WARN would let it panic a `panic_on_warn` machine.
pub(super) fn report_event_faults(this: &CmId, src: &RawCmEvent, f: Faults, refused: bool) {
    let (event, status, pdata_len) = (src.event, src.status, src.private_data_len);
    if f.is_empty() {
        return;
    }
    PROVIDER_FAULTS.add(1, Relaxed);
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
    match fault_log(Some(&this.dev_info)) {
        FaultLog::Info => say!(pr_info),
        FaultLog::Silent => {}
        FaultLog::Warn => {
            if first_warning(f) {
                say!(pr_warn);
            }
        }
    }
}

/// The fields of provider event `src` (of type `kind`) that
/// [`event_check::check`] judges.
fn fields_of(src: &RawCmEvent, kind: Kind) -> event_check::Fields {
    event_check::Fields {
        kind,
        status: src.status,
        pdata_addr: src.private_data as usize,
        pdata_len: src.private_data_len.into(),
        ird: src.ird,
        ord: src.ord,
        local_family: sockaddr::family(&src.local_addr) as u16,
        remote_family: sockaddr::family(&src.remote_addr) as u16,
        provider_data: !src.provider_data.is_null(),
    }
}

/// Judges and copies one provider event in the upcall: the checked values
/// and the copied private data, or the errno the upcall returns.
pub(super) fn check_and_copy(this: &CmId, src: &RawCmEvent) -> Result<(Checked, KVec<u8>)> {
    let Some(kind) = kind_of(src.event) else {
        report_event_faults(this, src, Faults::UNKNOWN_EVENT, true);
        return Err(EINVAL);
    };
    let fields = fields_of(src, kind);
    let lim = event_check::Limits {
        max_rd_atom: this.dev_info.max_rd_atom,
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
        // A request's, as its child cm_id (a flood's); others GFP_ATOMIC.
        let gfp = if kind == Kind::ConnectRequest {
            request_gfp()
        } else {
            GFP_ATOMIC
        };
        pdata.reserve(len, gfp)?;
        if c_helpers::copy_nofault(&mut pdata, src.private_data.cast_const(), len).is_err() {
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

/// The provider's upcall (`cm_id->event_handler`, `c_entry.rs`): check the
/// event `src` of cm_id `this` (`None` for a null pointer), copy it and
/// queue it for in-order delivery on this cm_id's work item.
///
/// Context: process or softirq (siw calls it from its `sk_data_ready`
/// callback), with or without the provider's spinlocks held; not hard
/// interrupt context (the cm_id lock is a `spinlock_t`, as in iwcm.c).
/// Never sleeps, allocates only atomically: a CONNECT_REQUEST's private
/// data and child cm_id with GFP_NOWAIT (no reserves, see
/// [`request_gfp`]), other events' private data with GFP_ATOMIC.
///
/// Every field of the event is untrusted (see [`event_check`]): the
/// private data is copied only when its status allows it, with a
/// length within the MPA limit, from a pointer that is readable
/// (`copy_from_kernel_nofault`); malformed fields are provider faults,
/// warned once and corrected or dropped.
///
/// Returns `Ok` (0); -ENOMEM when the cm_id's preallocated event slots are full,
/// or the private data or a CONNECT_REQUEST's child cm_id cannot be
/// allocated (as iwcm.c for a full work pool: the provider then rejects or
/// drops the connection); -EINVAL for a provider fault that
/// leaves nothing to deliver: a null pointer, an unknown event type, a
/// malformed CONNECT_REQUEST (the provider keeps and releases its
/// connection object), or an event on a cm_id that never listened,
/// connected or accepted (where iwcm.c reaches `BUG()`), with a warning;
/// -ECONNABORTED for a CONNECT_REQUEST on a listener being destroyed (the
/// provider releases the request, as for -ENOMEM).
pub(crate) fn event_upcall(this: Option<ArcBorrow<'_, CmId>>, src: Option<&RawCmEvent>) -> Result {
    let (Some(this), Some(src)) = (this, src) else {
        provider_fault!(None, "event upcall with a null pointer\n");
        return Err(EINVAL);
    };
    let is_request = kind_of(src.event) == Some(Kind::ConnectRequest);
    if is_request {
        admit_request(&this)?;
    }
    let (checked, pdata) = check_and_copy(&this, src)?;
    // A request's child cm_id, before the lock: with it the request can be
    // delivered, or rejected if it never is.  Without memory for it the
    // request is refused now (the provider drops the connection), as when
    // the listener's slots are full.
    let child = if is_request {
        let (handler, context) = this.raw.handler_context();
        Some(CmId::new_child(&this, handler, context).map_err(|_| ENOMEM)?)
    } else {
        None
    };
    // Unless queued, `ev` is freed when the upcall returns, after the unlock.
    let mut ev = Some(Event::new(src, pdata, checked, child));
    let (queued, qp) = queue_event(&this, &mut ev, src, is_request);
    // iw_cm's QP reference, when this is a CLOSE: after the unlock.
    drop(qp);
    match queued {
        Queued::Yes => {
            CmId::kick(this);
            Ok(())
        }
        Queued::Dropped => Ok(()),
        Queued::Refused => Err(ECONNABORTED),
        Queued::Full => Err(ENOMEM),
        Queued::NoSlots => {
            // Slots are reserved by listen, connect and accept: a cm_id
            // without any never gave the provider a reason to call it.
            provider_fault!(
                Some(&this.dev_info),
                "provider event {} on a cm_id that is not connecting, accepting or listening\n",
                src.event
            );
            Err(EINVAL)
        }
    }
}

/// Refuses a CONNECT_REQUEST that would be refused when queued anyway
/// (the listener is being destroyed, or its backlog's slots are all
/// taken) before anything is copied or allocated for it (its private
/// data, its child cm_id), which a connect flood on a full backlog would
/// otherwise cost for each refused connection.  The state and the ring can
/// change once the lock is dropped: [`queue_event`] decides.  Any context.
fn admit_request(this: &CmId) -> Result {
    let g = this.inner.lock();
    if g.state == State::Destroying {
        return Err(ECONNABORTED);
    }
    if g.events.is_full() {
        return Err(ENOMEM);
    }
    Ok(())
}

/// What became of an event the upcall tried to queue ([`queue_event`]),
/// which tells the upcall what to return.
enum Queued {
    /// In the ring: the upcall kicks the work item and returns 0.
    Yes,
    /// Not a request, on a cm_id being destroyed: dropped, as iwcm.c's
    /// IWCM_F_DROP_EVENTS does; 0.
    Dropped,
    /// A request the listener will never deliver (it is being destroyed):
    /// -ECONNABORTED, so that the provider releases it (siw_proc_mpareq
    /// drops its reference and the connection).
    Refused,
    /// The ring is full: -ENOMEM (the provider rejects or drops).
    Full,
    /// The cm_id has no event slots: a provider fault, -EINVAL.
    NoSlots,
}

/// Moves `*ev` (`src`'s copy; `is_request` for a CONNECT_REQUEST) into
/// this cm_id's ring, under its lock.  Unless it was queued, `*ev` is left
/// for the caller to free after the unlock.
///
/// A CLOSE, once queued, also takes iw_cm's QP reference out, returned for
/// the caller to drop after the unlock: the provider is done with the QP once it
/// reports CLOSE, and the ULP may destroy its QP before this id's earlier
/// events are delivered -- smbdirect's cleanup destroys it under the id's
/// rdma_cm handler_mutex, for which the delivery of the id's ESTABLISHED
/// waits, and `siw_destroy_qp` waits for every QP reference: had the
/// reference waited for the CLOSE's delivery, behind that ESTABLISHED,
/// the three would wait for each other for good (a peer that asks for an
/// RTR frame and half-closes made ksmbd's removal hang so).  Every
/// transition a CLOSE takes where the QP may be held releases it
/// (state.rs), so the delivery then finds none.  Any context.
fn queue_event(
    this: &CmId,
    ev: &mut Option<Event>,
    src: &RawCmEvent,
    is_request: bool,
) -> (Queued, Option<QpRef>) {
    let mut g = this.inner.lock();
    let queued = if g.state == State::Destroying {
        if is_request {
            Queued::Refused
        } else {
            Queued::Dropped
        }
    } else if g.events.push(ev) {
        g.queued += 1;
        trace::iw_cm_event_queued(this.table_id.into(), src.event as i32, src.status);
        Queued::Yes
    } else if g.events.slots.is_empty() {
        Queued::NoSlots
    } else {
        Queued::Full
    };
    // Only a CLOSE that will be delivered: a refused one leaves the QP
    // with the id, where the bound on an aborted accept's CLOSE
    // (abort.rs) still sees that no CLOSE came.
    let qp = if matches!(queued, Queued::Yes) && kind_of(src.event) == Some(Kind::Close) {
        g.take_qp(Actions::RELEASE_QP)
    } else {
        None
    };
    (queued, qp)
}

/// `cm_id->add_ref` (`c_entry.rs`): the provider takes a reference on
/// `this` (`None` for a null pointer, a provider fault).  Returns the
/// reference, which the provider holds (as its pointer) until its
/// `rem_ref`.  Any context.
pub(crate) fn add_ref(this: Option<ArcBorrow<'_, CmId>>) -> Option<Arc<CmId>> {
    let Some(this) = this else {
        provider_fault!(None, "add_ref on a null cm_id\n");
        return None;
    };
    this.provider_refs.add(1, Relaxed);
    Some(this.into())
}

/// `cm_id->rem_ref` (`c_entry.rs`): the provider gives back a reference on
/// `this` (`None` for a null pointer, a provider fault).  Returns whether
/// it held one, which its C entry point then drops (that may free the
/// cm_id).  A `rem_ref` beyond the provider's `add_ref`s is a provider
/// fault, warned once and ignored: it would otherwise drop the ULP's (or
/// a queued event's) reference and free the cm_id under them.  Any
/// context.
pub(crate) fn rem_ref(this: Option<ArcBorrow<'_, CmId>>) -> bool {
    let Some(this) = this else {
        provider_fault!(None, "rem_ref on a null cm_id\n");
        return false;
    };
    // The count is a best-effort guard against a provider that breaks the
    // contract while another reference (the ULP's, a queued event's) still
    // keeps the cm_id alive; after the last one it cannot help.
    if !put_provider_ref(&this) {
        provider_fault!(
            Some(&this.dev_info),
            "rem_ref without a matching add_ref: ignored\n"
        );
        return false;
    }
    true
}

/// Takes one of the provider's references off `this.provider_refs`;
/// returns false, changing nothing, when it holds none (a decrement that
/// stops at zero: `fetch_update`, which `kernel::sync::atomic` lacks).
/// Any context.
fn put_provider_ref(this: &CmId) -> bool {
    let mut n = this.provider_refs.load(Acquire);
    while let Some(less) = n.checked_sub(1) {
        match this.provider_refs.cmpxchg(n, less, Full) {
            Ok(_) => return true,
            Err(now) => n = now,
        }
    }
    false
}
