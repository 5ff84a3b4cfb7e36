// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The C helpers of iw_cm_exports.c (declared in iw_cm_c.h, read by
//! bindgen) behind safe functions: the one place where the cm_id code calls
//! into this module's C side.  Each wrapper states why its call is sound;
//! the callers (cm_id.rs and cm_id/) call safe functions.
//!
//! The registrations of module init and exit (the workqueue, sysctl,
//! netlink and fault-injection pairs) stay in the crate root, which owns
//! them as the module state's fields.

use crate::bindings;
use core::ffi::c_void;
use kernel::prelude::*;
use kernel::sync::atomic::Atomic;

/// A reference on this module (`try_module_get(THIS_MODULE)`), held by
/// every live cm_id, so that `rmmod iw_cm` answers "in use" while a
/// provider can still call `event_handler`, `add_ref` or `rem_ref`, a
/// queued event can still run, or the ULP still owns a cm_id.  (rdma_cm,
/// the only ULP of the exported API, already holds the module through its
/// symbol dependency; the provider references are what the pin adds.)
///
/// The window it leaves: the reference is dropped in the cm_id's
/// destructor, after which the thread that dropped the last `Arc` still
/// runs a few instructions of this module (the rest of the `Arc` drop:
/// `kfree`, then the return through `cm_rem_ref` or `iw_destroy_cm_id`;
/// not the delivery work's `run`: module exit's `destroy_workqueue`
/// waits for a running work item).  A concurrent `rmmod` that sees the count
/// at 0 in that window runs the module exit and then `synchronize_rcu()`
/// before the module's memory is freed; the window is therefore only
/// open if that thread is preempted (or interrupted) for longer than a
/// grace period between `module_put()` and its return.  The kernel's own
/// modules that drop their own reference (`module_put()` outside
/// `module_put_and_kthread_exit()`) have the same window; closing it
/// would need the final put in core kernel code.
///
/// # Invariants
///
/// Holds one reference on this module, taken in [`ModulePin::get`] and
/// given back in `drop`.
pub(crate) struct ModulePin(());

impl ModulePin {
    /// Takes a reference on this module.  `ENODEV` when the module is being
    /// unloaded (cannot happen while a listener or rdma_cm holds it, which
    /// every caller of `iw_create_cm_id` and every CONNECT_REQUEST does).
    /// Any context.
    pub(crate) fn get() -> Result<Self> {
        // SAFETY: `try_module_get(THIS_MODULE)`, callable from any context.
        if unsafe { bindings::iwcm_c_module_get() } {
            Ok(Self(()))
        } else {
            Err(ENODEV)
        }
    }
}

impl Drop for ModulePin {
    fn drop(&mut self) {
        // SAFETY: gives back the reference taken in `get` (type invariant).
        unsafe { bindings::iwcm_c_module_put() };
    }
}

/// Fault point of an allocation of `size` bytes (a cm_id or event slots): `Err(ENOMEM)`
/// when /sys/kernel/debug/fail_iw_cm (the kernel's fault-injection
/// framework, `should_fail()`) selects this call, `Ok(())` otherwise and
/// always without CONFIG_FAULT_INJECTION_DEBUG_FS.  Any context.
pub(crate) fn fault_point(size: usize) -> Result {
    // SAFETY: `should_fail()` on a static fault_attr; callable from any
    // context, no pointer arguments.
    if unsafe { bindings::iwcm_c_should_fail_alloc(size) } {
        return Err(ENOMEM);
    }
    Ok(())
}

/// The event delivery workqueue (allocated by the crate root's
/// `DeliveryQueue` at module init).
pub(crate) fn delivery_queue() -> &'static kernel::workqueue::Queue {
    // The crate's `workqueue_struct` is the kernel's, declared again by
    // bindgen: the cast changes only the Rust name of the type.
    // SAFETY: the queue is allocated before any cm_id exists and destroyed
    // at module exit, which no cm_id outlives (each pins the module).
    unsafe { kernel::workqueue::Queue::from_raw(bindings::iwcm_c_wq().cast()) }
}

/// net/iw_cm/default_backlog.  Any context.
pub(crate) fn default_backlog() -> u32 {
    // SAFETY: reads a C global with READ_ONCE; no arguments.
    unsafe { bindings::iwcm_c_default_backlog() }
}

/// Copies `len` bytes of a provider event's private data from `src`, an
/// untrusted address (a buggy provider hands iw_cm NULL + 4 when it has no
/// buffer), to the end of `dst`, within its spare capacity.
///
/// `EFAULT` when `src` is unreadable (user-space, unmapped, the first
/// page): `copy_from_kernel_nofault()` fails instead of oopsing; `EINVAL`
/// when `dst` has no room for `len` bytes.  `src` is never dereferenced
/// here.  Any context (does not sleep).
pub(crate) fn copy_nofault(dst: &mut KVec<u8>, src: *const c_void, len: usize) -> Result {
    let room = dst.spare_capacity_mut();
    if room.len() < len {
        return Err(EINVAL);
    }
    // SAFETY: `room` is writable for `len` bytes (checked above); the
    // helper reads `src` only through copy_from_kernel_nofault(), which
    // accepts any address.
    let r = unsafe { bindings::iwcm_c_copy_pdata(room.as_mut_ptr().cast(), src, len) };
    if r != 0 {
        return Err(EFAULT);
    }
    // SAFETY: the helper initialised the `len` bytes after the current
    // length, within the capacity.
    unsafe { dst.inc_len(len) };
    Ok(())
}

/// Writes `%ps` of the address `f` (a handler's symbol, or its address
/// without kallsyms) into `buf`, NUL-terminated and truncated as
/// `snprintf()` does.  Any context.
pub(crate) fn format_symbol(buf: &mut [u8], f: usize) {
    // SAFETY: `buf` is writable for its length; `%ps` only looks the
    // address up in kallsyms, it does not dereference it.
    unsafe {
        bindings::iwcm_c_format_symbol(buf.as_mut_ptr().cast(), buf.len(), f as *const c_void)
    };
}

/// Writes `%pISpc` of `a` into `buf` ("-" for an address of no IP
/// family), NUL-terminated and truncated as `snprintf()` does.  Any context.
pub(crate) fn format_addr(buf: &mut [u8], a: &bindings::__kernel_sockaddr_storage) {
    // SAFETY: `buf` is writable for its length; `a` is a valid
    // sockaddr_storage, read according to its family.
    unsafe { bindings::iwcm_c_format_addr(buf.as_mut_ptr().cast(), buf.len(), a) };
}

/// Whether the next stuck-handler line may be printed (the rate limit,
/// 10 lines per 5 s).  Any context.
pub(crate) fn stuck_ratelimit() -> bool {
    // SAFETY: `__ratelimit` on a static state; any context.
    unsafe { bindings::iwcm_c_stuck_ratelimit() }
}

/// Arms the stuck-handler watch unless it is pending or turned off.  Any
/// context.
pub(crate) fn stuck_arm() {
    // SAFETY: queues a static delayed work; any context.
    unsafe { bindings::iwcm_c_stuck_arm() };
}

/// Cancels the stuck-handler watch and waits for a running scan.  Process
/// context (module exit or a failed init).
pub(crate) fn stuck_exit() {
    // SAFETY: `cancel_delayed_work_sync` of the static watch; it may
    // sleep, which the callers allow.
    unsafe { bindings::iwcm_c_stuck_exit() };
}

/// Prints the stuck-handler report line of cm_id `id`: the handler `handler`
/// (printed with `%ps`) has been handling `event` in `state` for `ms` ms,
/// or returned after `ms` ms when `done`.  The caller took the rate
/// limit's decision.  Any context.
pub(crate) fn report_stuck(
    id: u64,
    state: &CStr,
    event: &CStr,
    handler: usize,
    dev: &CStr,
    ms: u64,
    done: bool,
) {
    // SAFETY: the strings are NUL-terminated and live through the call;
    // `handler` is only printed with `%ps`, never dereferenced.
    unsafe {
        bindings::iwcm_c_report_stuck(
            id,
            state.as_char_ptr(),
            event.as_char_ptr(),
            handler as *const c_void,
            dev.as_char_ptr(),
            ms,
            done,
        )
    };
}

/// Reserves the next free number in the table of live cm_ids (cyclically
/// from 1), with nothing published at it yet.  `ENOMEM` when the table
/// cannot grow (or `EBUSY` when every number is taken).  With `may_sleep`
/// (process context, may sleep) it allocates with GFP_KERNEL; otherwise
/// with GFP_NOWAIT, in any context.
pub(crate) fn ids_reserve(may_sleep: bool) -> Result<u32> {
    let mut id = 0u32;
    // SAFETY: `id` is writable; the helper sleeps only with `may_sleep`,
    // which the caller passes only where it may.
    let r = unsafe { bindings::iwcm_c_ids_reserve(&mut id, may_sleep) };
    kernel::error::to_result(r)?;
    Ok(id)
}

/// Stores `entry` at the reserved number `id` of the table (no allocation:
/// the slot exists), after writing the next creation sequence number to
/// `seq`, under the table's lock.  Any context.
///
/// # Safety
///
/// `entry` points to a `CmId` that stays valid until [`ids_erase`] of
/// `id` returns: the table's readers (`cm_id/table.rs`) dereference what
/// they find under the table's lock.
pub(crate) unsafe fn ids_publish(id: u32, entry: *const c_void, seq: &Atomic<u64>) {
    // SAFETY: `entry` is only stored here, and valid for as long as the
    // table's readers may reach it (the caller's guarantee); `seq` points
    // to a live `u64` (an `Atomic<u64>` has its layout), written under the
    // table's lock, under which its readers read it.
    unsafe { bindings::iwcm_c_ids_publish(id, entry, seq.as_ptr()) };
}

/// Erases number `id` of the table (published or only reserved) and frees
/// it (the last of the allocation cursor's leaf stays reserved, unused,
/// to keep the leaf: iw_cm_exports.c's keeper).  Any context.
pub(crate) fn ids_erase(id: u32) {
    // SAFETY: an XArray erase under its lock; no pointer arguments.
    unsafe { bindings::iwcm_c_ids_erase(id) };
}

/// Erases the number the table keeps to keep its cursor's leaf, so that
/// the table is empty.  Module exit, once no cm_id is left; any context.
pub(crate) fn ids_exit() {
    // SAFETY: an XArray erase under its lock; no arguments.
    unsafe { bindings::iwcm_c_ids_exit() };
}

/// Sets (or clears) the running mark of number `id` (nothing if it is
/// not in the table).  Any context.
pub(crate) fn ids_set_running(id: u32, running: bool) {
    // SAFETY: an XArray mark change under its lock; no pointer arguments.
    unsafe { bindings::iwcm_c_ids_set_running(id, running) };
}

/// The table of live cm_ids locked, interrupts saved; unlocked when
/// dropped.
///
/// # Invariants
///
/// The table's lock is held, taken by [`IdsLock::lock`] with the saved
/// interrupt state `flags`, on this CPU.
pub(crate) struct IdsLock {
    flags: usize,
    _not_send: kernel::types::NotThreadSafe,
}

impl IdsLock {
    /// Takes the table's lock.  Any context.
    pub(crate) fn lock() -> Self {
        // INVARIANT: the lock is taken here, released only in `drop`.
        Self {
            // SAFETY: takes the XArray's spinlock with interrupts saved.
            flags: unsafe { bindings::iwcm_c_ids_lock() },
            _not_send: kernel::types::NotThreadSafe,
        }
    }

    /// The entry published at the lowest number at or after `from` (with
    /// `running`: among those marked running), `None` if there is none.
    pub(crate) fn find(&self, from: u32, running: bool) -> Option<*const c_void> {
        let mut index = from as usize;
        // SAFETY: the lock is held (type invariant), as the helper needs;
        // `index` is writable.
        let p = unsafe { bindings::iwcm_c_ids_find(&mut index, running) };
        (!p.is_null()).then_some(p)
    }

    /// The cm_ids published, and the next creation sequence number.
    pub(crate) fn state(&self) -> (usize, u64) {
        let (mut count, mut next) = (0usize, 0u64);
        // SAFETY: the lock is held (type invariant); both are writable.
        unsafe { bindings::iwcm_c_ids_state(&mut count, &mut next) };
        (count, next)
    }
}

impl Drop for IdsLock {
    fn drop(&mut self) {
        // SAFETY: the lock is held with `flags` (type invariant), on this
        // CPU: `IdsLock` is not `Send`.
        unsafe { bindings::iwcm_c_ids_unlock(self.flags) };
    }
}
