#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The Rust iw_cm's KUnit suite (rust_iw_cm: the glue against a fake iWARP
# provider) runs when the module is loaded; this test reports its KTAP
# results from debugfs.  Skips with the C iw_cm, which has no such suite.
. "$(dirname "$0")/lib.sh"

RES=/sys/kernel/debug/kunit/rust_iw_cm/results

IWCM_FINISH_CHECKS=0
iwcm_init kunit 2
[ "$IWCM_IMPL" = rust ] || iwcm_skip_all "kunit: the KUnit suite belongs to the Rust iw_cm (IWCM_IMPL=$IWCM_IMPL)"
load_iw_cm || iwcm_skip_all "kunit: cannot load the Rust iw_cm"
[ -r "$RES" ] || iwcm_skip_all "kunit: no $RES (CONFIG_KUNIT_DEBUGFS off?)"

while IFS= read -r l; do ktap_print_msg "$l"; done < "$RES"
total=$(grep -cE "^ +(not )?ok [0-9]+ " "$RES")
bad=$(grep -cE "^ +not ok [0-9]+ " "$RES")
iwcm_check "rust_iw_cm KUnit cases ran ($total)" [ "$total" -ge 10 ]
suite_ok=$(grep -cE '^ok [0-9]+ rust_iw_cm' "$RES")
good=0
[ "$bad" -eq 0 ] && [ "$suite_ok" -eq 1 ] && good=1
iwcm_check "rust_iw_cm KUnit: no failed case ($bad failed), suite ok" [ "$good" -eq 1 ]
iwcm_finish
