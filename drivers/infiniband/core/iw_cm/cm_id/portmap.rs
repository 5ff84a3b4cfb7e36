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
