# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Remote peers that never let a connection be established or used, against
# one kernel or user listener (issue 39; Documentation/iw_cm.rst, "What a
# remote peer can do"): mpa_peer.py's rtr_close and rtr_fin must leave
# nothing behind; rtr_hold, left alone, must be closed by siw's RTR timer
# (rtr_timeout: the test siw's 0012); rtr_hold, silent_hold_long and
# noread_hold are held across a bounded `rdma link delete`; then the
# listener must serve a normal client and keep no id at its port but its
# own.  Used by
# remote_peer.sh (nvmet-rdma, rping), nfs_rdma.sh (nfsd) and
# smb_direct.sh (ksmbd); iser.sh has its own two RTR peers for LIO's
# isert.  Sourced after lib.sh.
#
#   peer_round NAME PORT STOP RESTART CLIENT PDATA
#     STOP      a function run before the delete (a user listener's kill:
#               siw has no disassociate_ucontext), or ""; a user listener
#               (STOP set) keeps its rdma_cm ids until it destroys them
#               (rping's connection thread never does for a connection
#               that closed before ESTABLISHED), so for it "nothing left
#               behind" means no connection in iw_cm's table (ours) at the
#               port but in Idle: the CLOSE was delivered, the QP released
#     RESTART   a function run after the relink (the listener's return)
#     CLIENT    a function: a normal client of the listener, true if served
#     PDATA     the ULP's private data in hex for the peers' requests, or ""
#   PEER_RESULTS: the KTAP results of one peer_round (IWCM_QUICK=1, make
#   check, holds the three silent peers across one delete; make check-all
#   gives each its own).
#   Returns non-zero when the link did not come back.

PEER_PY=$(dirname "$0")/mpa_peer.py
PEER_BOUND=20
PEER_HOLDERS="rtr_hold silent_hold_long noread_hold"
if [ "${IWCM_QUICK:-0}" = 1 ]; then PEER_RESULTS=6; else PEER_RESULTS=8; fi
# siw's RTR timer (MPAREP_TIMEOUT, 5 s; tools/testing/siw/0012) and the
# slack the rtr_timeout case allows it.
PEER_RTR_BOUND=15

# Why a peer is not run here, empty when it runs: what the C iw_cm does
# with it, or, with upstream siw (IWCM_SIW=stock), the oops in siw itself
# that the test siw's 0011 fixes (a panic in softirq: it would end the
# boot, not fail a test).
peer_c_skip() {
	if iwcm_stock_siw && [ "$1" = rtr_fin ]; then
		echo "not with upstream siw (siw_rtr_data_ready oopses on the FIN racing its close work: fixed by $(iwcm_siw_fix 0011))"
		return 0
	fi
	[ "$IWCM_IMPL" = c ] || return 0
	case "$1" in
	rtr_close | rtr_fin | rtr_timeout)
		echo "not with the C iw_cm (siw's CLOSE before ESTABLISHED reaches BUG() in cm_close_handler(), iwcm.c:966; Documentation/iw_cm.rst)" ;;
	rtr_hold)
		echo "not with the C iw_cm (iw_cm_disconnect and destroy_cm_id wait for IWCM_F_CONNECT_WAIT, i.e. for the peer, for good; ending the peer then reaches the BUG(); Documentation/iw_cm.rst)" ;;
	esac
}

# The line a peer prints once it is where the case wants it.
peer_ready_re() {
	case "$1" in
	rtr_*) echo "RTR frame it asked for is never sent" ;;
	noread_hold) echo "the reply is never read" ;;
	*) echo "connected to" ;;
	esac
}

# peer_port_clean PORT: no rdma_cm id at PORT but a listener.
peer_port_clean() {
	! iwcm_dev_cm_ids | grep -E "(src|dst)-addr +[0-9.]+:$1( |$)" | grep -qvE " state +LISTEN( |$)"
}
peer_show_port_ids() {
	iwcm_dev_cm_ids | grep -E "(src|dst)-addr +[0-9.]+:$1( |$)" |
		while IFS= read -r l; do iwcm_log "$2: $l"; done
}

# peer_iwcm_closed PORT: no passive cm_id at PORT in iw_cm's table (ours)
# but in Idle or Destroying: every such connection heard its CLOSE and
# gave its QP back.  (True without the table: the C iw_cm, where the
# cases that use it are skipped.)
PEER_TABLE=/sys/kernel/debug/iw_cm/cm_ids
peer_iwcm_closed() {
	local rows
	[ -r "$PEER_TABLE" ] || return 0
	mapfile -t rows < "$PEER_TABLE"
	[ ${#rows[@]} -eq 0 ] && return 0
	printf '%s\n' "${rows[@]}" |
		awk -v p=":$1" '$2 == "passive" && substr($5, length($5) - length(p) + 1) == p &&
			$3 != "Idle" && $3 != "Destroying" { bad = 1 } END { exit bad }'
}
peer_show_iwcm_rows() {
	[ -r "$PEER_TABLE" ] || return 0
	grep -E "^[0-9]+ passive [A-Za-z]+ [^ ]+ [0-9.]+:$1 " "$PEER_TABLE" |
		while IFS= read -r l; do iwcm_log "$2: $l"; done
}

# peer_closing NAME PORT CASE PDATA...: the peer runs to its end; then
# nothing of its connection may be left at PORT (PEER_USER set, a user
# listener: nothing in iw_cm but Idle ids, see peer_round).  One result.
PEER_USER=
peer_closing() {
	local name=$1 port=$2 c=$3 why log=$IWCM_TMP/$1-$3.log pid clean=peer_port_clean
	shift 3
	[ -n "$PEER_USER" ] && clean=peer_iwcm_closed
	why=$(peer_c_skip "$c")
	if [ -n "$why" ]; then
		ktap_test_skip "$name: peer $c leaves nothing behind: $why"
		return
	fi
	iwcm_spawn pid "$log" python3 "$PEER_PY" client "$c" "$IWCM_ADDR" "$port" --timeout 15 "$@"
	if ! iwcm_wait_for 20 iwcm_log_has "$log" "$(peer_ready_re "$c")"; then
		iwcm_show_log "$log"
		ktap_test_fail "$name: peer $c leaves nothing behind: the listener did not accept its request"
		kill "$pid" 2>/dev/null
		return
	fi
	if iwcm_wait_for 15 "$clean" "$port"; then
		ktap_test_pass "$name: peer $c leaves nothing behind$([ -n "$PEER_USER" ] && echo " in iw_cm (the CLOSE delivered, the QP released)")"
	else
		peer_show_port_ids "$port" left
		peer_show_iwcm_rows "$port" "left in iw_cm"
		iwcm_show_log "$log"
		ktap_test_fail "$name: peer $c leaves nothing behind (still there 15 s later)"
	fi
	iwcm_wait "$pid" 20 >/dev/null || kill "$pid" 2>/dev/null
}

# peer_held_delete NAME PORT STOP PDATA CASES: the CASES peers (those C can
# meet) connected and held, STOP (a function: the user listener's kill,
# or none) then `rdma link delete` within PEER_BOUND s, the link added again.
# One result.  Returns 0 when the link was deleted and added again (the
# listener must be restarted), 1 when it could not come back, 2 when no
# delete was tried (a peer was not accepted, or none could run).
peer_held_delete() {
	local name=$1 port=$2 stop=$3 pdata=$4 cases=$5 c why run= skipped= pids=() pid secs rc
	local what t0
	for c in $cases; do
		why=$(peer_c_skip "$c")
		if [ -n "$why" ]; then
			skipped+=" $c"
			continue
		fi
		local log=$IWCM_TMP/$name-$c-held.log args=()
		[ -n "$pdata" ] && [ "$c" != silent_hold_long ] && args=(--pdata "$pdata")
		iwcm_spawn pid "$log" python3 "$PEER_PY" client "$c" "$IWCM_ADDR" "$port" --timeout 120 "${args[@]}"
		pids+=("$pid")
		if ! iwcm_wait_for 20 iwcm_log_has "$log" "$(peer_ready_re "$c")"; then
			iwcm_show_log "$log"
			ktap_test_fail "$name: rdma link delete with peer(s)$cases held: peer $c was not accepted"
			for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
			return 2
		fi
		run+=" $c"
	done
	what="$name: rdma link delete with peer(s)$run held returns within $PEER_BOUND s"
	[ -n "$skipped" ] && what+=" ($skipped skipped: $(peer_c_skip rtr_hold))"
	if [ -z "$run" ]; then
		ktap_test_skip "$name: rdma link delete with peer(s)$cases held: $(peer_c_skip rtr_hold)"
		return 2
	fi
	# (noread_hold: the listener has accepted once its id is connected.)
	iwcm_wait_for 10 bash -c "rdma resource show cm_id 2>/dev/null | grep -E 'src-addr +[0-9.]+:$port ' | grep -q CONNECT"
	peer_show_port_ids "$port" "with the peers"
	secs=0
	t0=$(__iwcm_now)
	if [ -n "$stop" ]; then
		$stop
		rc=$?
	else
		rc=0
	fi
	if [ $rc -eq 0 ]; then
		iwcm_bounded "$PEER_BOUND" rdma link delete "$IWCM_RDEV"
		rc=$?
	fi
	secs=$(__iwcm_elapsed "$t0")
	iwcm_log "$name: delete with$run held: status $rc after $secs s"
	iwcm_check "$what (took $secs s, status $rc)" [ $rc -eq 0 ]
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
	[ $rc -eq 0 ] || return 1
	rdma link add "$IWCM_RDEV" type siw netdev "$IWCM_NETDEV" &&
		iwcm_wait_for 10 __iwcm_port_active
}

# peer_rtr_timeout NAME PORT PDATA...: the peer rtr_hold, left alone, is
# closed by the listener's side within PEER_RTR_BOUND s (siw's RTR timer:
# CLOSE before ESTABLISHED), and nothing of its connection is left at
# PORT (PEER_USER: nothing in iw_cm but Idle ids).  One result; with
# upstream siw, which keeps no timer for the RTR frame, an XFAIL naming
# the test siw's 0012.
peer_rtr_timeout() {
	local name=$1 port=$2 why log=$IWCM_TMP/$1-rtr_timeout.log pid clean=peer_port_clean
	local what="$1: a peer that never sends the RTR frame it asked for is closed within $PEER_RTR_BOUND s, nothing left behind"
	shift 2
	[ -n "$PEER_USER" ] && clean=peer_iwcm_closed
	why=$(peer_c_skip rtr_timeout)
	if [ -n "$why" ]; then
		ktap_test_skip "$what: $why"
		return
	fi
	# (Its own end, a reset, after the bound and a margin.)
	iwcm_spawn pid "$log" python3 "$PEER_PY" client rtr_hold "$IWCM_ADDR" "$port" \
		--timeout $((PEER_RTR_BOUND + 5)) "$@"
	if ! iwcm_wait_for 20 iwcm_log_has "$log" "$(peer_ready_re rtr_hold)"; then
		iwcm_show_log "$log"
		ktap_test_fail "$what: the listener did not accept its request"
		iwcm_wait "$pid" 30 >/dev/null || kill "$pid" 2>/dev/null
		return
	fi
	if iwcm_wait_for "$PEER_RTR_BOUND" iwcm_log_has "$log" "closed by the listener" &&
		iwcm_wait_for 10 "$clean" "$port"; then
		ktap_test_pass "$what ($(grep -o 'closed by the listener after [0-9.]* s' "$log"))"
	elif iwcm_log_has "$log" "closed by the listener"; then
		peer_show_port_ids "$port" left
		peer_show_iwcm_rows "$port" "left in iw_cm"
		ktap_test_fail "$what: closed, but its connection still there"
	else
		iwcm_show_log "$log"
		iwcm_fail_or_siw_xfail 0012 "$what: still open" "no timer for the RTR frame"
	fi
	# (Not killed: a FIN would be rtr_fin, which upstream siw does not
	# survive.  With upstream siw the connection stays until its reset.)
	iwcm_wait "$pid" 20 >/dev/null || kill "$pid" 2>/dev/null
	iwcm_wait_for 15 "$clean" "$port" || iwcm_log "$name: the rtr_timeout peer's connection outlived its reset"
}

peer_round() {
	local name=$1 port=$2 stop=$3 restart=$4 client=$5 pdata=$6 c linked=1
	local pd=()
	PEER_USER=$stop
	[ -n "$pdata" ] && pd=(--pdata "$pdata")
	for c in rtr_close rtr_fin; do
		peer_closing "$name" "$port" "$c" "${pd[@]}"
	done
	peer_rtr_timeout "$name" "$port" "${pd[@]}"
	local sets=$PEER_HOLDERS set rc
	# (Quick: the holders together, across one delete; else one each.)
	[ "${IWCM_QUICK:-0}" = 1 ] && sets=all
	for set in $sets; do
		[ "$set" = all ] && set=$PEER_HOLDERS
		if [ $linked -eq 0 ]; then
			ktap_test_skip "$name: rdma link delete with peer(s) $set held: the link is gone"
			continue
		fi
		peer_held_delete "$name" "$port" "$stop" "$pdata" " $set"
		rc=$?
		[ $rc -eq 1 ] && linked=0
		[ $rc -eq 0 ] && $restart
	done
	if [ $linked -eq 1 ] && $client; then
		ktap_test_pass "$name: serves a normal client after the peers"
	else
		ktap_test_fail "$name: serves a normal client after the peers$([ $linked -eq 1 ] || echo ": the link did not come back")"
	fi
	if iwcm_wait_for 15 peer_port_clean "$port"; then
		ktap_test_pass "$name: no rdma_cm id at port $port but the listener"
	else
		peer_show_port_ids "$port" left
		ktap_test_fail "$name: no rdma_cm id at port $port but the listener"
	fi
	return $((1 - linked))
}

# peer_round_ulp OK NAME PORT CLIENT WHAT: for a ULP test, after its own
# client has unmounted (OK 1: it had mounted), peer_round against the
# ULP's wildcard listener at PORT (it listens again by itself after the
# relink) once the client's connection is gone; otherwise PEER_RESULTS
# skips saying why (WHAT names the mount).
peer_round_ulp() {
	local ok=$1 name=$2 port=$3 client=$4 what=$5 i why
	if [ "$ok" -eq 1 ] && iwcm_wait_for 30 peer_port_clean "$port"; then
		peer_round "$name" "$port" "" true "$client" ""
		return
	fi
	why="no $what"
	if [ "$ok" -eq 1 ]; then
		why="the client's connection still there"
		peer_show_port_ids "$port" "before the peers"
	fi
	for i in $(seq "$PEER_RESULTS"); do
		ktap_test_skip "$name: remote peers not run ($why)"
	done
}
