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

# in_lsmod MODULE: loaded (builtins only: it runs inside the window).
in_lsmod() {
	local m _
	while read -r m _; do
		[ "$m" = "$1" ] && return 0
	done < /proc/modules
	return 1
}
refcnt() { cat /sys/module/iw_cm/refcnt 2>/dev/null; }

# Between the client's start and the refused rmmod every step is a shell
# builtin or the one process that does the work (rmmod): under TCG with
# KASAN a process start costs about a second, and siw's MPA timeout is
# 10 s from the client's MPA request.
# __nap: 50 ms without a process (lib.sh).
__nap() { __iwcm_nap 0.05; }
# __now_us: the wall clock in microseconds, from bash's EPOCHREALTIME.
__now_us() { local u; __iwcm_usec u; echo "$u"; }
# __log_has FILE PREFIX: a line of FILE starts with PREFIX; sets LINE.
__log_has() {
	local l
	while IFS= read -r l; do
		[[ $l == "$2"* ]] && { LINE=$l; return 0; }
	done < "$1"
	return 1
}
__wait_log() {	# __wait_log SECONDS FILE PREFIX
	local i
	for ((i = 0; i < $1 * 20; i++)); do
		__log_has "$2" "$3" && return 0
		__nap
	done
	return 1
}

# pin R A: attempt A of round R at one cm_id that only siw holds, with
# rdma_cm and rdma_ucm unloaded: fd_hold.py starts the rping client once
# Python is up, takes its verbs files (so that its QP, whose destruction
# would make siw drop the cm_id at once, outlives it) and kills it as soon
# as its TCP connection to the silent peer is up (siw has sent its MPA
# request); rdma_ucm and rdma_cm are unloaded at once.  Sets n (the live
# cm_ids), ref (iw_cm's module reference count), age_ms (since the
# client's start; siw's MPA timeout runs from its MPA request, which
# comes after), pin_note (what went wrong, if anything).
pin() {
	local r=$1 a=$2 peer hold plog clog hlog t0_us cli
	PORT=$((PORT + 1))
	plog=$IWCM_TMP/peer-$r.$a.log
	clog=$IWCM_TMP/rping-$r.$a.log
	hlog=$IWCM_TMP/hold-$r.$a.log
	n=0 ref=? age_ms=-1 pin_note=
	iwcm_spawn peer "$plog" python3 "$PEER" server silence "$IWCM_ADDR" $PORT --timeout 40
	iwcm_wait_for 60 iwcm_log_has "$plog" "listening on" || iwcm_log "round $r: mpa_peer.py did not start in 60 s"
	: > "$hlog"
	iwcm_spawn hold "$hlog" python3 "$HOLD" --exec "$clog" --kill-connected $PORT \
		rping -c -a "$IWCM_ADDR" -p $PORT -C 1 -v
	if ! __wait_log 60 "$hlog" "spawned "; then
		pin_note="fd_hold.py did not start the client"
		return
	fi
	# "spawned PID at SECONDS.MICROSECONDS"
	t0_us=${LINE##* }
	t0_us=$((10#${t0_us/./}))
	cli=${LINE#spawned }
	cli=${cli%% *}
	if ! __wait_log 20 "$hlog" "killed "; then
		pin_note="fd_hold.py: $(tr '\n' ' ' < "$hlog")"
		return
	fi
	[[ $LINE == *"connected yes" ]] || pin_note="the client had no connection to the peer when killed"
	rmmod rdma_ucm rdma_cm 2>"$IWCM_TMP/rmmod-rdma-$r.log" ||
		pin_note="rmmod rdma_ucm rdma_cm: $(cat "$IWCM_TMP/rmmod-rdma-$r.log")"
	read -r n < "$IWCM_CMIDS" 2>/dev/null || n=0
	read -r ref < /sys/module/iw_cm/refcnt 2>/dev/null || ref=?
	age_ms=$((($(__now_us) - t0_us) / 1000))
	: "$cli"
}

# The part of siw's 10 s MPA timeout that may be gone when the refused
# rmmod is tried: past it siw may drop its reference between the count
# and the rmmod, and a rmmod that goes through then says nothing of iw_cm.
PIN_MAX_AGE_MS=8500

# round R: one pinned cm_id, then the rmmod race.
round() {
	local r=$1 a n ref age_ms pin_note rc tries=0 t0 refused=0 before= why
	# A missed window says nothing of iw_cm (a loaded VM can spend siw's
	# 10 s; CI once saw 0 cm_ids when rdma_cm was gone, and once the count
	# read 1 and the rmmod went through an instant later): the attempt is
	# made again, five times at most, and a round that never gets its
	# pinned cm_id in time fails below.
	for a in 1 2 3 4 5; do
		pin "$r" "$a"
		why=
		if [ -n "$pin_note" ]; then
			why=$pin_note
		elif in_lsmod rdma_cm; then
			why="rdma_cm still loaded"
		elif [ "$n" -le 0 ]; then
			why="siw let the cm_id go before rdma_cm was unloaded"
		elif [ "$age_ms" -ge $PIN_MAX_AGE_MS ]; then
			why="$age_ms ms of siw's 10 s MPA timeout gone already (at most $PIN_MAX_AGE_MS)"
		elif [ "$ref" != "$n" ]; then
			# Every cm_id pins the module: not a slow VM.
			why="iw_cm refcnt $ref != live cm_ids $n"
			break
		else
			# The pin: refused while a cm_id lives, with rdma_cm gone
			# (its symbol dependency would refuse the unload for
			# another reason).  Nothing since the count but this.
			before=$n
			rmmod iw_cm 2>"$IWCM_TMP/rmmod-$r.log" || refused=1
			break
		fi
		iwcm_log "round $r, attempt $a: $why (a slow VM?): again"
		[ "$a" -lt 5 ] || break
		iwcm_stop_all
		in_lsmod rdma_cm || { modprobe rdma_cm && modprobe rdma_ucm; }
	done
	t0=$(__iwcm_now)
	iwcm_log "round $r, attempt $a: ${n:-0} cm_id(s) held by siw, iw_cm refcnt $ref, ${age_ms} ms after the client's start${why:+; $why}"
	if [ -n "$before" ]; then
		if [ $refused -eq 1 ]; then
			iwcm_log "round $r: rmmod iw_cm refused: $(cat "$IWCM_TMP/rmmod-$r.log")"
		else
			iwcm_log "round $r: rmmod iw_cm went through with $before cm_id(s) live"
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
