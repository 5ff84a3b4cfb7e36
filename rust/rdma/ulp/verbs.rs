// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Verbs objects of a kernel ULP's queue: device, PD, CQ, QP, DMA buffer,
//! and posting work requests.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//!
//! Everything allocated on a [`Device`] must be freed before the rdma_cm id
//! that led to the device is destroyed: device removal
//! (`rdma link delete`, driver unload) proceeds once the last id is gone.
//! In order: [`Qp`] (drained first), [`Cq`] (then its handler and the
//! handler's [`DmaBuf`]), [`Pd`].
//!
//! # Completions
//!
//! A [`Cq`] owns a [`CompletionHandler`] and a fixed set of work request
//! slots, each with its `struct ib_cqe`.  Work requests are posted through a
//! [`Poster`] with a slot number and a range of the handler's [`DmaBuf`];
//! their completions reach [`CompletionHandler::done`] with that number, a
//! [`Completion`] (the `struct ib_wc`: status, opcode, length) and a
//! [`Poster`] for the same QP.  The types keep what the provider holds
//! alive: the slots and the buffer go only after the CQ, and a [`Qp`] is
//! drained before it is destroyed.  What stays with the ULP is who owns a
//! buffer range while a work request may use it ([`DmaBuf::write`],
//! [`DmaBuf::read`]).

use crate::bindings;
use core::{
    marker::{PhantomData, PhantomPinned},
    ptr::NonNull,
};
use kernel::{
    container_of,
    error::{from_err_ptr, to_result},
    prelude::*,
    types::Opaque,
};

/// A registered RDMA device (`struct ib_device`).
///
/// # Invariants
///
/// `ptr` points to a registered `struct ib_device` that stays registered
/// while this value is used (see the module documentation).
#[derive(Clone, Copy)]
pub(crate) struct Device {
    ptr: NonNull<bindings::ib_device>,
}

// SAFETY: `struct ib_device` is shared by the RDMA core between threads; the
// verbs used through it may be called from any process context.
unsafe impl Send for Device {}
// SAFETY: as for `Send`.
unsafe impl Sync for Device {}

impl Device {
    /// Wraps a device pointer; `None` for null.
    ///
    /// # Safety
    ///
    /// `ptr` is null or points to a registered `struct ib_device` that stays
    /// registered while the returned value (or a copy) is used.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::ib_device) -> Option<Self> {
        // INVARIANT: guaranteed by the caller.
        NonNull::new(ptr).map(|ptr| Self { ptr })
    }

    fn as_raw(self) -> *mut bindings::ib_device {
        self.ptr.as_ptr()
    }
}

/// A protection domain (`ib_alloc_pd`), deallocated on drop.
///
/// # Invariants
///
/// `ptr` is a PD allocated by `rdma_ulp_alloc_pd` and not yet deallocated.
pub(crate) struct Pd {
    ptr: NonNull<bindings::ib_pd>,
}

// SAFETY: a PD may be used and deallocated from any process context.
unsafe impl Send for Pd {}
// SAFETY: as for `Send`; `&Pd` only reads `local_dma_lkey`.
unsafe impl Sync for Pd {}

impl Pd {
    /// Allocates a PD on `dev`.
    pub(crate) fn alloc(dev: Device) -> Result<Self> {
        // SAFETY: `dev` is registered (type invariant).
        let pd = from_err_ptr(unsafe { bindings::rdma_ulp_alloc_pd(dev.as_raw()) })?;
        // INVARIANT: a PD just allocated.
        Ok(Self {
            ptr: NonNull::new(pd).ok_or(ENOMEM)?,
        })
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::ib_pd {
        self.ptr.as_ptr()
    }

    /// The lkey that covers all DMA-mapped kernel memory (`local_dma_lkey`).
    pub(crate) fn local_dma_lkey(&self) -> u32 {
        // SAFETY: the PD is alive (type invariant).
        unsafe { bindings::rdma_ulp_pd_local_dma_lkey(self.as_raw()) }
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: the PD is alive and deallocated once.
        unsafe { bindings::rdma_ulp_dealloc_pd(self.as_raw()) };
    }
}

/// A completion queue polled from a workqueue (`IB_POLL_WORKQUEUE`) and the
/// completion entries (`struct ib_cqe`) of the work requests posted to it.
///
/// The CQ owns its [`CompletionHandler`] `C` and one entry per work request
/// slot (`0..nr_wrs`); a work request posted with slot `i`
/// ([`Poster::post_send`], [`Poster::post_recv`]) calls
/// [`CompletionHandler::done`] with `i` when it completes.  The handlers run
/// in process context, one at a time per CQ, and may sleep.  Dropping the CQ
/// frees it first (`ib_free_cq` waits for a running poll; no handler runs
/// afterwards), then the handler and the entries: the entries and the DMA
/// buffer of the handler outlive every completion.
///
/// The CQ's QPs must be destroyed (and so drained, see [`Qp`]) before it.
///
/// # Invariants
///
/// `ptr` is a CQ allocated by `rdma_ulp_alloc_cq` and not yet freed; every
/// work request posted to a QP of this CQ with one of `comps`' entries was
/// posted through a [`Poster`] of this CQ.
pub(crate) struct Cq<C: CompletionHandler> {
    ptr: NonNull<bindings::ib_cq>,
    comps: Pin<KBox<Completions<C>>>,
}

// SAFETY: a CQ may be used and freed from any process context; the handler
// is `Send + Sync`; the entries are written only before the CQ is shared.
unsafe impl<C: CompletionHandler> Send for Cq<C> {}
// SAFETY: `&Cq` hands out the handler (`Sync`) and posters, and `ib_post_*`
// lock internally in the drivers.
unsafe impl<C: CompletionHandler> Sync for Cq<C> {}

impl<C: CompletionHandler> Cq<C> {
    /// Allocates a CQ of `nr_cqe` entries on `dev`, with `handler` and
    /// `nr_wrs` work request slots.  Sleeps.
    pub(crate) fn alloc(
        dev: Device,
        nr_cqe: u32,
        comp_vector: u32,
        handler: C,
        nr_wrs: usize,
    ) -> Result<Self> {
        let nr = i32::try_from(nr_cqe).map_err(|_| EINVAL)?;
        let vec = i32::try_from(comp_vector).map_err(|_| EINVAL)?;
        let comps = KBox::pin_init(
            try_pin_init!(&this in Completions {
                handler,
                // INVARIANT: `this` is the `Completions` the entries go into;
                // pinned, and `cqes` is never resized.
                cqes: WrCqe::new_all(this.as_ptr(), nr_wrs)?,
                _pin: PhantomPinned,
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: `dev` is registered (type invariant of `Device`).
        let cq = from_err_ptr(unsafe {
            bindings::rdma_ulp_alloc_cq(dev.as_raw(), core::ptr::null_mut(), nr, vec)
        })?;
        // INVARIANT: a CQ just allocated; nothing posted yet.
        Ok(Self {
            ptr: NonNull::new(cq).ok_or(ENOMEM)?,
            comps,
        })
    }

    fn as_raw(&self) -> *mut bindings::ib_cq {
        self.ptr.as_ptr()
    }

    /// The completion handler.
    pub(crate) fn handler(&self) -> &C {
        &self.comps.handler
    }

    /// Init attributes of an RC QP whose send and receive completions go to
    /// this CQ; every send is signaled.
    pub(crate) fn rc_qp_attr(&self, send_wr: u32, recv_wr: u32) -> QpInitAttr {
        QpInitAttr(bindings::ib_qp_init_attr {
            send_cq: self.as_raw(),
            recv_cq: self.as_raw(),
            cap: bindings::ib_qp_cap {
                max_send_wr: send_wr,
                max_recv_wr: recv_wr,
                max_send_sge: 1,
                max_recv_sge: 1,
                ..Default::default()
            },
            sq_sig_type: bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
            qp_type: bindings::ib_qp_type_IB_QPT_RC,
            ..Default::default()
        })
    }

    /// A poster of work requests on `qp`, whose send and receive CQ must be
    /// this one (`EINVAL` otherwise), outside completion handlers (which get
    /// theirs).
    pub(crate) fn poster<'a>(&'a self, qp: &'a Qp) -> Result<Poster<'a, C>> {
        // SAFETY: the QP is alive (type invariant of `Qp`); its CQ pointers
        // are set at creation and never written afterwards.
        let (send_cq, recv_cq) = unsafe { ((*qp.as_raw()).send_cq, (*qp.as_raw()).recv_cq) };
        if send_cq != self.as_raw() || recv_cq != self.as_raw() {
            return Err(EINVAL);
        }
        // INVARIANT: `qp` is alive for `'a` and its CQs are this CQ.
        Ok(Poster {
            comps: self.comps.as_ref().get_ref(),
            qp: qp.ptr,
            _qp: PhantomData,
        })
    }
}

impl<C: CompletionHandler> Drop for Cq<C> {
    fn drop(&mut self) {
        // SAFETY: the CQ is alive and freed once; its QPs are gone (they hold
        // the CQ, `Qp` must be dropped first).  `comps` is dropped after
        // this, when no handler can run any more.
        unsafe { bindings::ib_free_cq(self.as_raw()) };
    }
}

/// Init attributes of a QP ([`Cq::rc_qp_attr`], for
/// [`super::cm::CmIdRef::create_qp`]).
#[derive(Clone, Copy)]
pub(crate) struct QpInitAttr(bindings::ib_qp_init_attr);

impl QpInitAttr {
    /// A copy of the C attribute block (the create call writes to it).
    pub(super) fn to_raw(self) -> bindings::ib_qp_init_attr {
        self.0
    }
}

/// The status of a work completion (`enum ib_wc_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WcStatus {
    /// `IB_WC_SUCCESS`.
    Success,
    /// `IB_WC_WR_FLUSH_ERR`: flushed, the QP is in the error state (closed,
    /// or drained by `ib_drain_qp`).
    WrFlushErr,
    /// Any other status: its `enum ib_wc_status` value.
    Other(u32),
}

/// The opcode of a work completion (`enum ib_wc_opcode`); defined by the
/// verbs for successful completions only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WcOpcode {
    /// `IB_WC_SEND`.
    Send,
    /// `IB_WC_RDMA_WRITE`.
    RdmaWrite,
    /// `IB_WC_RDMA_READ`.
    RdmaRead,
    /// `IB_WC_RECV`.
    Recv,
    /// Any other opcode: its `enum ib_wc_opcode` value.
    Other(u32),
}

/// A work completion (`struct ib_wc`), valid while the handler it was
/// passed to runs.
pub(crate) struct Completion<'a> {
    wc: &'a bindings::ib_wc,
}

impl Completion<'_> {
    /// The completion status.
    pub(crate) fn status(&self) -> WcStatus {
        match self.wc.status {
            bindings::ib_wc_status_IB_WC_SUCCESS => WcStatus::Success,
            bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR => WcStatus::WrFlushErr,
            other => WcStatus::Other(other),
        }
    }

    /// The opcode (meaningful only if [`Completion::status`] is
    /// [`WcStatus::Success`]).
    #[expect(dead_code, reason = "the sample tells its completions apart by slot")]
    pub(crate) fn opcode(&self) -> WcOpcode {
        match self.wc.opcode {
            bindings::ib_wc_opcode_IB_WC_SEND => WcOpcode::Send,
            bindings::ib_wc_opcode_IB_WC_RDMA_WRITE => WcOpcode::RdmaWrite,
            bindings::ib_wc_opcode_IB_WC_RDMA_READ => WcOpcode::RdmaRead,
            bindings::ib_wc_opcode_IB_WC_RECV => WcOpcode::Recv,
            other => WcOpcode::Other(other),
        }
    }

    /// Bytes received (receive completions).
    pub(crate) fn byte_len(&self) -> u32 {
        self.wc.byte_len
    }
}

/// The completion handler of a [`Cq`].
pub(crate) trait CompletionHandler: Send + Sync + Sized {
    /// The DMA buffer that the work requests of this CQ's slots use: the
    /// ranges of [`Poster::post_send`] and [`Poster::post_recv`] are in it.
    fn dma_buf(&self) -> &DmaBuf;

    /// The work request posted with slot `wr` completed with `wc`; `post`
    /// posts more on the same QP.
    ///
    /// Runs on the CQ's workqueue, in process context, one at a time per
    /// CQ; may sleep (but delays the CQ's other completions).
    fn done(&self, wr: usize, wc: &Completion<'_>, post: &Poster<'_, Self>);
}

/// The handler and the work request slots of a [`Cq`] (pinned: the slots
/// point back to it).
#[pin_data]
struct Completions<C> {
    handler: C,
    cqes: KVec<WrCqe<C>>,
    #[pin]
    _pin: PhantomPinned,
}

/// The `struct ib_cqe` of one work request slot.
///
/// # Invariants
///
/// `owner` points to the [`Completions`] whose `cqes` hold this entry, and
/// `index` is its index there; `raw.done` is `done::<C>`.
struct WrCqe<C> {
    raw: Opaque<bindings::ib_cqe>,
    index: usize,
    owner: *const Completions<C>,
}

impl<C: CompletionHandler> WrCqe<C> {
    /// The entries `0..n` of `owner`.
    fn new_all(owner: *const Completions<C>, n: usize) -> Result<KVec<Self>> {
        let mut cqes = KVec::with_capacity(n, GFP_KERNEL)?;
        for index in 0..n {
            cqes.push(
                Self {
                    raw: Opaque::new(bindings::ib_cqe {
                        done: Some(done::<C>),
                    }),
                    index,
                    owner,
                },
                GFP_KERNEL,
            )?;
        }
        Ok(cqes)
    }
}

/// `ib_cqe.done` of every slot of a [`Cq<C>`]: dispatches to
/// [`CompletionHandler::done`].
///
/// # Safety
///
/// Called by the CQ's poller only, with a completion of a work request
/// posted through a [`Poster<C>`].
unsafe extern "C" fn done<C: CompletionHandler>(
    _cq: *mut bindings::ib_cq,
    wc: *mut bindings::ib_wc,
) {
    // SAFETY: the poller passes a completion valid during the call.
    let wc = unsafe { &*wc };
    // SAFETY: a `Poster` posts every work request with an entry's `ib_cqe`
    // in `wr_cqe`, the union member the provider returns.
    let raw = unsafe { wc.__bindgen_anon_1.wr_cqe }.cast::<Opaque<bindings::ib_cqe>>();
    // SAFETY: `raw` is the `raw` field of a `WrCqe<C>` of a live `Cq<C>`:
    // the entries are freed only after `ib_free_cq`, after which no
    // completion is handled.
    let entry = unsafe { &*container_of!(raw, WrCqe<C>, raw) };
    // SAFETY: `owner` holds the entry (type invariant of `WrCqe`), so it is
    // alive as long.
    let comps = unsafe { &*entry.owner };
    let Some(qp) = NonNull::new(wc.qp) else {
        kernel::warn_on!(true);
        return;
    };
    // INVARIANT: `wc->qp` is the QP the work request was posted on, whose
    // CQs are this CQ (checked by `Cq::poster`); it is alive while this
    // completion is handled (a `Qp` is drained before it is destroyed, and
    // the drain waits for the completions before its own).
    let post = Poster {
        comps,
        qp,
        _qp: PhantomData,
    };
    comps.handler.done(entry.index, &Completion { wc }, &post);
}

/// Posts work requests on one QP with the slots of its [`Cq`]: from
/// [`Cq::poster`], or passed to [`CompletionHandler::done`].
///
/// # Invariants
///
/// `qp` is alive for `'a` and its send and receive CQ is the CQ of `comps`.
pub(crate) struct Poster<'a, C> {
    comps: &'a Completions<C>,
    qp: NonNull<bindings::ib_qp>,
    _qp: PhantomData<&'a Qp>,
}

impl<C: CompletionHandler> Poster<'_, C> {
    fn wr(
        &self,
        wr: usize,
        off: usize,
        len: usize,
        lkey: u32,
    ) -> Result<(*mut bindings::ib_cqe, Sge)> {
        let cqe = self.comps.cqes.get(wr).ok_or(EINVAL)?;
        let sge = self.comps.handler.dma_buf().sge(off, len, lkey)?;
        Ok((cqe.raw.get(), sge))
    }

    /// Posts one signaled SEND of `len` bytes at `off` of the handler's
    /// [`DmaBuf`], with `lkey`; its completion calls the handler with `wr`.
    ///
    /// The device reads the range until the send completes: write it
    /// ([`DmaBuf::write`]) before, not during.  Does not sleep.
    pub(crate) fn post_send(&self, wr: usize, off: usize, len: usize, lkey: u32) -> Result {
        let (cqe, sge) = self.wr(wr, off, len, lkey)?;
        // SAFETY: the QP is alive and its CQ is the entries' (type
        // invariant), whose entries and buffer outlive the completion (see
        // `Cq`); the range is in the buffer (checked by `sge`).
        to_result(unsafe {
            bindings::rdma_ulp_post_send(self.qp.as_ptr(), cqe, sge.addr, sge.len, sge.lkey)
        })
    }

    /// Posts one receive into `len` bytes at `off` of the handler's
    /// [`DmaBuf`], with `lkey`; its completion calls the handler with `wr`.
    ///
    /// The device writes the range until the receive completes: read it
    /// ([`DmaBuf::read`]) after.  Does not sleep.
    pub(crate) fn post_recv(&self, wr: usize, off: usize, len: usize, lkey: u32) -> Result {
        let (cqe, sge) = self.wr(wr, off, len, lkey)?;
        // SAFETY: as in `post_send`.
        to_result(unsafe {
            bindings::rdma_ulp_post_recv(self.qp.as_ptr(), cqe, sge.addr, sge.len, sge.lkey)
        })
    }
}

/// A QP created by [`super::cm::CmIdRef::create_qp`]; drained and destroyed
/// on drop (`ib_drain_qp`, `ib_destroy_qp`) or by
/// [`super::cm::CmIdRef::destroy_qp`].
///
/// A QP is always drained before it is destroyed, so every work request
/// posted on it has completed, and its completion has been handled, before
/// the QP goes away (a [`Poster`] passed to a completion handler relies on
/// that).
///
/// # Invariants
///
/// `ptr` is a QP that is alive and owned by this value; `drained` is true
/// once `ib_drain_qp` has returned for it.
pub(crate) struct Qp {
    ptr: NonNull<bindings::ib_qp>,
    drained: bool,
}

// SAFETY: a QP may be used and destroyed from any process context.
unsafe impl Send for Qp {}
// SAFETY: posting locks internally in the drivers; draining takes `&mut`.
unsafe impl Sync for Qp {}

impl Qp {
    /// # Safety
    ///
    /// `ptr` is null or a live QP that the caller hands over.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::ib_qp) -> Option<Self> {
        // INVARIANT: guaranteed by the caller; nothing drained yet.
        NonNull::new(ptr).map(|ptr| Self {
            ptr,
            drained: false,
        })
    }

    /// The raw QP.
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_qp {
        self.ptr.as_ptr()
    }

    /// Drains and gives up ownership without destroying (the caller
    /// destroys it).
    pub(crate) fn forget(mut self) {
        self.drain();
        core::mem::forget(self);
    }

    /// `ib_drain_qp` (once): moves the QP to the error state and waits until
    /// every posted work request has completed (flushed) and its completion
    /// handler has run.  Sleeps; not from a completion handler of the QP's
    /// CQ; the CQ must not be polled directly (a [`Cq`] is not).
    pub(crate) fn drain(&mut self) {
        if !self.drained {
            // SAFETY: the QP is alive (type invariant).
            unsafe { bindings::ib_drain_qp(self.as_raw()) };
            // INVARIANT: drained just above.
            self.drained = true;
        }
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        self.drain();
        // SAFETY: the QP is alive and destroyed once.
        let _ = unsafe { bindings::rdma_ulp_destroy_qp(self.as_raw()) };
    }
}

/// One contiguous range of a [`DmaBuf`] with the lkey to use it.
#[derive(Clone, Copy)]
struct Sge {
    addr: u64,
    len: u32,
    lkey: u32,
}

/// A zeroed kernel buffer mapped for DMA by one device
/// (`ib_dma_map_single`, bidirectional), unmapped and freed on drop.
///
/// # Invariants
///
/// `cpu` points to the `len` bytes of `_mem`, mapped at `dma` for `dev`.
pub(crate) struct DmaBuf {
    dev: Device,
    _mem: KVec<u8>,
    cpu: NonNull<u8>,
    dma: u64,
    len: usize,
}

// SAFETY: the buffer is plain memory; concurrent access is governed by the
// `unsafe` accessors' contracts.
unsafe impl Send for DmaBuf {}
// SAFETY: as for `Send`.
unsafe impl Sync for DmaBuf {}

impl DmaBuf {
    /// Allocates and maps `len` zeroed bytes for `dev`.
    pub(crate) fn alloc(dev: Device, len: usize) -> Result<Self> {
        let mut mem = KVec::from_elem(0u8, len, GFP_KERNEL)?;
        let cpu = NonNull::new(mem.as_mut_ptr()).ok_or(ENOMEM)?;
        // SAFETY: `dev` is registered; `cpu` points to `len` bytes of kmalloc
        // memory that stay allocated until after the unmap in `drop`.
        let dma = unsafe { bindings::rdma_ulp_dma_map(dev.as_raw(), cpu.as_ptr().cast(), len) };
        if dma == 0 {
            return Err(ENOMEM);
        }
        // INVARIANT: mapped just above.
        Ok(Self {
            dev,
            _mem: mem,
            cpu,
            dma,
            len,
        })
    }

    fn check(&self, off: usize, len: usize) -> Result {
        match off.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(EINVAL),
        }
    }

    /// The range `off..off + len` with `lkey`.
    fn sge(&self, off: usize, len: usize, lkey: u32) -> Result<Sge> {
        self.check(off, len)?;
        Ok(Sge {
            addr: self.dma + off as u64,
            len: u32::try_from(len).map_err(|_| EINVAL)?,
            lkey,
        })
    }

    /// Copies `data` to offset `off` and hands the range to the device.
    ///
    /// # Safety
    ///
    /// No posted work request uses the range.
    pub(crate) unsafe fn write(&self, off: usize, data: &[u8]) -> Result {
        self.check(off, data.len())?;
        // SAFETY: in bounds (checked); no DMA touches the range (caller).
        unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr(), self.cpu.as_ptr().add(off), data.len());
            bindings::rdma_ulp_dma_sync_for_device(
                self.dev.as_raw(),
                self.dma + off as u64,
                data.len(),
            );
        }
        Ok(())
    }

    /// Takes the range at `off` back from the device and copies it to `out`.
    ///
    /// # Safety
    ///
    /// No posted work request uses the range (its completion was reaped).
    pub(crate) unsafe fn read(&self, off: usize, out: &mut [u8]) -> Result {
        self.check(off, out.len())?;
        // SAFETY: in bounds (checked); no DMA touches the range (caller).
        unsafe {
            bindings::rdma_ulp_dma_sync_for_cpu(
                self.dev.as_raw(),
                self.dma + off as u64,
                out.len(),
            );
            core::ptr::copy_nonoverlapping(self.cpu.as_ptr().add(off), out.as_mut_ptr(), out.len());
        }
        Ok(())
    }
}

impl Drop for DmaBuf {
    fn drop(&mut self) {
        // SAFETY: mapped in `alloc` (type invariant), unmapped once; the
        // memory is freed after this, when `_mem` drops.
        unsafe { bindings::rdma_ulp_dma_unmap(self.dev.as_raw(), self.dma, self.len) };
    }
}
