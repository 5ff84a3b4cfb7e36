// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! A cm_id's port mapping: `iw_cm_map()` and the mapping's removal of
//! iwcm.c, through the kernel's port mapper client (iwpm_*.c).

use super::*;
use crate::rdma::iwpm;

/// The mapped addresses a cm_id takes from the port mapper's answer `m` to
/// its request for (`local`, `remote`) (iwcm.c `iw_cm_map`): the answer's
/// local address, and for a query (`active`, a connect) the answer's
/// remote address, its IP replaced by the cm_id's own when the port mapper
/// answered a wildcard (`iw_cm_check_wildcard`); a listener keeps its own
/// remote address.
///
/// `None` when an address the cm_id would take is of another family than
/// the cm_id's own: the port mapper can answer 0 without filling the
/// mapped addresses in (iwpmd gone between the pid check and the request,
/// iwpm_msg.c), and then the cm_id keeps its own addresses, as without a
/// port mapper.  iwcm.c adopts such an answer, and the provider then fails
/// with "Invalid sockaddr family".  Pure; any context.
pub(crate) fn adopted_mapping(
    local: &iwpm::SockAddr,
    remote: &iwpm::SockAddr,
    m: &iwpm::Mapped,
    active: bool,
) -> Option<(iwpm::SockAddr, iwpm::SockAddr)> {
    if sockaddr::family(&m.local) != sockaddr::family(local)
        || (active && sockaddr::family(&m.remote) != sockaddr::family(remote))
    {
        return None;
    }
    let mut m_remote = *remote;
    if active {
        m_remote = m.remote;
        sockaddr::check_wildcard(&m.remote, remote, &mut m_remote);
    }
    Some((m.local, m_remote))
}

impl CmId {
    // ---- port mapper (iwpm) ----------------------------------------------

    /// `iw_cm_map()` of iwcm.c: asks the user-space port mapper (iwpmd), if
    /// one runs, for the mapped addresses.  `fields` are this cm_id's, held
    /// by the ULP's listen or connect call, and go before the provider sees
    /// the cm_id.
    pub(super) fn map_ports(&self, mut fields: Fields<'_>, active: bool) -> Result {
        let (local, remote) = fields.addrs();
        let devname = self.dev.name().to_bytes();
        fields.set_mapped_addrs(local, remote);
        if !iwpm::register(devname, self.dev.ifname())? {
            return Ok(());
        }
        fields.set_mapped();
        let flags = iwpm::MapFlags::for_driver_flags(self.dev.driver_flags());
        if let Ok(m) = iwpm::add_mapping(&local, &remote, flags, active) {
            match adopted_mapping(&local, &remote, &m, active) {
                Some((m_local, m_remote)) => fields.set_mapped_addrs(m_local, m_remote),
                None => {
                    kernel::pr_info_once!(
                        "port mapper answered with an address of another family ({} / {} for {}): mapping not used (said once)\n",
                        sockaddr::family(&m.local),
                        sockaddr::family(&m.remote),
                        sockaddr::family(&local)
                    );
                }
            }
        }
        let (m_local, _) = fields.mapped_addrs();
        iwpm::create_mapinfo(&local, &m_local, flags)
    }

    /// Removes the port mapper's mapping (iwcm.c destroy_cm_id).
    pub(super) fn unmap_ports(&self) {
        // SAFETY: the id is Destroying: nobody changes `mapped` or the
        // addresses any more.
        let fields = unsafe { Fields::assume(&self.raw) };
        if fields.is_mapped() {
            let ((local, _), (m_local, _)) = (fields.addrs(), fields.mapped_addrs());
            iwpm::remove(&local, &m_local);
        }
    }
}

#[kunit_tests(rust_iw_cm_portmap)]
mod tests {
    use super::adopted_mapping;
    use crate::bindings::{AF_INET, AF_INET6};
    use crate::rdma::iwpm::{Mapped, SockAddr};
    use core::mem::{size_of, transmute};
    use kernel::prelude::*;

    /// The bytes of a `sockaddr_storage`.
    type Bytes = [u8; size_of::<SockAddr>()];

    /// An address of `family` whose `sockaddr_in` port and IPv4 address
    /// are `port` and `ip`.
    fn addr(family: u32, ip: [u8; 4], port: u16) -> SockAddr {
        let mut b: Bytes = [0; size_of::<SockAddr>()];
        b[..2].copy_from_slice(&(family as u16).to_ne_bytes());
        b[2..4].copy_from_slice(&port.to_be_bytes());
        b[4..8].copy_from_slice(&ip);
        // SAFETY: a `sockaddr_storage` is integers without padding: any
        // bytes of its size are one.
        unsafe { transmute::<Bytes, SockAddr>(b) }
    }

    /// Family, port and IPv4 address of `a`, as `addr` writes them.
    fn head(a: SockAddr) -> [u8; 8] {
        // SAFETY: as in `addr`; every byte of `a` is initialised.
        let b = unsafe { transmute::<SockAddr, Bytes>(a) };
        let mut h = [0; 8];
        h.copy_from_slice(&b[..8]);
        h
    }

    /// `adopted_mapping` of the answer (`m_local`, `m_remote`), as the
    /// heads of the addresses taken.
    fn adopted(m_local: SockAddr, m_remote: SockAddr, active: bool) -> Option<([u8; 8], [u8; 8])> {
        let (local, remote) = (
            addr(AF_INET, [192, 0, 2, 1], 4420),
            addr(AF_INET, [192, 0, 2, 2], 4420),
        );
        let m = Mapped {
            local: m_local,
            remote: m_remote,
        };
        adopted_mapping(&local, &remote, &m, active).map(|(l, r)| (head(l), head(r)))
    }

    /// The port mapper's answer is adopted only when its addresses are of
    /// the cm_id's own family (issue 12 item 6): iwpm_add_mapping() and
    /// iwpm_add_and_query_mapping() return 0 without filling the answer in
    /// when iwpmd went away between iw_cm's pid check and the request.  A
    /// zeroed (family 0) or IPv6 answer for an IPv4 cm_id is not adopted,
    /// on either side; a well-formed one is, with a wildcard remote
    /// answer's IP replaced by the cm_id's own (iw_cm_check_wildcard).
    #[test]
    fn port_mapper_answer_of_another_family_is_not_adopted() -> Result {
        let zeroed = SockAddr::default();
        let v6 = addr(AF_INET6, [0; 4], 0);
        let m_local = addr(AF_INET, [198, 51, 100, 1], 40000);
        let m_remote = addr(AF_INET, [198, 51, 100, 2], 41000);
        for active in [false, true] {
            // Nothing filled in: the iwpmd-killed race.
            assert!(adopted(zeroed, zeroed, active).is_none());
            // A local answer of another family.
            assert!(adopted(v6, m_remote, active).is_none());
        }
        // A connect's query with a remote answer of another family.
        assert!(adopted(m_local, zeroed, true).is_none());
        assert!(adopted(m_local, v6, true).is_none());
        // A listener's request: the remote answer is not used.
        let (l, r) = adopted(m_local, zeroed, false).ok_or(EINVAL)?;
        assert_eq!(l, head(m_local));
        assert_eq!(r, head(addr(AF_INET, [192, 0, 2, 2], 4420)));
        // A connect's query.
        let (l, r) = adopted(m_local, m_remote, true).ok_or(EINVAL)?;
        assert_eq!(l, head(m_local));
        assert_eq!(r, head(m_remote));
        // A wildcard remote answer keeps the mapped port, takes the peer's IP.
        let wild = addr(AF_INET, [0; 4], 41000);
        let (_, r) = adopted(m_local, wild, true).ok_or(EINVAL)?;
        assert_eq!(r, head(addr(AF_INET, [192, 0, 2, 2], 41000)));
        Ok(())
    }
}
