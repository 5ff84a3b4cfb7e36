// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! `struct sockaddr_storage` helpers for IPv4/IPv6 iWARP addresses.
//!
//! C source mirrored: `iw_cm_check_wildcard()` in
//! drivers/infiniband/core/iwcm.c.

use crate::bindings;
use crate::bindings::__kernel_sockaddr_storage as sockaddr_storage;

/// The address family (`ss_family`) of `a`.
pub(crate) fn family(a: &sockaddr_storage) -> u32 {
    // SAFETY: `ss_family` is the first member of every sockaddr variant of
    // the `sockaddr_storage` union-like struct; reading it is always valid.
    u32::from(unsafe { a.__bindgen_anon_1.__bindgen_anon_1.ss_family })
}

fn as_in(a: &sockaddr_storage) -> &bindings::sockaddr_in {
    // SAFETY: `sockaddr_storage` is large and aligned enough for every
    // sockaddr type (include/linux/socket.h); any bit pattern is a valid
    // `sockaddr_in`.
    unsafe { &*core::ptr::from_ref(a).cast::<bindings::sockaddr_in>() }
}

fn as_in_mut(a: &mut sockaddr_storage) -> &mut bindings::sockaddr_in {
    // SAFETY: as in `as_in`; the exclusive borrow covers the whole storage.
    unsafe { &mut *core::ptr::from_mut(a).cast::<bindings::sockaddr_in>() }
}

fn as_in6(a: &sockaddr_storage) -> &bindings::sockaddr_in6 {
    // SAFETY: as in `as_in`.
    unsafe { &*core::ptr::from_ref(a).cast::<bindings::sockaddr_in6>() }
}

fn as_in6_mut(a: &mut sockaddr_storage) -> &mut bindings::sockaddr_in6 {
    // SAFETY: as in `as_in_mut`.
    unsafe { &mut *core::ptr::from_mut(a).cast::<bindings::sockaddr_in6>() }
}

/// Whether the IP address of `a` is the wildcard (INADDR_ANY or `::`).
///
/// Addresses that are neither AF_INET nor AF_INET6 are treated as IPv6, as
/// iwcm.c does.
pub(crate) fn is_wildcard(a: &sockaddr_storage) -> bool {
    if family(a) == bindings::AF_INET {
        as_in(a).sin_addr.s_addr == 0
    } else {
        // SAFETY: `__ipv6_addr_type` only reads the address it is given.
        // `ipv6_addr_type()` is its static inline wrapper: the low 16 bits.
        let t = unsafe { bindings::__ipv6_addr_type(&as_in6(a).sin6_addr) };
        (t & 0xffff) as u32 == bindings::IPV6_ADDR_ANY
    }
}

/// `iw_cm_check_wildcard()`: if the port mapper's `pm_addr` is a wildcard,
/// copy the IP address (not the port) of `cm_addr` into `out`.
pub(crate) fn check_wildcard(
    pm_addr: &sockaddr_storage,
    cm_addr: &sockaddr_storage,
    out: &mut sockaddr_storage,
) {
    if !is_wildcard(pm_addr) {
        return;
    }
    if family(pm_addr) == bindings::AF_INET {
        as_in_mut(out).sin_addr = as_in(cm_addr).sin_addr;
    } else {
        as_in6_mut(out).sin6_addr = as_in6(cm_addr).sin6_addr;
    }
}

/// An address of `family` whose `sockaddr_in` port and IPv4 address are
/// `port` and `ip` (network order), the rest zero: for the KUnit suites.
#[cfg(CONFIG_KUNIT)]
pub(crate) fn with_in(family: u32, ip: [u8; 4], port: u16) -> sockaddr_storage {
    let mut a = sockaddr_storage::default();
    let sin = as_in_mut(&mut a);
    sin.sin_family = family as bindings::__kernel_sa_family_t;
    sin.sin_port = port.to_be();
    sin.sin_addr.s_addr = u32::from_ne_bytes(ip);
    a
}

/// The family, IPv4 address and port of `a` read as a `sockaddr_in`, as
/// [`with_in`] writes them: for the KUnit suites.
#[cfg(CONFIG_KUNIT)]
pub(crate) fn in_parts(a: &sockaddr_storage) -> (u32, [u8; 4], u16) {
    let sin = as_in(a);
    (
        family(a),
        sin.sin_addr.s_addr.to_ne_bytes(),
        u16::from_be(sin.sin_port),
    )
}
