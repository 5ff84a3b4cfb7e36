#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# siw flushes the WRs a kernel ULP posts to a QP in ERROR and reads nothing
# of a WR after its completion: the ULP's completion handler may free it
# (smbdirect frees a send_io, which holds its WR, in
# smbdirect_connection_send_io_done(): a KASAN slab-use-after-free in
# siw_sq_flush_wr() from siw_post_send() <- smb_direct_writev() during
# `rdma link delete` under cifs I/O, seen with the C iw_cm).  The test
# module tools/testing/siw/flush_test/siw_flush_test.ko, on load, moves a
# QP of siw0 to ERROR, posts two send WRs and then two receive WRs, and
# frees each WR in the CQ's completion handler, which siw calls from the
# post.  Per queue: every WR flushed and no KASAN report in
# siw_sq_flush_wr()/siw_rq_flush_wr().  Upstream siw reads wr->next after
# the completion (IWCM_SIW=stock: an XFAIL naming tools/testing/siw/0010,
# whose KASAN reports the splat check accepts by their signature; the
# second queue's report needs kasan_multi_shot, which tools/vm/run.sh
# boots with).  No cm_id is involved: the same with either iw_cm.
. "$(dirname "$0")/lib.sh"

FLUSH_KO=${IWCM_SIW_FLUSH_KO:-$IWCM_TOP/tools/testing/siw/flush_test/siw_flush_test.ko}

[ -f "$FLUSH_KO" ] || iwcm_skip_all "no siw_flush_test.ko at $FLUSH_KO (tools/testing/siw/build.sh builds it: make siw)"
# setup + send + recv
iwcm_init siw_flush 3 insmod rmmod
iwcm_setup_or_bail

iwcm_bounded 120 insmod "$FLUSH_KO" dev="$IWCM_RDEV" 2>"$IWCM_TMP/insmod.log"
rc=$?
[ $rc -eq 0 ] || iwcm_show_log "$IWCM_TMP/insmod.log"
if grep -q "^siw_flush_test " /proc/modules && ! rmmod siw_flush_test; then
	iwcm_log "rmmod siw_flush_test failed"
fi
mapfile -t klog < <(iwcm_dmesg_since_setup)
for l in "${klog[@]}"; do
	[[ $l == *siw_flush_test:* ]] && iwcm_log "kernel: $l"
done
for q in send:sq recv:rq; do
	what=${q%%:*}
	fn=siw_${q#*:}_flush_wr
	flushed= uaf=
	for l in "${klog[@]}"; do
		[[ $l == *"siw_flush_test: $IWCM_RDEV: $what: "* ]] && flushed=$l
		# (Quoted without "KASAN: ", which the VM's splat check would
		# take for a report of its own.)
		[[ $l =~ BUG:\ KASAN:\ [a-z-]+\ in\ $fn\+ ]] && [ -z "$uaf" ] &&
			uaf="KASAN ${l#*BUG: KASAN: }"
	done
	desc="$what WRs posted to a QP in ERROR: each flushed, none read after its completion (the completion handler frees it)"
	if [ -n "$uaf" ]; then
		iwcm_fail_or_siw_xfail 0010 "$desc" "$fn reads the WR's next pointer after its completion ($uaf)"
	elif [ $rc -eq 0 ] && [[ $flushed == *"$what: 2 of 2 WRs flushed, 0 other (post 0)"* ]]; then
		ktap_test_pass "$desc"
	else
		iwcm_log "insmod exit $rc; ${flushed:-no $what line from siw_flush_test}"
		ktap_test_fail "$desc"
	fi
done
iwcm_finish
