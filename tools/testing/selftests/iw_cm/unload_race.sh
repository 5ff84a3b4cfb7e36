#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# rmmod iw_cm against the provider's last cm_id reference (issue 12).
#
# Each round: an rping client connects to a TCP server that never answers
# its MPA request (mpa_peer.py "silence"), so siw holds the client's cm_id
# (add_ref) until its MPA timeout (10 s).  fd_hold.py takes a copy of the
# client's verbs file (pidfd_getfd), so that its QP, whose destruction
# would make siw drop the cm_id at once, outlives the client.  The client
# is killed: rdma_cm destroys its id, iw_destroy_cm_id gives back the
# ULP's reference, and rdma_ucm and rdma_cm are unloaded, so nothing but
# siw's reference keeps that cm_id.  Then:
#   - rmmod iw_cm must be refused while /sys/kernel/debug/iw_cm/cm_ids is
#     non-zero (every cm_id pins the module);
#   - rmmod iw_cm is retried every 20 ms until siw's timeout drops the
#     last reference and the unload goes through; it must succeed with
#     no Oops or other splat (the last count read before it is logged).
# The stack is loaded again after each round; an rping at the end shows a
# clean reload.
#
# The C iw_cm takes no module reference for its cm_ids: unloading it in
# that window frees code siw still calls (rem_ref, the event handler), so
# it runs as SKIP.
. "$(dirname "$0")/lib.sh"

PEER=$(dirname "$0")/mpa_peer.py
HOLD=$(dirname "$0")/fd_hold.py
# (IWCM_QUICK=1, make check: two rounds; make check-all: three.)
ROUNDS=${IWCM_UNLOAD_RACE_ROUNDS:-$([ "${IWCM_QUICK:-0}" = 1 ] && echo 2 || echo 3)}
PORT=7760

iwcm_init unload_race $((1 + 3 * ROUNDS + 1)) rping python3 rmmod insmod
iwcm_setup_or_bail
[ "${IWCM_QUICK:-0}" = 1 ] && iwcm_log "IWCM_QUICK=1: $ROUNDS rounds (make check-all: 3)"

if [ "$IWCM_IMPL" != rust ]; then
	for _ in $(seq $((3 * ROUNDS + 1))); do
		ktap_test_skip "the C iw_cm does not pin itself for its cm_ids: rmmod in this window frees code siw still calls"
	done
	iwcm_finish
fi

in_lsmod() { grep -q "^$1 " /proc/modules; }
refcnt() { cat /sys/module/iw_cm/refcnt 2>/dev/null; }

# pin R A: attempt A of round R at one cm_id that only siw holds, with
# rdma_cm and rdma_ucm unloaded; sets n (the live cm_ids then) and pin_t0
# (when the client was started: siw's MPA timeout runs from its MPA
# request, which comes after).
pin() {
	local r=$1 a=$2 peer hold plog clog hlog sp
	cli=
	PORT=$((PORT + 1))
	plog=$IWCM_TMP/peer-$r.$a.log
	clog=$IWCM_TMP/rping-$r.$a.log
	hlog=$IWCM_TMP/hold-$r.$a.log
	iwcm_spawn peer "$plog" python3 "$PEER" server silence "$IWCM_ADDR" $PORT --timeout 40
	iwcm_wait_for 60 iwcm_log_has "$plog" "listening on" || iwcm_log "round $r: mpa_peer.py did not start in 60 s"
	# The holder starts the client once Python is up (seconds under
	# TCG, which must not come out of siw's 10 s) and takes its verbs
	# files.
	iwcm_spawn hold "$hlog" python3 "$HOLD" --exec "$clog" rping -c -a "$IWCM_ADDR" -p $PORT -C 1 -v
	iwcm_wait_for 30 iwcm_log_has "$hlog" "^spawned [0-9]+ at " || iwcm_log "round $r: fd_hold.py: $(cat "$hlog")"
	sp=$(sed -n 's/^spawned \([0-9]*\) at \([0-9.]*\)$/\1 \2/p' "$hlog")
	cli=${sp% *}
	pin_t0=${sp#* }
	# Connected at TCP level (siw sends its MPA request as soon as the
	# connection is up: it holds the cm_id from then on), verbs files held.
	iwcm_wait_for 10 bash -c "ss -Htn state established '( dport = :$PORT )' | grep -q ." ||
		iwcm_log "round $r: no connection to the peer"
	iwcm_wait_for 10 iwcm_log_has "$hlog" "^held [1-9]" ||
		iwcm_log "round $r: fd_hold.py: $(cat "$hlog")"
	[ -n "$cli" ] && kill -9 "$cli" 2>/dev/null
	[ -n "$cli" ] && iwcm_wait "$cli" 10 >/dev/null
	if ! rmmod rdma_ucm rdma_cm 2>"$IWCM_TMP/rmmod-rdma-$r.log"; then
		iwcm_log "round $r: rmmod rdma_ucm rdma_cm: $(cat "$IWCM_TMP/rmmod-rdma-$r.log")"
	fi
	n=$(iwcm_cm_ids)
	iwcm_log "round $r, attempt $a: rdma_cm gone $(__iwcm_elapsed "${pin_t0:-0}") s after the client's start, $n cm_id(s) held by siw, iw_cm refcnt $(refcnt)"
}

# The seconds of siw's MPA timeout (10 s from the MPA request, which comes
# after the client's start) that may be gone when the refused rmmod is
# tried: past them siw may drop its reference between the count and the
# rmmod, and a rmmod that goes through then says nothing of iw_cm.
PIN_MAX_AGE=9
pin_young() { awk -v a="$(__iwcm_elapsed "${pin_t0:-0}")" -v m=$PIN_MAX_AGE 'BEGIN { exit !(a < m) }'; }

# round R: one pinned cm_id, then the rmmod race.
round() {
	local r=$1 a n rc tries=0 t0 refused=0 before=
	# The window is siw's MPA timeout (10 s) less the set-up after the
	# MPA request; a loaded VM can spend it all (CI once saw 0 cm_ids
	# when rdma_cm was gone).  A missed window says nothing of iw_cm:
	# the attempt is made again, five times at most, and a round that
	# never gets its pinned cm_id fails below.  An attempt whose pin came
	# late in siw's timeout (pin_young) is made again too.
	for a in 1 2 3 4 5; do
		pin "$r" "$a"
		in_lsmod rdma_cm && break
		if [ "${n:-0}" -gt 0 ] && pin_young; then
			break
		elif [ "${n:-0}" -gt 0 ]; then
			iwcm_log "round $r, attempt $a: $(__iwcm_elapsed "$pin_t0") s of siw's 10 s MPA timeout gone already (a slow VM; at most $PIN_MAX_AGE s): again"
		else
			iwcm_log "round $r, attempt $a: siw let the cm_id go before rdma_cm was unloaded (a slow VM): again"
		fi
		[ "$a" -lt 5 ] || { n=0; break; }
		iwcm_stop_all
		modprobe rdma_cm && modprobe rdma_ucm
	done
	t0=$(__iwcm_now)
	# The pin: refused while a cm_id lives, with rdma_cm gone (its symbol
	# dependency would refuse the unload for another reason) and the
	# module's reference count equal to the live cm_ids.
	if in_lsmod rdma_cm || [ "$(refcnt)" != "${n:-0}" ]; then
		iwcm_log "round $r: rdma_cm still loaded or refcnt $(refcnt) != cm_ids ${n:-0}"
	elif [ "${n:-0}" -gt 0 ]; then
		before=$n
		if rmmod iw_cm 2>"$IWCM_TMP/rmmod-$r.log"; then
			iwcm_log "round $r: rmmod iw_cm went through with $n cm_id(s) live"
		else
			refused=1
			iwcm_log "round $r: rmmod iw_cm refused: $(cat "$IWCM_TMP/rmmod-$r.log")"
		fi
	fi
	iwcm_check "round $r: rmmod iw_cm refused while siw holds a cm_id (cm_ids ${before:-0}, attempt $a)" \
		eval '[ "${before:-0}" -gt 0 ] && [ $refused -eq 1 ]'
	# The race: retry until the provider's last rem_ref lets it go.
	rc=1
	while in_lsmod iw_cm; do
		tries=$((tries + 1))
		n=$(iwcm_cm_ids)
		if rmmod iw_cm 2>/dev/null; then
			rc=0
			break
		fi
		[ $tries -lt 3000 ] || break	# 60 s
		sleep 0.02
	done
	in_lsmod iw_cm || rc=0
	iwcm_log "round $r: iw_cm unloaded after $tries tries, $(__iwcm_elapsed "$t0") s after the refused rmmod (cm_ids just before: ${n:-?})"
	iwcm_check "round $r: rmmod iw_cm goes through once siw drops its last reference" [ $rc -eq 0 ]
	iwcm_stop_all
	local splats siwfix=
	splats=$(iwcm_new_splats)
	[ -z "$splats" ] || printf '%s\n' "$splats" | head -20 | while IFS= read -r l; do ktap_print_msg "dmesg: $l"; done
	# With upstream siw, its own reports only (lib.sh): an XFAIL.
	[ -z "$splats" ] || siwfix=$(iwcm_upstream_siw_splats)
	# Reload for the next round (and iwcm_finish's checks).
	load_iw_cm && modprobe rdma_cm && modprobe rdma_ucm
	if [ -n "$siwfix" ] && [ "$(iwcm_loaded_impl)" = rust ]; then
		ktap_test_xfail "round $r: stack reloaded; upstream siw's own report, fixed by $(tr '\n' ' ' <<<"$siwfix" | sed 's/ $//')"
	else
		iwcm_check "round $r: no kernel splat, stack reloaded" eval '[ -z "$splats" ] && [ "$(iwcm_loaded_impl)" = rust ]'
	fi
	IWCM_CMIDS_BASE=$(iwcm_cm_ids)
}

for r in $(seq "$ROUNDS"); do
	round "$r"
done
iwcm_check "reloaded stack carries rping -C 5" iwcm_rping_ok 5
iwcm_finish
