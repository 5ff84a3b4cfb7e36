# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Shared by the in-kernel ULP selftests (nfs_rdma.sh, smb_direct.sh): the
# phases every ULP goes through, with either iw_cm, on a mounted file system
# MNT:
#
#   ulp_ids_shown PORT          the ULP's rdma_cm ids on the link (both
#                               iw_cms), and ours' cm_id table holding them
#   ulp_fio_verified FILE SECS  fio with crc32c verify, must end clean
#   ulp_unplug_relink FILE      fio running, `rdma link delete` 5 s in
#                               (bounded, timed), the link added again, fio's
#                               end: no verify mismatch
#   ulp_recovered MNT           an 8 MB write and read-back (page cache
#                               dropped) within IWCM_ULP_RECOVER_TIMEOUT s
#   ulp_flaps FILE              `ip link set` down and up under fio, repeated
#
# Each sets ULP_* variables with what it measured (times, exit statuses),
# logged as KTAP diagnostics and summed up by ulp_report.  These tests need
# the ULP flavour of the test kernel (tools/kernel/ulp.fragment); on another
# kernel they SKIP with the reason.

ULP_DELETE_TIMEOUT=${IWCM_ULP_DELETE_TIMEOUT:-90}
ULP_RECOVER_TIMEOUT=${IWCM_ULP_RECOVER_TIMEOUT:-120}
# Seconds of fio around the unplug (the delete comes 5 s in) and around the
# flaps.
ULP_FIO_SECS=${IWCM_ULP_FIO_SECS:-30}
ULP_FLAPS=${IWCM_ULP_FLAPS:-3}
ULP_REPORT=()

# ulp_require_modules WHAT MODULE...: SKIP the test unless the running
# kernel has every MODULE; on the ULP flavour of the test kernel
# (IWCM_KFLAVOUR=ulp), which is built to have them, a missing one fails.
ulp_require_modules() {
	local what=$1 m
	shift
	for m in "$@"; do
		modinfo "$m" >/dev/null 2>&1 && continue
		if [ "${IWCM_KFLAVOUR:-}" = ulp ]; then
			if [ "${IWCM_PLAN_DONE:-0}" != 1 ]; then
				ktap_print_header
				ktap_set_plan 1
			fi
			ktap_test_fail "$what: the ULP kernel has no $m module (tools/kernel/ulp.fragment should build it)"
			ktap_finished
		fi
		iwcm_skip_all "$what: this kernel has no $m module (the ULP flavour of the test kernel has: IWCM_KFLAVOUR=ulp, tools/kernel/ulp.fragment)"
	done
}

# ulp_quick: under IWCM_QUICK=1 (make check) a shorter fio around the
# unplug and two flaps instead of three (make check-all: the full ones).
# Call after iwcm_init.
ulp_quick() {
	iwcm_quick ULP_FIO_SECS "$ULP_FIO_SECS" 12 "seconds of fio around the unplug:"
	iwcm_quick ULP_FLAPS "$ULP_FLAPS" 2 "link flaps:"
}

# ulp_note KEY VALUE: one figure for the report line at the end.
ulp_note() {
	ULP_REPORT+=("$1=$2")
	iwcm_log "figure: $1=$2"
}

# ulp_report: the test's figures on one line (the closing notes quote it).
ulp_report() {
	iwcm_log "$IWCM_NAME report (iw_cm $IWCM_IMPL): ${ULP_REPORT[*]}"
}

# ulp_timed VAR SECONDS CMD...: CMD bounded by SECONDS (iwcm_bounded);
# its wall time in VAR; its status.
ulp_timed() {
	# (Locals named apart from any caller's VAR: printf -v would set ours.)
	local __ut_var=$1 __ut_limit=$2 __ut_t0 __ut_rc
	shift 2
	__ut_t0=$(__iwcm_now)
	iwcm_bounded "$__ut_limit" "$@"
	__ut_rc=$?
	printf -v "$__ut_var" '%s' "$(__iwcm_elapsed "$__ut_t0")"
	return $__ut_rc
}

# ulp_ids_shown PORT: a connection of the ULP on the link: an rdma_cm id in
# state CONNECT with TCP port PORT on $IWCM_RDEV (rdma resource show cm_id,
# either iw_cm), and with ours the cm_id table (debugfs iw_cm/cm_ids) holding
# rows with that port.
ulp_ids_shown() {
	local port=$1 ids n rows
	ids=$(iwcm_dev_cm_ids | grep -E "(src|dst)-addr +[0-9.]+:$port ")
	n=$(grep -cE " state +CONNECT " <<<"$ids")
	printf '%s\n' "$ids" | head -n 8 | while IFS= read -r l; do iwcm_log "  rdma_cm: $l"; done
	ulp_note rdma_cm_ids_port_$port "$(grep -c . <<<"$ids")"
	[ "$n" -ge 1 ] || { iwcm_log "no connected rdma_cm id with port $port"; return 1; }
	[ "$IWCM_IMPL" = rust ] || return 0
	rows=$(grep -cE ":$port( |$)" /sys/kernel/debug/iw_cm/cm_ids 2>/dev/null)
	grep -E ":$port( |$)" /sys/kernel/debug/iw_cm/cm_ids 2>/dev/null | head -n 8 |
		while IFS= read -r l; do iwcm_log "  iw_cm/cm_ids: $l"; done
	ulp_note cm_id_table_rows_port_$port "$rows"
	[ "$rows" -ge 2 ]
}

# ulp_fio VAR LOG FILE SECS [fio options...]: fio in the background on FILE
# (16 MB, 4 KB random writes, crc32c verify of what it wrote, fatal on a
# mismatch), time-based for SECS; its pid in VAR.
ulp_fio() {
	local __uf_var=$1 __uf_log=$2 __uf_file=$3 __uf_secs=$4
	shift 4
	iwcm_spawn "$__uf_var" "$__uf_log" fio --name=ulp --filename="$__uf_file" --size=16M \
		--ioengine=psync --rw=randwrite --bs=4k --direct=1 \
		--verify=crc32c --verify_backlog=64 --verify_fatal=1 \
		--time_based --runtime="$__uf_secs" --output-format=normal "$@"
}

# ulp_fio_mismatch LOG: fio reported a verify mismatch.
ulp_fio_mismatch() {
	grep -qiE "verify: bad|bad magic|verify failed|crc32c: verify" "$1"
}

# ulp_fio_summary LOG: fio's error lines and totals as diagnostics.
ulp_fio_summary() {
	grep -E "err=|io_u error|issued rwts|WRITE:|READ:" "$1" | head -n 8 |
		while IFS= read -r l; do iwcm_log "  fio: $l"; done
}

# ulp_fio_verified FILE SECS [fio options...]: fio for SECS must exit 0
# without a mismatch.  One KTAP result.
ulp_fio_verified() {
	local file=$1 secs=$2 fio_pid rc log=$IWCM_TMP/fio-verified.log
	shift 2
	ulp_fio fio_pid "$log" "$file" "$secs" "$@"
	iwcm_wait "$fio_pid" $((secs + 120))
	rc=$?
	ulp_fio_summary "$log"
	if [ $rc -eq 0 ] && ! ulp_fio_mismatch "$log"; then
		ktap_test_pass "fio ${secs} s, crc32c verified, on $file"
	else
		iwcm_show_log "$log"
		ktap_test_fail "fio ${secs} s, crc32c verified, on $file (exit $rc)"
	fi
}

# ulp_keep_write TARGET [fio options...]: before the unplug, fio writes 16 MB
# of TARGET whole (sequential 64 KB, a crc32c header in each block, fsync at
# the end) and reads nothing back: what the ULP acknowledged before the
# link went, which ulp_kept_verified re-reads once the ULP is back (the
# fio across the unplug may end on an I/O error, after which it verifies
# nothing more).  No KTAP result of its own; ULP_KEPT=1 when written.
ULP_KEPT=0
# (The job both runs share: --verify_only replays it.)
ULP_KEPT_JOB=(--name=kept --size=16M --ioengine=psync --rw=write --bs=64k --direct=1 --verify=crc32c)
ulp_keep_write() {
	local t=$1 log=$IWCM_TMP/fio-kept-write.log
	shift
	ULP_KEPT=0
	if iwcm_bounded 120 fio "${ULP_KEPT_JOB[@]}" --filename="$t" --do_verify=0 --end_fsync=1 "$@" >"$log" 2>&1; then
		ULP_KEPT=1
	else
		iwcm_show_log "$log"
	fi
}
# ulp_kept_verified WHAT TARGET [fio options...]: after the recovery, fio
# re-reads what ulp_keep_write wrote (the same job, --verify_only: every
# block's crc32c), the page cache dropped first.  One KTAP result.
ulp_kept_verified() {
	local what=$1 t=$2 log=$IWCM_TMP/fio-kept-verify.log rc
	shift 2
	if [ "$ULP_KEPT" != 1 ]; then
		ktap_test_fail "$what: 16 MB written before the unplug read back and verified: the write before the unplug failed"
		return
	fi
	echo 3 > /proc/sys/vm/drop_caches
	iwcm_bounded 120 fio "${ULP_KEPT_JOB[@]}" --filename="$t" --verify_only --verify_fatal=1 "$@" >"$log" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && ! ulp_fio_mismatch "$log"; then
		ktap_test_pass "$what: 16 MB written before the unplug read back and verified"
	else
		iwcm_show_log "$log"
		ktap_test_fail "$what: 16 MB written before the unplug read back and verified (fio exit $rc)"
	fi
}

__ulp_relink() {
	rdma link add "$IWCM_RDEV" type siw netdev "$IWCM_NETDEV" &&
		iwcm_wait_for 10 __iwcm_port_active
}

# ulp_unplug_relink FILE [fio options...]: fio on FILE for ULP_FIO_SECS, `rdma link delete`
# 5 s in (bounded by ULP_DELETE_TIMEOUT), the link added again at once
# (then the function named by ULP_ON_RELINK, if set, is called);
# fio's end waited for.  Three KTAP results: the delete returned, the link
# came back, no verify mismatch.  ULP_RELINKED: when the link came back.
ULP_RELINKED=
ulp_unplug_relink() {
	local file=$1 fio_pid drc secs frc log=$IWCM_TMP/fio-unplug.log
	shift
	ulp_fio fio_pid "$log" "$file" "$ULP_FIO_SECS" "$@"
	sleep 5
	ulp_timed secs "$ULP_DELETE_TIMEOUT" rdma link delete "$IWCM_RDEV"
	drc=$?
	ulp_note delete_s "$secs"
	if [ $drc -ne 0 ]; then
		iwcm_diag "rdma link delete: status $drc"
		iwcm_check "rdma link delete under I/O returns (status $drc after $secs s)" false
	else
		iwcm_check "rdma link delete under I/O returns ($secs s)" true
	fi
	if __ulp_relink; then
		ULP_RELINKED=$(__iwcm_now)
		ktap_test_pass "rdma link add $IWCM_RDEV again, port ACTIVE"
		# What an administrator does once the link is back, while fio
		# runs (iser.sh: the portal's listener, gone with the device).
		[ -z "${ULP_ON_RELINK:-}" ] || "$ULP_ON_RELINK"
	else
		ULP_RELINKED=
		ktap_test_fail "rdma link add $IWCM_RDEV again, port ACTIVE"
	fi
	iwcm_wait "$fio_pid" $((ULP_FIO_SECS + ULP_RECOVER_TIMEOUT))
	frc=$?
	[ $frc -ne 124 ] || iwcm_diag "fio still running after the unplug"
	ulp_note fio_unplug_exit "$frc"
	ulp_fio_summary "$log"
	if ulp_fio_mismatch "$log"; then
		iwcm_show_log "$log"
		ktap_test_fail "fio across the unplug: no verify mismatch (exit $frc)"
	elif [ $frc -eq 124 ]; then
		ktap_test_fail "fio across the unplug: ended (still running after $((ULP_FIO_SECS + ULP_RECOVER_TIMEOUT)) s)"
	else
		ktap_test_pass "fio across the unplug: no verify mismatch (exit $frc)"
	fi
}

# ulp_readback TARGET: 8 MB of random data written to TARGET (a mounted
# file system: a file there, with fsync; a block device: at 64 MB, direct
# I/O), the page cache dropped, read back and compared; each step bounded
# to 60 s.
ulp_readback() {
	local t=$1 ref=$IWCM_TMP/readback.ref
	[ -s "$ref" ] || head -c 8M /dev/urandom > "$ref"
	if [ -b "$t" ]; then
		iwcm_bounded 60 dd if="$ref" of="$t" bs=1M seek=64 oflag=direct conv=fsync status=none || return 1
		iwcm_bounded 60 dd if="$t" of="$IWCM_TMP/readback.got" bs=1M skip=64 count=8 iflag=direct status=none || return 1
		cmp -s "$ref" "$IWCM_TMP/readback.got"
		return
	fi
	iwcm_bounded 60 rm -f "$t/readback" 2>/dev/null
	iwcm_bounded 60 dd if="$ref" of="$t/readback" bs=1M conv=fsync status=none || return 1
	echo 3 > /proc/sys/vm/drop_caches
	iwcm_bounded 60 cmp -s "$ref" "$t/readback"
}

# ulp_recovered MNT WHAT [KEY]: the ULP came back once the link did
# (ULP_RELINKED): ulp_readback retried (each try bounded) until
# ULP_RECOVER_TIMEOUT s after that.  One KTAP result; the time from the
# link's return to a good read-back noted as KEY (default recover_s).
ulp_recovered() {
	local mnt=$1 what=$2 key=${3:-recover_s} end ok=0 secs
	if [ -z "$ULP_RELINKED" ]; then
		ktap_test_fail "$what: the link did not come back"
		return
	fi
	end=$((SECONDS + ULP_RECOVER_TIMEOUT))
	while [ $SECONDS -lt $end ]; do
		if ulp_readback "$mnt"; then
			ok=1
			break
		fi
		sleep 1
	done
	secs=$(__iwcm_elapsed "$ULP_RELINKED")
	ulp_note "$key" "$secs"
	if [ $ok -eq 1 ]; then
		ktap_test_pass "$what: 8 MB written and read back ($secs s after the link came back)"
	else
		iwcm_diag "no recovery"
		ktap_test_fail "$what: no good 8 MB read-back within $ULP_RECOVER_TIMEOUT s of the link's return"
	fi
}

# ulp_flaps FILE MNT WHAT [fio options...]: fio on FILE while the netdev goes down for 2 s
# and up again ULP_FLAPS times, 3 s apart; then what fio did (noted), no
# verify mismatch, and a good read-back on MNT afterwards.  Two KTAP
# results.
ulp_flaps() {
	local file=$1 mnt=$2 what=$3 fio_pid frc i log=$IWCM_TMP/fio-flaps.log
	shift 3
	ulp_fio fio_pid "$log" "$file" $((ULP_FLAPS * 5 + 5)) "$@"
	sleep 3
	for ((i = 1; i <= ULP_FLAPS; i++)); do
		ip link set "$IWCM_NETDEV" down
		sleep 2
		ip link set "$IWCM_NETDEV" up
		iwcm_wait_for 10 __iwcm_port_active || iwcm_log "flap $i: port not ACTIVE 10 s after up"
		sleep 3
	done
	iwcm_wait "$fio_pid" $((ULP_FLAPS * 5 + 5 + ULP_RECOVER_TIMEOUT))
	frc=$?
	ulp_note fio_flaps_exit "$frc"
	ulp_fio_summary "$log"
	if ulp_fio_mismatch "$log" || [ $frc -eq 124 ]; then
		iwcm_show_log "$log"
		ktap_test_fail "fio through $ULP_FLAPS link flaps: ended, no verify mismatch (exit $frc)"
	else
		ktap_test_pass "fio through $ULP_FLAPS link flaps: ended, no verify mismatch (exit $frc)"
	fi
	ULP_RELINKED=$(__iwcm_now)
	ulp_recovered "$mnt" "$what after the flaps" flaps_recover_s
}

# ulp_fs_phases OK MNT PORT WHAT: on the file system mounted at MNT (OK 1),
# the phases every file-system ULP goes through: its ids shown, verified
# I/O, a file kept across the unplug, unplug and relink under fio,
# recovery, the kept file verified, flaps.  ULP_FS_RESULTS KTAP results
# (skipped, saying why, when OK is not 1).
ULP_FS_RESULTS=9
ulp_fs_phases() {
	local ok=$1 mnt=$2 port=$3 what=$4 i
	if [ "$ok" -ne 1 ]; then
		for i in $(seq "$ULP_FS_RESULTS"); do ktap_test_skip "not run: no $what mount"; done
		return
	fi
	iwcm_check "the $what connection in the rdma_cm ids$([ "$IWCM_IMPL" = rust ] && echo " and the cm_id table")" \
		ulp_ids_shown "$port"
	ulp_fio_verified "$mnt/fio.dat" 5
	ulp_keep_write "$mnt/kept.dat"
	ulp_unplug_relink "$mnt/fio.dat"
	ulp_recovered "$mnt" "$what recovers after the relink"
	ulp_kept_verified "$what" "$mnt/kept.dat"
	ulp_flaps "$mnt/fio.dat" "$mnt" "$what"
}

# ulp_umount MNT: unmount (bounded; lazily when it fails), timed.  One KTAP
# result (skipped when MNT is not mounted).
ulp_umount() {
	local mnt=$1 secs rc
	if ! mountpoint -q "$mnt"; then
		ktap_test_skip "umount: not mounted"
		return
	fi
	ulp_timed secs 60 umount "$mnt"
	rc=$?
	ulp_note umount_s "$secs"
	if [ $rc -ne 0 ]; then
		umount -l "$mnt"
		iwcm_check "umount (status $rc after $secs s)" false
	else
		iwcm_check "umount ($secs s)" true
	fi
}
