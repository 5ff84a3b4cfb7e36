// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! iw_cm: the iWARP connection manager, in Rust.
//!
//! A drop-in replacement for drivers/infiniband/core/iwcm.c: the module is
//! named `iw_cm`, exports the nine functions of include/rdma/iw_cm.h with
//! their C semantics, and rdma_cm binds to it.  What differs, and why, is in
//! Documentation/iw_cm.rst; in short:
//!
//! - every cm_id ([`cm_id::CmId`]) is a `kernel::sync::Arc` and lives exactly as long as
//!   its last reference (the ULP's, the provider's add_ref, a queued event);
//! - events are queued per cm_id and delivered in order by that cm_id's own
//!   work item on a WQ_MEM_RECLAIM, non-ordered workqueue, so a handler that
//!   blocks on one cm_id never stalls another cm_id's events;
//! - `iw_destroy_cm_id` waits only for the cm_id's own in-flight delivery
//!   (not at all when called from that delivery) and never flushes a queue;
//! - iw_cm's QP reference is released outside any lock and before CLOSE or
//!   a failed CONNECT_REPLY reaches the ULP;
//! - provider faults warn once and are dropped, API misuse returns -EINVAL:
//!   never BUG().
//!
//! Every `extern "C"` function below is one of the exported symbols; the
//! C file iw_cm_exports.c holds their `EXPORT_SYMBOL`s.

use kernel::prelude::*;

mod c_entry;
mod c_helpers;
mod cm_id;
pub mod event_check;
#[cfg(CONFIG_KUNIT)]
pub mod kunit_iface;
#[path = "../../../../rust/rdma/mod.rs"]
mod rdma;
pub mod state;
pub mod table_window;
mod trace;

#[path = "../../../../rust/rdma/bindings.rs"]
mod bindings;

use c_entry::borrow;
use cm_id::CmId;
use kernel::sync::Arc;
use rdma::shared_cm_id::Fields;

module! {
    type: IwCmModule,
    name: "iw_cm",
    authors: ["The Rust iw_cm authors"],
    description: "iWARP CM (Rust: per-cm_id lifetime and event delivery)",
    license: "Dual BSD/GPL",
}

/// Defines a registration of iw_cm_init() (iwcm.c) as an owned value:
/// `$new` registers, dropping the value undoes it.
///
/// # Invariants
///
/// A value of the type exists only while its registration holds.
macro_rules! registration {
    ($(#[$m:meta])* $name:ident, $new:expr, $drop:path) => {
        $(#[$m])*
        struct $name(());

        impl $name {
            fn new() -> Result<Self> {
                $new?;
                Ok(Self(()))
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: undoes the registration this value owns (type
                // invariant), once; nothing registered by it is used after
                // the module state is dropped.
                unsafe { $drop() };
            }
        }
    };
}

registration!(
    /// The kernel's port mapper client for `RDMA_NL_IWCM` (iwpm_init/iwpm_exit).
    PortMapperClient,
    // SAFETY: called once, at module init.
    kernel::error::to_result(unsafe { bindings::iwpm_init(bindings::RDMA_NL_IWCM as u8) }),
    iwpm_exit_iwcm
);
registration!(
    /// The `iw_cm_wq` delivery workqueue.
    DeliveryQueue,
    // SAFETY: called once, at module init.
    kernel::error::to_result(unsafe { bindings::iwcm_c_wq_alloc() }),
    bindings::iwcm_c_wq_destroy
);
registration!(
    /// The `net/iw_cm` sysctl table.
    Sysctl,
    // SAFETY: called once, at module init.
    kernel::error::to_result(unsafe { bindings::iwcm_c_sysctl_register() }),
    bindings::iwcm_c_sysctl_unregister
);
registration!(
    /// The port mapper's netlink callbacks (`RDMA_NL_IWCM`).
    Netlink,
    {
        // SAFETY: called once, at module init.
        unsafe { bindings::iwcm_c_nl_register() };
        Ok::<(), Error>(())
    },
    bindings::iwcm_c_nl_unregister
);
registration!(
    /// /sys/kernel/debug/fail_iw_cm (fault injection; nothing without it).
    FaultAttr,
    {
        // SAFETY: called once, at module init.
        unsafe { bindings::iwcm_c_fault_init() };
        Ok::<(), Error>(())
    },
    bindings::iwcm_c_fault_exit
);
registration!(
    /// debugfs iw_cm/: `count` and `cm_ids` (the table's seq_file iterator,
    /// which the Rust debugfs API does not offer), created in C.
    Debugfs,
    {
        // SAFETY: called once, at module init, before any cm_id exists.
        unsafe { bindings::iwcm_c_debugfs_init() };
        Ok::<(), Error>(())
    },
    bindings::iwcm_c_debugfs_exit
);

/// `iwpm_exit(RDMA_NL_IWCM)`.
///
/// # Safety
///
/// Undoes the `iwpm_init` of [`PortMapperClient`].
unsafe fn iwpm_exit_iwcm() {
    // SAFETY: guaranteed by the caller.
    unsafe { bindings::iwpm_exit(bindings::RDMA_NL_IWCM as u8) };
}

/// The stuck-handler watch (iw_cm_exports.c): cancelled when dropped.  It
/// is armed only by deliveries, so nothing arms it again once every cm_id
/// is gone, which module exit requires.
struct StuckWatch;

impl Drop for StuckWatch {
    fn drop(&mut self) {
        c_helpers::stuck_exit();
    }
}

/// The cm_id table (iw_cm_exports.c): emptied of the number it keeps for
/// its allocation cursor's leaf when dropped, after every cm_id is gone.
struct IdTable;

impl Drop for IdTable {
    fn drop(&mut self) {
        c_helpers::ids_exit();
    }
}

/// The module state.  Fields are dropped in declaration order, the reverse
/// of their registration in `init` (iwcm.c's iw_cm_cleanup order); a
/// failed `init` drops what it registered so far, in reverse.
struct IwCmModule {
    _debugfs: Debugfs,
    _table: IdTable,
    _stuck_watch: StuckWatch,
    _fault: FaultAttr,
    _netlink: Netlink,
    _sysctl: Sysctl,
    _queue: DeliveryQueue,
    _port_mapper: PortMapperClient,
}

impl kernel::Module for IwCmModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let port_mapper = PortMapperClient::new()?;
        let queue = DeliveryQueue::new()?;
        let sysctl = Sysctl::new()?;
        let netlink = Netlink::new()?;
        let fault = FaultAttr::new()?;
        let debugfs = Debugfs::new()?;
        Ok(Self {
            _debugfs: debugfs,
            _table: IdTable,
            _stuck_watch: StuckWatch,
            _fault: fault,
            _netlink: netlink,
            _sysctl: sysctl,
            _queue: queue,
            _port_mapper: port_mapper,
        })
    }
}

impl Drop for IwCmModule {
    fn drop(&mut self) {
        // Every cm_id holds a reference on this module, so none is left
        // here, unless the unload was forced (rmmod -f): then warn.  The
        // fields' drops undo the registrations either way; a cm_id left
        // behind would then call into freed code.
        let live = cm_id::LIVE.load(kernel::sync::atomic::Relaxed);
        if live != 0 {
            pr_err!(
                "unloaded with {} cm_id(s) still live (forced unload?)\n",
                live
            );
            kernel::warn_on!(true);
        }
    }
}

/// `iw_create_cm_id()`: creates an iWARP cm_id on `device`.
///
/// Returns the cm_id, or `ERR_PTR(-ENOMEM)` / `ERR_PTR(-EINVAL)` (null or
/// non-iWARP device).  The caller owns the returned reference and gives it
/// back with [`iw_destroy_cm_id`] (or by returning non-zero from
/// `cm_handler`).  `cm_handler` is called in process context from the
/// iw_cm workqueue, one event at a time per cm_id.  May sleep (GFP_KERNEL).
///
/// # Safety
///
/// `device` is null or a registered `struct ib_device` that outlives the
/// cm_id; `cm_handler` and `context` stay valid until the cm_id is destroyed.
#[no_mangle]
pub unsafe extern "C" fn iw_create_cm_id(
    device: *mut bindings::ib_device,
    cm_handler: bindings::iw_cm_handler,
    context: *mut core::ffi::c_void,
) -> *mut bindings::iw_cm_id {
    // SAFETY: guaranteed by the caller.
    let Some(dev) = (unsafe { rdma::iw_provider::IwDevice::from_raw(device) }) else {
        return EINVAL.to_ptr();
    };
    match CmId::new(dev, cm_handler, context) {
        Ok(id) => CmId::into_ulp(id),
        Err(e) => e.to_ptr(),
    }
}

/// `iw_destroy_cm_id()`: destroys a cm_id and gives back the caller's
/// reference.
///
/// After it returns no callback for this cm_id runs or is running.  It waits
/// only for this cm_id's own in-flight delivery, and not at all when called
/// from this cm_id's own `cm_handler`.  Never flushes a shared workqueue;
/// safe from a WQ_MEM_RECLAIM worker.  May sleep.
///
/// # Safety
///
/// `cm_id` was returned by [`iw_create_cm_id`] (or delivered with a
/// CONNECT_REQUEST) and the caller still owns its reference.
#[no_mangle]
pub unsafe extern "C" fn iw_destroy_cm_id(cm_id: *mut bindings::iw_cm_id) {
    // SAFETY: the caller owns the ULP reference, given back here: a
    // reference of ours keeps the cm_id alive until the call returns.
    let id: Arc<CmId> = unsafe { borrow(cm_id) }.into();
    id.destroy_from_ulp();
}

/// `iw_cm_listen()`: listens on `cm_id->local_addr` with room for `backlog`
/// pending requests (0: net/iw_cm/default_backlog).
///
/// Errors: -EINVAL (not idle, negative backlog), -ENOMEM, or the provider's.
/// May sleep.
///
/// # Safety
///
/// `cm_id` is a live cm_id owned by the caller, which does not touch its
/// addresses during the call (it set them before).
#[no_mangle]
pub unsafe extern "C" fn iw_cm_listen(cm_id: *mut bindings::iw_cm_id, backlog: i32) -> i32 {
    // SAFETY: guaranteed by the caller.
    let id = unsafe { borrow(cm_id) };
    // SAFETY: the ULP does not touch the addresses during its call (the
    // caller's guarantee), and `listen` uses them only once this call has
    // taken the cm_id out of Idle, before the provider has it: then no
    // delivery of iw_cm writes them either (shared_cm_id.rs's rules).
    let fields = unsafe { Fields::assume(id.shared()) };
    errno(id.listen(backlog, fields))
}

/// `iw_cm_accept()`: accepts the request delivered with CONNECT_REQUEST.
///
/// Takes iw_cm's reference on the QP `iw_param->qpn`.  ESTABLISHED may be
/// delivered before this returns; when it is called from the cm_id's own
/// CONNECT_REQUEST handler (as rdma_cm's ULPs do), ESTABLISHED is held
/// until that handler returns, so the handler must not wait for it.  On
/// error no event is delivered.
/// Errors: -EINVAL (not a pending request, unknown QP), or the provider's.
/// May sleep.
///
/// # Safety
///
/// `cm_id` is a live cm_id owned by the caller; `iw_param` is valid.
#[no_mangle]
pub unsafe extern "C" fn iw_cm_accept(
    cm_id: *mut bindings::iw_cm_id,
    iw_param: *mut bindings::iw_cm_conn_param,
) -> i32 {
    // SAFETY: guaranteed by the caller.
    let id = unsafe { borrow(cm_id) };
    // SAFETY: `iw_param` is null or valid and not used by anyone else
    // during the call (caller).
    let Some(param) = (unsafe { iw_param.as_mut() }) else {
        return EINVAL.to_errno();
    };
    errno(id.accept(param))
}

/// `iw_cm_reject()`: rejects the request delivered with CONNECT_REQUEST,
/// sending `private_data_len` bytes of `private_data` to the peer.
///
/// No event follows.  Errors: -EINVAL (not a pending request), or the
/// provider's.  May sleep.
///
/// # Safety
///
/// `cm_id` is a live cm_id owned by the caller; `private_data` is valid for
/// `private_data_len` bytes (or the length is 0).
#[no_mangle]
pub unsafe extern "C" fn iw_cm_reject(
    cm_id: *mut bindings::iw_cm_id,
    private_data: *const core::ffi::c_void,
    private_data_len: u8,
) -> i32 {
    // SAFETY: guaranteed by the caller.
    let id = unsafe { borrow(cm_id) };
    let pdata: &[u8] = if private_data.is_null() || private_data_len == 0 {
        &[]
    } else {
        // SAFETY: the caller guarantees `private_data_len` readable bytes.
        unsafe { core::slice::from_raw_parts(private_data.cast(), private_data_len.into()) }
    };
    errno(id.reject(pdata))
}

/// `iw_cm_connect()`: connects to `cm_id->remote_addr` with the QP
/// `iw_param->qpn`.
///
/// CONNECT_REPLY may be delivered before this returns; on error no event is
/// delivered.  Errors: -EINVAL (not idle, unknown QP), -ENOMEM, or the
/// provider's.  May sleep.
///
/// # Safety
///
/// `cm_id` is a live cm_id owned by the caller, which does not touch its
/// addresses during the call (it set them before); `iw_param` is valid.
#[no_mangle]
pub unsafe extern "C" fn iw_cm_connect(
    cm_id: *mut bindings::iw_cm_id,
    iw_param: *mut bindings::iw_cm_conn_param,
) -> i32 {
    // SAFETY: guaranteed by the caller.
    let id = unsafe { borrow(cm_id) };
    // SAFETY: `iw_param` is null or valid and not used by anyone else
    // during the call (caller).
    let Some(param) = (unsafe { iw_param.as_mut() }) else {
        return EINVAL.to_errno();
    };
    // SAFETY: as in `iw_cm_listen`: `connect` uses them only once this
    // call has taken the cm_id out of Idle, before the provider (which may
    // deliver CONNECT_REPLY at once) has it.
    let fields = unsafe { Fields::assume(id.shared()) };
    errno(id.connect(param, fields))
}

/// `iw_cm_disconnect()`: closes the connection, gracefully (QP to SQD) or
/// with a reset when `abrupt` is non-zero (QP to ERR).
///
/// CLOSE follows.  Returns 0 when the peer already closed or the id is not
/// connected.  Waits while this cm_id's `iw_connect`/`iw_accept` downcall
/// runs, never for the network (iwcm.c waits for ESTABLISHED or
/// CONNECT_REPLY): an accepted id that has not heard ESTABLISHED is reset
/// (QP to ERR, graceful or not) and hears CLOSE; a connecting id that has
/// not heard CONNECT_REPLY has its QP reset and hears the (failed)
/// CONNECT_REPLY.  Errors: -EINVAL on a listener or a destroyed id, and
/// when called from this cm_id's own handler while its downcall runs
/// (where iwcm.c would wait for itself).  0 on a connected id whose CLOSE
/// the provider has already reported (its QP given back, the CLOSE on its
/// way).  May sleep.
///
/// # Safety
///
/// `cm_id` is a live cm_id owned by the caller.
#[no_mangle]
pub unsafe extern "C" fn iw_cm_disconnect(cm_id: *mut bindings::iw_cm_id, abrupt: i32) -> i32 {
    // SAFETY: guaranteed by the caller.
    let id = unsafe { borrow(cm_id) };
    errno(CmId::disconnect(id, abrupt != 0))
}

/// `iw_cm_init_qp_attr()`: the QP attributes for the transition to
/// `qp_attr->qp_state` (INIT/RTR: access flags; RTS: none).
///
/// Errors: -EINVAL for other target states or a listening/closing id.
/// Does not sleep.
///
/// # Safety
///
/// `cm_id` is a live cm_id owned by the caller; `qp_attr` and
/// `qp_attr_mask` are valid for reads and writes.
#[no_mangle]
pub unsafe extern "C" fn iw_cm_init_qp_attr(
    cm_id: *mut bindings::iw_cm_id,
    qp_attr: *mut bindings::ib_qp_attr,
    qp_attr_mask: *mut i32,
) -> i32 {
    // SAFETY: guaranteed by the caller.
    let id = unsafe { borrow(cm_id) };
    // SAFETY: guaranteed by the caller.
    let (attr, mask) = unsafe { (&mut *qp_attr, &mut *qp_attr_mask) };
    errno(id.init_qp_attr(attr, mask))
}

/// `iwcm_reject_msg()`: a static string for the status of a rejected
/// CONNECT_REPLY (iWARP uses negative errnos).  Any context.
#[no_mangle]
pub extern "C" fn iwcm_reject_msg(reason: i32) -> *const kernel::ffi::c_char {
    let s: &'static CStr = match reason {
        r if r == -(kernel::bindings::ECONNRESET as i32) => c"reset by remote host",
        r if r == -(kernel::bindings::ECONNREFUSED as i32) => c"refused by remote application",
        r if r == -(kernel::bindings::ETIMEDOUT as i32) => c"setup timeout",
        _ => c"unrecognized reason",
    };
    s.as_char_ptr()
}

fn errno(r: Result) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
