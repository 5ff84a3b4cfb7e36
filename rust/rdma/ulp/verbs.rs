// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Verbs objects of a kernel ULP's queue: device, PD, CQ, QP, DMA buffer,
//! and posting work requests.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//!
//! Everything allocated on a [`Device`] must be freed before the rdma_cm id
//! that led to the device is destroyed: device removal
//! (`rdma link delete`, driver unload) proceeds once the last id is gone.
//! In order: [`Qp`] (drained first), [`Cq`], [`DmaBuf`], [`Pd`].

use crate::bindings;
use core::ptr::NonNull;
use kernel::{
    error::{from_err_ptr, to_result},
    prelude::*,
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

/// A completion queue polled from a workqueue (`IB_POLL_WORKQUEUE`): the
/// `done` functions of the completed `ib_cqe`s run in process context, one
/// at a time per CQ.  Freed on drop (`ib_free_cq` waits for a running poll;
/// no `done` runs afterwards).
///
/// # Invariants
///
/// `ptr` is a CQ allocated by `rdma_ulp_alloc_cq` and not yet freed.
pub(crate) struct Cq {
    ptr: NonNull<bindings::ib_cq>,
}

// SAFETY: a CQ may be used and freed from any process context.
unsafe impl Send for Cq {}
// SAFETY: `&Cq` only hands out the pointer to create QPs.
unsafe impl Sync for Cq {}

impl Cq {
    /// Allocates a CQ of `nr_cqe` entries on `dev`.
    pub(crate) fn alloc(dev: Device, nr_cqe: u32, comp_vector: u32) -> Result<Self> {
        let nr = i32::try_from(nr_cqe).map_err(|_| EINVAL)?;
        let vec = i32::try_from(comp_vector).map_err(|_| EINVAL)?;
        // SAFETY: `dev` is registered (type invariant).
        let cq = from_err_ptr(unsafe {
            bindings::rdma_ulp_alloc_cq(dev.as_raw(), core::ptr::null_mut(), nr, vec)
        })?;
        // INVARIANT: a CQ just allocated.
        Ok(Self {
            ptr: NonNull::new(cq).ok_or(ENOMEM)?,
        })
    }

    fn as_raw(&self) -> *mut bindings::ib_cq {
        self.ptr.as_ptr()
    }

    /// Init attributes of an RC QP whose send and receive completions go to
    /// this CQ; every send is signaled.
    pub(crate) fn rc_qp_attr(&self, send_wr: u32, recv_wr: u32) -> bindings::ib_qp_init_attr {
        bindings::ib_qp_init_attr {
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
        }
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: the CQ is alive and freed once; its QPs are gone (they hold
        // the CQ, `Qp` must be dropped first).
        unsafe { bindings::ib_free_cq(self.as_raw()) };
    }
}

/// A QP created by [`super::cm::CmIdRef::create_qp`]; destroyed on drop
/// (`ib_destroy_qp`) or by [`super::cm::CmIdRef::destroy_qp`].
///
/// # Invariants
///
/// `ptr` is a QP that is alive and owned by this value.
pub(crate) struct Qp {
    ptr: NonNull<bindings::ib_qp>,
}

// SAFETY: a QP may be used and destroyed from any process context.
unsafe impl Send for Qp {}
// SAFETY: posting and draining lock internally in the drivers.
unsafe impl Sync for Qp {}

impl Qp {
    /// # Safety
    ///
    /// `ptr` is null or a live QP that the caller hands over.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::ib_qp) -> Option<Self> {
        // INVARIANT: guaranteed by the caller.
        NonNull::new(ptr).map(|ptr| Self { ptr })
    }

    /// The raw QP, for posting with [`post_send`] / [`post_recv`].
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_qp {
        self.ptr.as_ptr()
    }

    /// Gives up ownership without destroying (the caller destroys it).
    pub(crate) fn forget(self) {
        core::mem::forget(self);
    }

    /// `ib_drain_qp`: moves the QP to the error state and waits until every
    /// posted work request has completed (flushed) and its `done` has run.
    /// Sleeps; the CQ must not be polled directly (ours are not).
    pub(crate) fn drain(&self) {
        // SAFETY: the QP is alive (type invariant).
        unsafe { bindings::ib_drain_qp(self.as_raw()) };
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        // SAFETY: the QP is alive and destroyed once.
        let _ = unsafe { bindings::rdma_ulp_destroy_qp(self.as_raw()) };
    }
}

/// One contiguous range of a [`DmaBuf`] with the lkey to use it.
#[derive(Clone, Copy)]
pub(crate) struct Sge {
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
    pub(crate) fn sge(&self, off: usize, len: usize, lkey: u32) -> Result<Sge> {
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

/// Posts one signaled SEND of `sge` whose completion calls `cqe->done`.
///
/// # Safety
///
/// - `qp` is a live QP whose CQ is alive;
/// - `cqe` stays valid until its completion has been handled or the CQ is
///   freed;
/// - the range of `sge` stays mapped (its [`DmaBuf`] alive) and is not
///   written until then.
pub(crate) unsafe fn post_send(
    qp: *mut bindings::ib_qp,
    cqe: *mut bindings::ib_cqe,
    sge: Sge,
) -> Result {
    // SAFETY: guaranteed by the caller.
    to_result(unsafe { bindings::rdma_ulp_post_send(qp, cqe, sge.addr, sge.len, sge.lkey) })
}

/// Posts one receive into `sge` whose completion calls `cqe->done`.
///
/// # Safety
///
/// As for [`post_send`]; the range is not read until the completion.
pub(crate) unsafe fn post_recv(
    qp: *mut bindings::ib_qp,
    cqe: *mut bindings::ib_cqe,
    sge: Sge,
) -> Result {
    // SAFETY: guaranteed by the caller.
    to_result(unsafe { bindings::rdma_ulp_post_recv(qp, cqe, sge.addr, sge.len, sge.lkey) })
}
