// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The provider shim: an iWARP driver's `ib_device_ops.iw_*` behind safe types.
//!
//! Every iWARP provider (siw, iw_cxgb4, irdma, erdma, ...) fills the `iw_*`
//! members of `struct ib_device_ops` (include/rdma/ib_verbs.h); the iWARP
//! connection manager calls them.  [`IwDevice`] wraps the device, [`QpRef`]
//! is iw_cm's reference on a QP (`iw_add_ref`/`iw_rem_ref`) as an RAII guard.
//!
//! C source mirrored: the `cm_id->device->ops.iw_*` calls of
//! drivers/infiniband/core/iwcm.c.

use crate::bindings;
use crate::rdma::shared_cm_id::SharedCmId;
use core::ptr::NonNull;
use kernel::error::{to_result, Result};
use kernel::prelude::*;

/// An iWARP-capable `struct ib_device`, owned by the one cm_id made for it
/// (neither `Copy` nor `Clone`: a child cm_id gets its own with
/// [`IwDevice::for_child`]).
///
/// # Invariants
///
/// `ptr` points to a registered `struct ib_device` and stays valid while
/// this value exists: the ULP (rdma_cm) holds the device while it holds a
/// cm_id of it, and the cm_id that owns this value uses it only while its
/// ULP holds it (after that, a late provider upcall reads the cm_id's cached
/// copy of what it needs, never the device).
pub(crate) struct IwDevice {
    ptr: NonNull<bindings::ib_device>,
}

// SAFETY: `struct ib_device` is shared between threads by the RDMA core; the
// `iw_*` ops are callable from any process context.
unsafe impl Send for IwDevice {}
// SAFETY: as for `Send`; `&IwDevice` only exposes the thread-safe `iw_*` ops.
unsafe impl Sync for IwDevice {}

/// Error for a provider op the device does not implement.
fn missing_op() -> Error {
    EOPNOTSUPP
}

impl IwDevice {
    /// Wraps a raw device pointer.
    ///
    /// Returns `None` for a null pointer.
    ///
    /// # Safety
    ///
    /// `ptr` is null or points to a registered `struct ib_device` that stays
    /// valid for the lifetime of the returned value.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::ib_device) -> Option<Self> {
        // INVARIANT: guaranteed by the caller.
        NonNull::new(ptr).map(|ptr| Self { ptr })
    }

    /// The raw `struct ib_device *`.
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_device {
        self.ptr.as_ptr()
    }

    /// The same device for a child cm_id of a listener that owns `self`:
    /// the child is the ULP's cm_id of this device as soon as its
    /// CONNECT_REQUEST is delivered, and rdma_cm's hold on the device (its
    /// listener's) lasts while the request may still be delivered.
    pub(crate) fn for_child(&self) -> Self {
        // INVARIANT: see above.
        Self { ptr: self.ptr }
    }

    /// Whether `cm_id` was made for this device: only then may its
    /// provider get it.
    fn owns(&self, cm_id: &SharedCmId) -> Result {
        if cm_id.device() == self.ptr.as_ptr() {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }

    /// `dev_name(&ibdev->dev)`: the device's name ("siw0", "iwp0s3", ...),
    /// valid while `self` is; empty for a device that has none (not yet
    /// registered: `kernel::device::Device::name()` would read a NULL
    /// then, so this checks the pointer itself).  Any context.
    pub(crate) fn name(&self) -> &CStr {
        // The embedded `struct device`: the `dev` member of the anonymous
        // union with `coredev` (the crate's opaque `device` and
        // `kernel::bindings::device` are the same C type).
        // SAFETY: by the type invariant the device is valid while `self`
        // is; no reference is made, only the member's address.
        let dev = unsafe { &raw mut (*self.ptr.as_ptr()).__bindgen_anon_1.dev };
        // SAFETY: `dev` is a valid `struct device`; `dev_name()` reads its
        // `init_name` or its kobject's name.
        let name = unsafe { kernel::bindings::dev_name(dev.cast::<kernel::bindings::device>()) };
        if name.is_null() {
            return c"";
        }
        // SAFETY: a non-null `dev_name()` is a NUL-terminated string owned by
        // the device, which lives while `self` does.
        unsafe { CStr::from_char_ptr(name) }
    }

    fn ops(&self) -> &bindings::ib_device_ops {
        // SAFETY: by the type invariant the device is valid; `ops` is set at
        // registration and never changes afterwards.
        unsafe { &(*self.ptr.as_ptr()).ops }
    }

    /// The largest IRD/ORD the device supports: the larger of its
    /// `attrs.max_qp_rd_atom` and `attrs.max_qp_init_rd_atom`, at most 255
    /// (`struct iw_cm_event` carries them as `u8`).  Any context.
    pub(crate) fn max_rd_atom(&self) -> u8 {
        // SAFETY: by the type invariant the device is valid; `attrs` is
        // filled in at registration and read-only afterwards.
        let a = unsafe { &(*self.ptr.as_ptr()).attrs };
        let m = a.max_qp_rd_atom.max(a.max_qp_init_rd_atom).min(255);
        m as u8
    }

    /// The netdev name the provider set in `iw_ifname` (without NUL).
    pub(crate) fn ifname(&self) -> &[u8] {
        // SAFETY: by the type invariant the device is valid; `iw_ifname` is
        // set at registration and read-only afterwards.
        let a = unsafe { &(*self.ptr.as_ptr()).iw_ifname };
        let n = a.iter().position(|&c| c == 0).unwrap_or(a.len());
        // SAFETY: `c_char` and `u8` have the same layout; `n <= a.len()`.
        unsafe { core::slice::from_raw_parts(a.as_ptr().cast::<u8>(), n) }
    }

    /// The provider's `iw_driver_flags` (`enum iw_flags`).
    pub(crate) fn driver_flags(&self) -> u32 {
        // SAFETY: by the type invariant the device is valid; set at
        // registration and read-only afterwards.
        unsafe { (*self.ptr.as_ptr()).iw_driver_flags }
    }

    /// The address of the provider's `iw_connect` op (0: none), which
    /// names the provider (the KUnit suite's fake one, for instance).
    /// Only the test interface uses it: not built without KUnit.
    #[cfg(CONFIG_KUNIT)]
    pub(crate) fn connect_op(&self) -> usize {
        self.ops().iw_connect.map_or(0, |f| f as usize)
    }

    /// Whether the provider implements every op iw_cm needs.
    pub(crate) fn is_iwarp(&self) -> bool {
        let o = self.ops();
        o.iw_add_ref.is_some()
            && o.iw_rem_ref.is_some()
            && o.iw_get_qp.is_some()
            && o.iw_connect.is_some()
            && o.iw_accept.is_some()
            && o.iw_reject.is_some()
            && o.iw_create_listen.is_some()
            && o.iw_destroy_listen.is_some()
    }

    /// Looks up QP number `qpn` and takes iw_cm's reference on it
    /// (`iw_get_qp` + `iw_add_ref`).
    ///
    /// Context: any; does not sleep (both ops are lookups/atomic increments
    /// in siw and iw_cxgb4).  Returns `None` for an unknown QP number.
    pub(crate) fn get_qp(&self, qpn: u32) -> Option<QpRef> {
        let get = self.ops().iw_get_qp?;
        let qpn = i32::try_from(qpn).ok()?;
        // SAFETY: the device is valid (type invariant); `iw_get_qp` accepts
        // any QP number and returns null when it is unknown.
        let qp = NonNull::new(unsafe { get(self.ptr.as_ptr(), qpn) })?;
        let ops = QpRefOps {
            add: self.ops().iw_add_ref?,
            rem: self.ops().iw_rem_ref?,
        };
        // SAFETY: `qp` was just returned by the provider for this device,
        // whose reference ops `ops` are.
        unsafe { QpRef::acquire(ops, qp) }
    }

    /// `iw_connect`: starts an active connection for `cm_id`, a cm_id of
    /// this device (else `EINVAL`), with the ULP's `param` (private data,
    /// ird/ord, QP number).
    ///
    /// Events (CONNECT_REPLY) may be delivered to `cm_id->event_handler`
    /// before this returns; the provider takes its own reference on the
    /// cm_id (`add_ref`) for any it keeps.  May sleep.
    pub(crate) fn connect(&self, cm_id: &SharedCmId, param: &mut ConnParam) -> Result {
        self.owns(cm_id)?;
        let f = self.ops().iw_connect.ok_or_else(missing_op)?;
        // SAFETY: `cm_id` is a cm_id of this device with its callbacks set
        // (`SharedCmId`'s invariant), borrowed for the call; `param` is a
        // valid parameter block, exclusively borrowed for the call.
        to_result(unsafe { f(cm_id.as_ptr(), param) })
    }

    /// `iw_accept`: accepts the connection request of `cm_id`, as for
    /// [`IwDevice::connect`].  May sleep.
    pub(crate) fn accept(&self, cm_id: &SharedCmId, param: &mut ConnParam) -> Result {
        self.owns(cm_id)?;
        let f = self.ops().iw_accept.ok_or_else(missing_op)?;
        // SAFETY: as in `connect`.
        to_result(unsafe { f(cm_id.as_ptr(), param) })
    }

    /// `iw_reject`: rejects the connection request of `cm_id`, a cm_id of
    /// this device (else `EINVAL`), sending `pdata` (at most 255 bytes,
    /// else `EINVAL`) to the peer.  May sleep.
    pub(crate) fn reject(&self, cm_id: &SharedCmId, pdata: &[u8]) -> Result {
        self.owns(cm_id)?;
        let f = self.ops().iw_reject.ok_or_else(missing_op)?;
        let len = u8::try_from(pdata.len()).map_err(|_| EINVAL)?;
        let p = if pdata.is_empty() {
            core::ptr::null()
        } else {
            pdata.as_ptr().cast()
        };
        // SAFETY: `cm_id` as in `connect`; `p` is null or valid for `len`
        // bytes, which the provider copies during the call.
        to_result(unsafe { f(cm_id.as_ptr(), p, len) })
    }

    /// `iw_create_listen`: starts listening on `cm_id->local_addr`, for
    /// a cm_id of this device (else `EINVAL`).  May sleep.
    pub(crate) fn create_listen(&self, cm_id: &SharedCmId, backlog: i32) -> Result {
        self.owns(cm_id)?;
        let f = self.ops().iw_create_listen.ok_or_else(missing_op)?;
        // SAFETY: as in `connect`.
        to_result(unsafe { f(cm_id.as_ptr(), backlog) })
    }

    /// `iw_destroy_listen`: stops listening on `cm_id`, a listening cm_id
    /// of this device (else `EINVAL`).  May sleep.
    pub(crate) fn destroy_listen(&self, cm_id: &SharedCmId) -> Result {
        self.owns(cm_id)?;
        let f = self.ops().iw_destroy_listen.ok_or_else(missing_op)?;
        // SAFETY: as in `connect`.
        to_result(unsafe { f(cm_id.as_ptr()) })
    }
}

/// A provider's QP reference ops (`iw_add_ref`, `iw_rem_ref`), copied from
/// its device: a [`QpRef`] may outlive the cm_id and its device handle.
#[derive(Clone, Copy)]
struct QpRefOps {
    add: unsafe extern "C" fn(*mut bindings::ib_qp),
    rem: unsafe extern "C" fn(*mut bindings::ib_qp),
}

/// One `iw_add_ref` reference on a QP, released by `iw_rem_ref` on drop.
///
/// siw_destroy_qp and c4iw_destroy_qp wait until every such reference is
/// gone, so a `QpRef` must never be dropped while a lock is held that the
/// destroying thread might need, and must be dropped before the event that
/// tells the ULP to destroy its QP (CLOSE, a failed CONNECT_REPLY) is
/// delivered.
///
/// # Invariants
///
/// `qp` is a QP on which this value owns one reference taken with
/// `ops.add`, given back with `ops.rem` (its provider's ops).
pub(crate) struct QpRef {
    ops: QpRefOps,
    qp: NonNull<bindings::ib_qp>,
}

// SAFETY: the provider's QP reference counting is thread-safe (kref in siw,
// refcount in iw_cxgb4); the reference may be released from any thread.
unsafe impl Send for QpRef {}
// SAFETY: `&QpRef` only allows `ib_modify_qp`, which is thread-safe.
unsafe impl Sync for QpRef {}

impl QpRef {
    /// Takes a new reference on `qp`.
    ///
    /// # Safety
    ///
    /// `qp` is a live QP of the provider whose reference ops `ops` are (the
    /// caller holds a reference or the provider's lookup just returned it).
    unsafe fn acquire(ops: QpRefOps, qp: NonNull<bindings::ib_qp>) -> Option<Self> {
        // SAFETY: `qp` is live (caller); `iw_add_ref` takes a reference.
        unsafe { (ops.add)(qp.as_ptr()) };
        // INVARIANT: we own the reference just taken.
        Some(Self { ops, qp })
    }

    /// The QP's number (`qp_num`, set at creation).  Any context.
    pub(crate) fn qpn(&self) -> u32 {
        // SAFETY: the reference keeps the QP alive (type invariant);
        // `qp_num` never changes after creation.
        unsafe { (*self.qp.as_ptr()).qp_num }
    }

    /// Another reference on the same QP (`iw_add_ref`).  Does not sleep.
    pub(crate) fn try_clone(&self) -> Option<Self> {
        // SAFETY: `self` keeps the QP alive; `ops` are its provider's.
        unsafe { Self::acquire(self.ops, self.qp) }
    }

    fn modify_state(&self, state: bindings::ib_qp_state) -> Result {
        let mut attr = bindings::ib_qp_attr {
            qp_state: state,
            ..Default::default()
        };
        // SAFETY: the QP is alive (type invariant); `attr` is valid and only
        // `qp_state` is selected by the mask.
        to_result(unsafe {
            bindings::ib_modify_qp(
                self.qp.as_ptr(),
                &mut attr,
                bindings::ib_qp_attr_mask_IB_QP_STATE as i32,
            )
        })
    }

    /// Moves the QP to ERR: abrupt close.  May sleep.
    pub(crate) fn modify_to_err(&self) -> Result {
        self.modify_state(bindings::ib_qp_state_IB_QPS_ERR)
    }

    /// Moves the QP to SQD (RDMAC CLOSING): graceful close.  May sleep.
    pub(crate) fn modify_to_sqd(&self) -> Result {
        self.modify_state(bindings::ib_qp_state_IB_QPS_SQD)
    }
}

/// The C `struct iw_cm_conn_param` of `iw_cm_connect`/`iw_cm_accept`,
/// passed through to the provider.
pub(crate) type ConnParam = bindings::iw_cm_conn_param;

/// The C `struct ib_qp_attr` of `iw_cm_init_qp_attr`.
pub(crate) type QpAttr = bindings::ib_qp_attr;

/// Which answer `iw_cm_init_qp_attr` gives for a QP's target state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QpAttrTarget {
    /// INIT or RTR: the QP state and iWARP's remote access flags.
    InitOrRtr,
    /// RTS: nothing to set.
    Rts,
    /// Any other state: iw_cm has no attributes for it (-EINVAL).
    Other,
}

/// The target state `attr.qp_state` the ULP asks attributes for.
pub(crate) fn qp_attr_target(attr: &QpAttr) -> QpAttrTarget {
    match attr.qp_state {
        bindings::ib_qp_state_IB_QPS_INIT | bindings::ib_qp_state_IB_QPS_RTR => {
            QpAttrTarget::InitOrRtr
        }
        bindings::ib_qp_state_IB_QPS_RTS => QpAttrTarget::Rts,
        _ => QpAttrTarget::Other,
    }
}

/// Fills in what an iWARP QP gets on its way to INIT or RTR (iwcm.c
/// `iwcm_init_qp_init_attr`): remote write and read access, and the mask
/// that selects the state and the access flags.
pub(crate) fn set_init_qp_attr(attr: &mut QpAttr, mask: &mut i32) {
    *mask = (bindings::ib_qp_attr_mask_IB_QP_STATE | bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS)
        as i32;
    attr.qp_access_flags = (bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE
        | bindings::ib_access_flags_IB_ACCESS_REMOTE_READ) as i32;
}

impl Drop for QpRef {
    fn drop(&mut self) {
        // SAFETY: we own one reference taken with `ops.add` (type
        // invariant); `ops.rem` gives it back.
        unsafe { (self.ops.rem)(self.qp.as_ptr()) };
    }
}
