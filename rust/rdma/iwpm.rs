// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The kernel's iWARP port mapper client (drivers/infiniband/core/iwpm_*.c,
//! include/rdma/iw_portmap.h) behind safe calls, for the iw_cm's netlink
//! client (`RDMA_NL_IWCM`).  The raw calls of this project's port mapping
//! are here and nowhere else.
//!
//! Every function may sleep (the client sends netlink messages to the
//! user-space port mapper, iwpmd, and waits for its answer) and takes the
//! addresses by value or reference: the C functions only read the
//! addresses they are given through non-const pointers, so they get
//! pointers to copies.

use crate::bindings;
use kernel::prelude::*;

/// A `struct sockaddr_storage` (`__kernel_sockaddr_storage`).
pub(crate) type SockAddr = bindings::__kernel_sockaddr_storage;

/// This module's netlink client.
const CLIENT: u8 = bindings::RDMA_NL_IWCM as u8;

/// Mapping flags: `IWPM_FLAGS_NO_PORT_MAP` (the device asks for no port
/// mapping, `IW_F_NO_PORT_MAP`), or none.
#[derive(Clone, Copy)]
pub(crate) struct MapFlags(u32);

impl MapFlags {
    /// The flags for a device whose `iw_driver_flags` are `drv_flags`.
    pub(crate) fn for_driver_flags(drv_flags: u32) -> Self {
        Self(if drv_flags & bindings::iw_flags_IW_F_NO_PORT_MAP != 0 {
            bindings::IWPM_FLAGS_NO_PORT_MAP
        } else {
            0
        })
    }
}

/// `iwpm_register_pid()` then `iwpm_valid_pid()` (iwcm.c `iw_cm_map`):
/// whether a port mapper runs and this client is registered with it, for
/// the device named `dev_name` on the netdev `if_name` (both without NUL).
/// `EINVAL` when a name does not fit the message.
pub(crate) fn register(dev_name: &[u8], if_name: &[u8]) -> Result<bool> {
    let mut reg = bindings::iwpm_dev_data::default();
    if dev_name.len() >= reg.dev_name.len() || if_name.len() >= reg.if_name.len() {
        return Err(EINVAL);
    }
    for (d, s) in reg.dev_name.iter_mut().zip(dev_name) {
        *d = *s;
    }
    for (d, s) in reg.if_name.iter_mut().zip(if_name) {
        *d = *s;
    }
    // SAFETY: `reg` is a valid, NUL-terminated message for the call.
    let registered = unsafe { bindings::iwpm_register_pid(&mut reg, CLIENT) };
    // SAFETY: reads the port mapper client's state; no arguments.
    Ok(registered == 0 && unsafe { bindings::iwpm_valid_pid() } != 0)
}

/// The port mapper's answer: the mapped local and (for a query) remote
/// addresses, as the port mapper filled them in (possibly not at all:
/// zeroed, when iwpmd went away during the request; the caller checks).
pub(crate) struct Mapped {
    pub(crate) local: SockAddr,
    pub(crate) remote: SockAddr,
}

/// `iwpm_add_mapping()`, or `iwpm_add_and_query_mapping()` when `query`
/// (an active connect: the peer's mapped address too).  Errors: the port
/// mapper's status.
pub(crate) fn add_mapping(
    local: &SockAddr,
    remote: &SockAddr,
    flags: MapFlags,
    query: bool,
) -> Result<Mapped> {
    let mut pm = bindings::iwpm_sa_data {
        loc_addr: *local,
        rem_addr: *remote,
        flags: flags.0,
        ..Default::default()
    };
    // SAFETY: `pm` is a valid message; the port mapper fills it in.
    let status = unsafe {
        if query {
            bindings::iwpm_add_and_query_mapping(&mut pm, CLIENT)
        } else {
            bindings::iwpm_add_mapping(&mut pm, CLIENT)
        }
    };
    kernel::error::to_result(status)?;
    Ok(Mapped {
        local: pm.mapped_loc_addr,
        remote: pm.mapped_rem_addr,
    })
}

/// `iwpm_create_mapinfo()`: records that `local` is mapped to `mapped`.
pub(crate) fn create_mapinfo(local: &SockAddr, mapped: &SockAddr, flags: MapFlags) -> Result {
    let (mut l, mut m) = (*local, *mapped);
    // SAFETY: pointers to valid local copies, only read by the callee.
    kernel::error::to_result(unsafe {
        bindings::iwpm_create_mapinfo(&mut l, &mut m, CLIENT, flags.0)
    })
}

/// `iwpm_remove_mapinfo()` and `iwpm_remove_mapping()` (iwcm.c
/// `destroy_cm_id`): forgets the mapping of `local` to `mapped`.
pub(crate) fn remove(local: &SockAddr, mapped: &SockAddr) {
    let (mut l, mut m) = (*local, *mapped);
    // SAFETY: pointers to valid local copies, only read by the callees.
    unsafe {
        bindings::iwpm_remove_mapinfo(&mut l, &mut m);
        bindings::iwpm_remove_mapping(&mut l, CLIENT);
    }
}

/// `iwpm_get_remote_info()`: the peer's address behind the mapped pair
/// (`mapped_local`, `mapped_remote`) of a connection request, or `None`
/// when the port mapper has none.
pub(crate) fn remote_info(mapped_local: &SockAddr, mapped_remote: &SockAddr) -> Option<SockAddr> {
    let (mut l, mut r) = (*mapped_local, *mapped_remote);
    let mut out = SockAddr::default();
    // SAFETY: pointers to valid local copies; the callee reads the first
    // two and fills `out`.
    let ret = unsafe { bindings::iwpm_get_remote_info(&mut l, &mut r, &mut out, CLIENT) };
    (ret == 0).then_some(out)
}
