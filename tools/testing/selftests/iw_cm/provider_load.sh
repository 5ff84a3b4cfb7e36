#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The iWARP providers besides siw, loaded against the iw_cm under test:
# iw_cxgb4 (with its cxgb4 net driver and libcxgb) must resolve its rdma_cm
# symbols against the loaded rdma_cm (bound to this iw_cm), load without a
# splat, and unload again, leaving iw_cm and the siw link working.  The VM
# has no Chelsio adapter, so no cxgb4 RDMA device may appear.  Skips the
# iw_cxgb4 results (and says so) when the test kernel has no iw_cxgb4.
. "$(dirname "$0")/lib.sh"

iwcm_init provider_load 6 rping modprobe modinfo
iwcm_setup_or_bail

in_lsmod() { grep -q "^$1 " /proc/modules; }
PROVIDER_MODS="iw_cxgb4 cxgb4 libcxgb"

if ! modinfo iw_cxgb4 >/dev/null 2>&1; then
	for d in "modprobe iw_cxgb4" "iw_cxgb4 holds rdma_cm" \
		"no cxgb4 RDMA device" "modprobe -r $PROVIDER_MODS"; do
		ktap_test_skip "$d: the test kernel has no iw_cxgb4 module"
	done
else
	impl0=$(iwcm_loaded_impl)
	t0=$(__iwcm_now)
	modprobe iw_cxgb4 >"$IWCM_TMP/modprobe.log" 2>&1
	rc=$?
	iwcm_log "modprobe iw_cxgb4: status $rc, $(__iwcm_elapsed "$t0") s, iw_cm $impl0 -> $(iwcm_loaded_impl)"
	[ $rc -eq 0 ] || iwcm_show_log "$IWCM_TMP/modprobe.log"
	ok=0
	[ $rc -eq 0 ] && in_lsmod iw_cxgb4 && [ "$(iwcm_loaded_impl)" = "$IWCM_IMPL" ] && ok=1
	iwcm_check "modprobe iw_cxgb4 with the $IWCM_IMPL iw_cm loaded" [ $ok -eq 1 ]

	# iw_cxgb4's iw_cm users go through rdma_cm: its symbols must have
	# bound to the loaded rdma_cm, which holds the loaded iw_cm.
	ok=0
	[ -e /sys/module/rdma_cm/holders/iw_cxgb4 ] &&
		[ -e /sys/module/iw_cm/holders/rdma_cm ] && ok=1
	iwcm_log "rdma_cm holders: $(ls /sys/module/rdma_cm/holders 2>/dev/null | tr '\n' ' ')"
	iwcm_check "iw_cxgb4 holds rdma_cm, which holds iw_cm" [ $ok -eq 1 ]

	devs=$(rdma link show 2>/dev/null | grep -ci cxgb4)
	iwcm_check "no cxgb4 RDMA device without an adapter ($devs)" [ "$devs" -eq 0 ]

	modprobe -r $PROVIDER_MODS >"$IWCM_TMP/modprobe-r.log" 2>&1
	rc=$?
	[ $rc -eq 0 ] || iwcm_show_log "$IWCM_TMP/modprobe-r.log"
	ok=0
	if [ $rc -eq 0 ] && ! in_lsmod iw_cxgb4 && ! in_lsmod cxgb4 && in_lsmod iw_cm; then
		ok=1
	fi
	iwcm_check "modprobe -r $PROVIDER_MODS (status $rc); iw_cm stays" [ $ok -eq 1 ]
fi

# The siw link, untouched by the provider's load and unload, still works.
iwcm_check "siw link carries rping -C 5 afterwards" iwcm_rping_ok 5

iwcm_finish
