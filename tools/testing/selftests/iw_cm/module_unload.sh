#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# iw_cm module unload and reload; run last in the collection.
#   IWCM_IMPL=c:    modprobe -r rdma_ucm rdma_cm iw_cm succeeds; modprobe
#                   iw_cm / modprobe -r iw_cm alone.
#   IWCM_IMPL=rust: the cm_id count is 0; rmmod rdma_ucm rdma_cm iw_cm
#                   succeeds; insmod / rmmod of our iw_cm.ko alone.
# Then the stack is loaded again and carries an rping, so a broken reload
# shows.
. "$(dirname "$0")/lib.sh"

iwcm_init module_unload 5 rping modprobe rmmod insmod

in_lsmod() { grep -q "^$1 " /proc/modules; }
holders() { grep -E "^(iw_cm|rdma_cm|rdma_ucm|ib_cm) " /proc/modules | while IFS= read -r l; do iwcm_log "lsmod: $l"; done; }

# No siw link may remain from earlier tests (it does not hold iw_cm, but a
# leftover user process would).
if iwcm_link_up; then
	iwcm_log "removing a leftover $IWCM_RDEV link"
	timeout 60 rdma link delete "$IWCM_RDEV"
fi
modprobe rdma_cm 2>/dev/null
load_iw_cm || iwcm_log "load_iw_cm failed"

n=$(iwcm_cm_ids)
if [ "$IWCM_IMPL" != rust ]; then
	ktap_test_skip "iw_cm cm_id count is 0 before unload: the C iw_cm keeps no count"
elif [ -z "$n" ]; then
	ktap_test_fail "iw_cm cm_id count is 0 before unload: no $IWCM_CMIDS with the Rust iw_cm"
else
	iwcm_check "iw_cm cm_id count is 0 before unload (is $n)" [ "$n" = 0 ]
fi

if [ "$IWCM_IMPL" = rust ]; then
	rmmod rdma_ucm rdma_cm iw_cm
	rc=$?
	[ $rc -eq 0 ] || holders
	iwcm_check "rmmod rdma_ucm rdma_cm iw_cm (status $rc)" eval '[ $rc -eq 0 ] && ! in_lsmod iw_cm'
	rc=1
	if insmod "$IWCM_RUST_KO" && in_lsmod iw_cm && [ "$(iwcm_loaded_impl)" = rust ]; then
		rmmod iw_cm && ! in_lsmod iw_cm && rc=0
	fi
	iwcm_check "insmod / rmmod of $IWCM_RUST_KO alone" [ $rc -eq 0 ]
else
	modprobe -r rdma_ucm rdma_cm iw_cm
	rc=$?
	[ $rc -eq 0 ] || holders
	iwcm_check "modprobe -r rdma_ucm rdma_cm iw_cm (status $rc)" eval '[ $rc -eq 0 ] && ! in_lsmod iw_cm'
	rc=1
	if modprobe iw_cm && in_lsmod iw_cm; then
		modprobe -r iw_cm && ! in_lsmod iw_cm && rc=0
	fi
	iwcm_check "modprobe iw_cm / modprobe -r iw_cm alone" [ $rc -eq 0 ]
fi

# Load everything again (iwcm_setup: iw_cm, rdma_cm, rdma_ucm, siw, link).
iwcm_setup_or_bail
iwcm_check "reloaded stack carries rping -C 5" iwcm_rping_ok 5

iwcm_finish
