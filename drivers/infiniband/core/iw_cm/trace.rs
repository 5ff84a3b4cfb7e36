// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The iw_cm tracepoints (trace/iw_cm.h, tracefs `events/iw_cm/`), called
//! from Rust as the kernel's `declare_trace!` does for in-tree code: test
//! the tracepoint's static key, and only when it is on call the C helper
//! `rust_do_trace_<name>` (iw_cm_trace.c, `CREATE_RUST_TRACE_POINTS`).
//! Built with `IWCM_NO_TRACEPOINTS=1` (Kbuild), the calls are compiled out:
//! the A/B benchmark's baseline.
//! `declare_trace!` itself names the key through `kernel::bindings`, which
//! an out-of-tree module's tracepoints are not part of, hence this copy.
//! `<name>_enabled()` tests the key alone, for callers whose arguments
//! cost something to compute.  Disabled, a tracepoint costs the key test (a patched-out jump with
//! `CONFIG_JUMP_LABEL`, a load and compare without).  Any context.

use kernel::ffi::c_char;
use kernel::prelude::*;

/// An argument of a tracepoint as the Rust caller holds it, and as its C
/// helper takes it: plain values as they are, a C string borrowed for the
/// call as its pointer (the probes copy it).  The conversion is what makes
/// the wrappers below safe: no caller hands over a raw pointer.
pub(crate) trait TraceArg {
    /// The C helper's parameter type.
    type Ffi;
    /// The value the C helper takes.
    fn ffi(self) -> Self::Ffi;
}

macro_rules! trace_arg_plain {
    ($($t:ty),*) => {$(
        impl TraceArg for $t {
            type Ffi = $t;
            #[inline(always)]
            fn ffi(self) -> $t {
                self
            }
        }
    )*};
}
trace_arg_plain!(u32, u64, i32, bool);

impl TraceArg for &CStr {
    type Ffi = *const c_char;
    #[inline(always)]
    fn ffi(self) -> *const c_char {
        self.as_char_ptr()
    }
}

macro_rules! iw_cm_trace {
    ($($(#[$attr:meta])* fn $name:ident($($arg:ident : $ty:ty),* $(,)?);)*) => {$(
        kernel::macros::paste! {
            // The key is only used by address (bindgen's `tracepoint`
            // holds types the FFI lint does not accept).
            #[allow(improper_ctypes)]
            #[cfg(all(CONFIG_TRACEPOINTS, not(iwcm_no_tracepoints)))]
            extern "C" {
                static [<__tracepoint_ $name>]: kernel::bindings::tracepoint;
                fn [<rust_do_trace_ $name>]($($arg: <$ty as TraceArg>::Ffi),*);
            }

            /// Whether this tracepoint is enabled now (callers test it
            /// before computing an argument that costs something).
            #[inline(always)]
            #[allow(dead_code)]
            pub(crate) fn [<$name _enabled>]() -> bool {
                #[cfg(all(CONFIG_TRACEPOINTS, not(iwcm_no_tracepoints)))]
                {
                    // SAFETY: querying a tracepoint's static key is always
                    // allowed; the key is defined in iw_cm_trace.c.
                    unsafe {
                        kernel::jump_label::static_branch_unlikely!(
                            [<__tracepoint_ $name>],
                            kernel::bindings::tracepoint,
                            key
                        )
                    }
                }
                #[cfg(any(not(CONFIG_TRACEPOINTS), iwcm_no_tracepoints))]
                {
                    false
                }
            }

            $(#[$attr])*
            #[inline(always)]
            pub(crate) fn $name($($arg: $ty),*) {
                #[cfg(all(CONFIG_TRACEPOINTS, not(iwcm_no_tracepoints)))]
                if [<$name _enabled>]() {
                    // SAFETY: the helper takes plain values and pointers to
                    // C strings (`TraceArg`) borrowed from the caller for
                    // the call, which the probes copy.
                    unsafe { [<rust_do_trace_ $name>]($($arg.ffi()),*) };
                }
                #[cfg(any(not(CONFIG_TRACEPOINTS), iwcm_no_tracepoints))]
                {
                    $( let _ = $arg; )*
                }
            }
        }
    )*};
}

iw_cm_trace! {
    /// A cm_id was created (`id`: its table number; `dev`: its device's
    /// name).
    fn iw_cm_id_create(id: u64, dev: &CStr);
    /// A cm_id's last reference went (from its destructor).
    fn iw_cm_id_destroy(id: u64, dev: &CStr);
    /// The provider's event was queued (`event`: `enum iw_cm_event_type`).
    fn iw_cm_event_queued(id: u64, event: i32, status: i32);
    /// An event was delivered to the ULP's handler, which returned `ret`
    /// after `duration_ns`.
    fn iw_cm_event_delivered(id: u64, event: i32, status: i32, ret: i32, duration_ns: u64);
    /// iw_cm took (`taken`) or dropped its reference on QP `qpn`.
    fn iw_cm_qp_ref(id: u64, qpn: u32, taken: bool);
    /// A provider fault (`site`: the call site, `file:line`).
    fn iw_cm_provider_fault(dev: &CStr, site: &CStr);
}
