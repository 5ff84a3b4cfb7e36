#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# siw on a dummy netdev: the link appears in `rdma link`, ibv_devices lists
# the device, its port is ACTIVE (rdma link and ibv_devinfo), and it goes
# away again on `rdma link delete`.
. "$(dirname "$0")/lib.sh"

iwcm_init siw_bringup 6 ibv_devices ibv_devinfo
iwcm_setup_or_bail

out=$(rdma link show "$IWCM_RDEV/1" 2>&1)
iwcm_log "rdma link: $out"
iwcm_check "rdma link lists $IWCM_RDEV/1 on $IWCM_NETDEV" \
	grep -qE "^link $IWCM_RDEV/1 state ACTIVE physical_state LINK_UP netdev $IWCM_NETDEV" <<<"$out"

out=$(ibv_devices 2>&1)
printf '%s\n' "$out" | while IFS= read -r l; do iwcm_log "ibv_devices: $l"; done
iwcm_check "ibv_devices lists $IWCM_RDEV" grep -qE "^[[:space:]]+${IWCM_RDEV}[[:space:]]" <<<"$out"

out=$(ibv_devinfo -d "$IWCM_RDEV" 2>&1)
rc=$?
printf '%s\n' "$out" | grep -E "transport|state|active_mtu|link_layer" | while IFS= read -r l; do iwcm_log "ibv_devinfo: $l"; done
iwcm_check "ibv_devinfo: iWARP transport, port 1 PORT_ACTIVE" \
	eval '[ $rc -eq 0 ] && grep -q "transport:.*iWARP" <<<"$out" && grep -qE "state:[[:space:]]+PORT_ACTIVE" <<<"$out"'

# Delete and re-add the link once: it must disappear and come back.
timeout 60 rdma link delete "$IWCM_RDEV"
rc=$?
gone=0
if [ $rc -eq 0 ] && ! iwcm_link_registered && ! iwcm_link_up && ! ibv_devices 2>/dev/null | grep -qw "$IWCM_RDEV"; then
	gone=1
fi
iwcm_check "rdma link delete removes $IWCM_RDEV (status $rc)" [ $gone -eq 1 ]
iwcm_check "rdma link add brings $IWCM_RDEV back ACTIVE" iwcm_setup

iwcm_finish
