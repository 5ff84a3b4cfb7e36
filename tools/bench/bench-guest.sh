#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Inside the test VM (tools/bench/bench.sh runs it): the C iw_cm and ours
# measured in the same boot, in ABBA order (rounds alternate C,Rust and
# Rust,C so that drift in the VM cancels out).  Each (round, iw_cm) loads
# that iw_cm with rdma_cm, rdma_ucm, the test siw and the siw link, runs
# every measurement below and unloads it again.  Prints one line per
# figure:
#
#   RESULT <impl> <round> <metric> <value>
#
# and "FAILED <impl> <round> <metric> <why>" for one that did not complete
# (the host counts them; a failed figure is never a number).
#
# Metrics (units in the name):
#   cmtime<N>_<step>_us   rdma-core's cmtime -c N (10, 100, 500): microseconds
#                         per connection of its connect, disconnect and
#                         destroy steps (the steps that reach iw_cm)
#   cmtime<N>_wall_s      the cmtime client's wall time
#   ucmatose200_s         ucmatose -c 200 -C 1: 200 connections set up
#                         concurrently, one message each, torn down
#   ib_send_lat_s         perftest's ib_send_lat -R -n 200, the server
#                         started 3 s before the client: the client's wall
#                         time (the case of issue 15's one-off 38.7 s)
#   teardown<Q>_s         `rdma link delete` with the Rust sample ULP
#                         connected with Q queues (1 admin + Q-1 I/O, host
#                         and target in this VM, own queue stopped last: the
#                         variant the C iw_cm survives)
#   hol_ms                head-of-line: the sample target's CONNECT_REQUEST
#                         handler sleeps 5 s (stall_qid=0 stall_ms=5000);
#                         meanwhile an rping pair on another listener
#                         connects and exchanges one message; the figure is
#                         its wall time minus the same pair's without stall
#                         (hol_rping_stalled_ms, hol_rping_alone_ms: both)
#   hol_kernel_ms         the same delay as the kernel sees it: from the
#                         provider's CONNECT_REQUEST upcall for the rping
#                         listener entering iw_cm to rdma_cm entering
#                         rping's handler for it (the rdma_cma:
#                         cm_event_handler tracepoint), in the trace's mono
#                         clock.  The upcall: ours' iw_cm:iw_cm_event_queued
#                         tracepoint; for C, the function tracer on iwcm.c's
#                         cm_event_handler alone (the lean kernel has no
#                         kprobe events; Rust functions have no ftrace
#                         entry).  rping connects the moment the stall
#                         starts (dmesg -W), so C's figure is the stall
#                         left then
#   mem<Q>_bytes_per_id   slab bytes in use (/proc/slabinfo, KASAN's
#                         quarantine emptied first) added by the sample ULP
#                         connected with Q queues per side (idle), per
#                         iw_cm cm_id it holds (2Q + 1 with the listener);
#                         everything but iw_cm is the same code in both
#                         columns, so the difference is iw_cm's (kmemleak's
#                         metadata, one object per allocation, included)
#   scale<N>_<op>_{med,p99}_ns   tools/bench/iw_cm_scale/ (a fake iWARP
#                         provider and ULP driving the loaded iw_cm through
#                         its exported API and the provider upcall) with N
#                         cm_ids alive (one listener, half active and half
#                         passive established connections): median and
#                         99th percentile of each operation, one at a time,
#                         BENCH_SCALE_SAMPLES times: create, connect (to the
#                         handler's CONNECT_REPLY), request (CONNECT_REQUEST
#                         upcall to the accepted child's ESTABLISHED),
#                         disconnect (to CLOSE), destroy, listen
#   scale<N>_bytes_per_id slab bytes in use (as mem<Q>) added by the N ids,
#                         per id (the population grows from the smallest N
#                         to the largest in one run; the module's own
#                         context array is vmalloc'd, not slab)
#   scale<N>_build_ms     time to grow the population to N (informative)
#   irqsoff_table_us      the irqsoff tracer's tracing_max_latency (the
#                         longest interrupts-off section, function-trace
#                         off) while iw_cm/cm_ids is read in full
#                         BENCH_IRQSOFF_READS times with N cm_ids alive
#                         (iw_cm_scale, N = BENCH_IRQSOFF_IDS, 65536); ours
#                         only (the C iw_cm has no table)
#   irqsoff_slabinfo_us   the same while /proc/slabinfo is read as many
#                         times (both columns: a file whose reader walks
#                         the slab lists the N ids sit in under an irqsave
#                         lock, the nearest counterpart the C iw_cm has)
#   irqsoff_churn_us      the same during iw_cm_scale's measure (create,
#                         connect, request, disconnect, destroy, listen,
#                         BENCH_IRQSOFF_SAMPLES each) at N ids
#   irqsoff_<case>_iwcm   1 when the max section starts or ends in, or its
#                         stack passes through, an iw_cm function, else 0
#                         (the section's ends and stack are printed as
#                         "bench: irqsoff" lines; the trace is kept as
#                         irqsoff-<impl>-<round>-<case>.trace in the
#                         results share).  Needs the trace kernel
#                         (IWCM_KFLAVOUR=trace: tools/bench/bench.sh boots
#                         it for this group alone)
#
# Environment: BENCH_ROUNDS (5), BENCH_CMTIME ("10 100 500"),
# BENCH_TEARDOWN ("8 32 64"), BENCH_MEM ("2 50 500" queues: 5, 101 and
# 1001 cm_ids), BENCH_SCALE ("1000 10000 65536" cm_ids),
# BENCH_SCALE_SAMPLES (1000), BENCH_IRQSOFF_IDS (65536),
# BENCH_IRQSOFF_READS (3), BENCH_IRQSOFF_SAMPLES (200), BENCH_GROUPS (the
# metric groups to run, default all: cmtime ucmatose send_lat hol mem
# teardown scale irqsoff, tools/bench/groups.sh; an unknown name is an
# error), BENCH_SKIP (groups to leave out of those).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
export IWCM_TOP=$top
# siw endpoint accounting (lib.sh) logs two lines per endpoint: off for
# benchmark runs.
export IWCM_SIW_EP_CHECK=${IWCM_SIW_EP_CHECK:-0}
if [ -z "${KSELFTEST_DIR:-}" ]; then
	# shellcheck source=/dev/null
	[ -n "${KSRC:-}" ] || . "$top/tools/kernel/env.sh"
	export KSELFTEST_DIR=$KSRC/tools/testing/selftests
fi
# shellcheck source=../testing/selftests/iw_cm/lib.sh
. "$top/tools/testing/selftests/iw_cm/lib.sh"

rust_ko=$IWCM_RUST_KO
rounds=${BENCH_ROUNDS:-5}
cmtime_sizes=${BENCH_CMTIME:-10 100 500}
teardown_sizes=${BENCH_TEARDOWN:-8 32 64}
mem_sizes=${BENCH_MEM:-2 50 500}
scale_sizes=$(echo "${BENCH_SCALE:-1000 10000 65536}" | tr ' ' '\n' | sort -n | uniq | tr '\n' ' ')
scale_samples=${BENCH_SCALE_SAMPLES:-1000}
irqsoff_ids=${BENCH_IRQSOFF_IDS:-65536}
irqsoff_reads=${BENCH_IRQSOFF_READS:-3}
irqsoff_samples=${BENCH_IRQSOFF_SAMPLES:-200}
tr=/sys/kernel/tracing
skip=" ${BENCH_SKIP:-} "
# shellcheck source=groups.sh
. "$here/groups.sh"
groups=" ${BENCH_GROUPS:-$BENCH_ALL_GROUPS} "
for g in $groups; do
	bench_group_needs "$g" >/dev/null || { echo "bench: unknown group '$g' in BENCH_GROUPS (known: $BENCH_ALL_GROUPS)"; exit 2; }
done
sample_ko=${SAMPLE_KO:-$top/samples/rdma/rust_rdma_ulp/rust_rdma_ulp.ko}
scale_ko=$top/tools/bench/iw_cm_scale/iw_cm_scale.ko
dbg=/sys/kernel/debug/rust_rdma_ulp
IWCM_TMP=$(mktemp -d /tmp/bench.XXXXXX)
failed=0
impl=
round=

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
result() { echo "RESULT $impl $round $1 $2"; }
fail() { echo "FAILED $impl $round $1 $2"; failed=$((failed + 1)); }
wanted() { [[ "$groups" == *" $1 "* ]] && [[ "$skip" != *" $1 "* ]]; }
field() { sed -n "s/^$2 //p" "$dbg/$1" 2>/dev/null | head -n1; }
# slab_bytes: bytes of the slab objects in use (/proc/slabinfo: active
# objects x object size, every cache), after each cache was shrunk, which
# also empties KASAN's quarantine of freed objects (kmem_cache_shrink ->
# kasan_cache_shrink): without that, objects freed a moment ago count.
slab_bytes() {
	local f
	for f in /sys/kernel/slab/*/shrink; do echo 1 > "$f"; done 2>/dev/null
	awk 'NR > 2 { s += $2 * $4 } END { printf "%d\n", s }' /proc/slabinfo
}

# unload_stack: the sample, the siw link and everything that holds iw_cm.
unload_stack() {
	[ -d /sys/module/rust_rdma_ulp ] && timeout -k 5 60 rmmod rust_rdma_ulp
	iwcm_teardown >/dev/null 2>&1
	modprobe -r rdma_ucm rdma_cm 2>/dev/null
	if [ -d /sys/module/iw_cm ]; then
		rmmod iw_cm 2>/dev/null || modprobe -r iw_cm 2>/dev/null
	fi
	! [ -d /sys/module/iw_cm ]
}

# load_stack: IWCM_IMPL's iw_cm, rdma_cm, siw and the link.
load_stack() {
	unload_stack || return 1
	IWCM_IMPL=$impl
	IWCM_RUST_KO=$rust_ko
	iwcm_setup >"$IWCM_TMP/setup.log" 2>&1 || { cat "$IWCM_TMP/setup.log"; return 1; }
}

# relink: the siw link again after a `rdma link delete`.
relink() {
	iwcm_teardown >/dev/null 2>&1
	iwcm_setup >"$IWCM_TMP/setup.log" 2>&1 || { cat "$IWCM_TMP/setup.log"; return 1; }
}

# sample_load Q [PARAM=...]: the sample ULP, host and target, Q queues.
sample_load() {
	local q=$1
	shift
	timeout -k 5 120 insmod "$sample_ko" role=both addr="$IWCM_ADDR" \
		nr_io_queues=$((q - 1)) queue_depth=4 "$@" >"$IWCM_TMP/insmod.log" 2>&1 &&
		[ "$(field host live)" = "$q" ]
}

bench_cmtime() {
	local n=$1 clog slog t0 crc wall step us
	slog=$IWCM_TMP/cmtime-s.log
	clog=$IWCM_TMP/cmtime-c.log
	iwcm_spawn srv "$slog" cmtime -b "$IWCM_ADDR" -c "$n"
	if ! iwcm_wait_listen 7471; then
		iwcm_stop_all
		fail "cmtime$n" "server did not listen"
		return
	fi
	t0=$(now)
	timeout -k 5 600 cmtime -s "$IWCM_ADDR" -c "$n" >"$clog" 2>&1
	crc=$?
	wall=$(since "$t0")
	iwcm_stop_all
	if [ $crc -ne 0 ] || grep -qiE "fail|error|event: " "$clog"; then
		fail "cmtime$n" "client exit $crc: $(tail -n1 "$clog")"
		return
	fi
	result "cmtime${n}_wall_s" "$wall"
	# "connect      : 1685.63  330.07  51235.00  16856.27": the last
	# column is microseconds per connection.
	while read -r step us; do
		result "cmtime${n}_${step}_us" "$us"
	done < <(awk -F: '/^(connect|disconnect|destroy) *:/ {
		name = $1; gsub(/ +$/, "", name); n = split($2, f, " "); print name, f[n] }' "$clog")
}

bench_ucmatose() {
	local t0 crc
	iwcm_spawn srv "$IWCM_TMP/ucm-s.log" ucmatose -b "$IWCM_ADDR" -c 200 -C 1
	if ! iwcm_wait_listen 7471; then
		iwcm_stop_all
		fail ucmatose200_s "server did not listen"
		return
	fi
	t0=$(now)
	timeout -k 5 300 ucmatose -s "$IWCM_ADDR" -c 200 -C 1 >"$IWCM_TMP/ucm-c.log" 2>&1
	crc=$?
	local wall
	wall=$(since "$t0")
	iwcm_wait "${IWCM_PIDS[-1]}" 30 >/dev/null
	iwcm_stop_all
	if [ $crc -ne 0 ]; then
		fail ucmatose200_s "client exit $crc: $(tail -n1 "$IWCM_TMP/ucm-c.log")"
		return
	fi
	result ucmatose200_s "$wall"
}

# The pair issue 15 reported once (38.7 s with ours, 9.5 s with C, never
# reproduced since: Documentation/known_issues.rst): perftest's ib_send_lat over
# rdma_cm, the server first, the client 3 s later; the figure is the
# client's wall time.
bench_send_lat() {
	local t0 crc srv
	iwcm_spawn srv "$IWCM_TMP/lat-s.log" ib_send_lat -R -n 200
	sleep 3
	t0=$(now)
	timeout -k 5 120 ib_send_lat -R -n 200 "$IWCM_ADDR" >"$IWCM_TMP/lat-c.log" 2>&1
	crc=$?
	local wall
	wall=$(since "$t0")
	iwcm_wait "$srv" 20 >/dev/null
	iwcm_stop_all
	if [ $crc -ne 0 ]; then
		fail ib_send_lat_s "client exit $crc: $(tail -n1 "$IWCM_TMP/lat-c.log")"
		return
	fi
	result ib_send_lat_s "$wall"
}

bench_teardown() {
	local q=$1 t0 del
	if ! sample_load "$q" own_queue=last; then
		fail "teardown${q}_s" "sample not connected ($(field host live)/$q live): $(tail -n1 "$IWCM_TMP/insmod.log")"
		unload_sample
		relink
		return
	fi
	t0=$(now)
	timeout -k 5 60 rdma link delete "$IWCM_RDEV" >"$IWCM_TMP/delete.log" 2>&1
	del=$?
	local took
	took=$(since "$t0")
	if [ $del -ne 0 ]; then
		fail "teardown${q}_s" "rdma link delete exit $del (124: still blocked after 60 s)"
	else
		result "teardown${q}_s" "$took"
	fi
	unload_sample
	relink
}

unload_sample() {
	[ -d /sys/module/rust_rdma_ulp ] && timeout -k 5 60 rmmod rust_rdma_ulp
	! [ -d /sys/module/rust_rdma_ulp ]
}

# rping_client PORT: one rping client (1 message) against the server
# listening on PORT; its wall time in seconds in $pair_s.
pair_s=
rping_client() {
	local t0 crc
	t0=$(now)
	timeout -k 5 60 rping -c -a "$IWCM_ADDR" -p "$1" -C 1 >"$IWCM_TMP/rping-c-$1.log" 2>&1
	crc=$?
	pair_s=$(since "$t0")
	return $crc
}

# hol_kernel_ms's trace (see the table above): the function tracer on
# iw_cm's own cm_event_handler and rdma_cm's handler tracepoint.
# (Never the function tracer without its filter: every function, under
# KASAN and TCG, would stall the guest.)
hol_trace=
hol_trace_on() {
	hol_trace=
	[ -e $tr/trace ] || mount -t tracefs nodev $tr 2>/dev/null
	if [ ! -e $tr/trace ]; then
		hol_trace="no tracefs at $tr"
		return
	fi
	echo 0 > $tr/tracing_on
	echo mono > $tr/trace_clock
	if ! echo 1 > $tr/events/rdma_cma/cm_event_handler/enable; then
		hol_trace="no rdma_cma:cm_event_handler tracepoint"
	elif [ "$impl" = rust ]; then
		# Ours: its own tracepoint at the upcall (Rust functions have
		# no ftrace entry to trace).
		echo 1 > $tr/events/iw_cm/iw_cm_event_queued/enable ||
			hol_trace="no iw_cm:iw_cm_event_queued tracepoint"
	elif ! echo '*cm_event_handler*:mod:iw_cm' > $tr/set_ftrace_filter 2>/dev/null ||
		! grep -q cm_event_handler $tr/set_ftrace_filter; then
		hol_trace="iwcm.c's cm_event_handler cannot be traced (set_ftrace_filter)"
	else
		echo function > $tr/current_tracer
	fi
	echo > $tr/trace
	echo 1 > $tr/tracing_on
}
hol_trace_off() {
	[ -e $tr/trace ] || return 0
	echo 0 > $tr/tracing_on
	cp $tr/trace "${IWCM_RESULTS:-$IWCM_TMP}/hol-trace-$impl.txt" 2>/dev/null
	echo nop > $tr/current_tracer
	echo > $tr/set_ftrace_filter
	echo 0 > $tr/events/rdma_cma/cm_event_handler/enable 2>/dev/null
	echo 0 > $tr/events/iw_cm/iw_cm_event_queued/enable 2>/dev/null
	echo local > $tr/trace_clock
}
# hol_trace_result PORT: after the marker, the first upcall into iw_cm (the
# sample's ids wait behind the stalled handler, so the first is rping's
# CONNECT_REQUEST) and rdma_cm's CONNECT_REQUEST for PORT's listener.
hol_trace_result() {
	local ms
	if [ -n "$hol_trace" ]; then
		fail hol_kernel_ms "$hol_trace"
		return
	fi
	# The stall ends when the sample's stalled request is answered: the
	# first ESTABLISHED at port 4420 in rdma_cm (the trace starts before
	# the sample's load).  An upcall after that, before the marker or
	# after it, is no measure of the stall: "late".
	ms=$(awk -v port=":$1 " '
		/cm_event_handler: cm\.id=/ && /:4420 / && /ESTABLISHED/ { over = 1 }
		/tracing_mark_write: hol: the handler stalls/ { on = 1; next }
		!on { next }
		{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { t = substr($i, 1, length($i) - 1); break } }
		q == "" && over { print "late"; exit }
		q == "" && (/cm_event_handler <-/ || /iw_cm_event_queued: .*event=CONNECT_REQUEST/) { q = t }
		q != "" && /cm_event_handler: cm\.id=/ && index($0, port) && /CONNECT_REQUEST/ { printf "%.2f", (t - q) * 1000; exit }
	' $tr/trace)
	if [ "$ms" = late ]; then
		fail hol_kernel_ms "the stall was over before rping's request reached iw_cm (trace kept as hol-trace-$impl.txt in the results)"
	elif [ -n "$ms" ]; then
		result hol_kernel_ms "$ms"
	else
		fail hol_kernel_ms "no CONNECT_REQUEST for :$1 after an upcall into iw_cm in the trace ($(grep -c . $tr/trace) lines, kept as hol-trace-$impl.txt in the results)"
	fi
}

# Head-of-line: the rping client's connection (its CONNECT_REPLY and
# ESTABLISHED, the server's CONNECT_REQUEST) started the moment the
# sample's target handler begins its 5 s sleep, against the same without
# a stall.  With one ordered queue for every cm_id (iwcm.c) the rping
# events wait for the sleeping handler; with per-cm_id delivery they do
# not.  Both rping servers listen before anything is measured.
bench_hol() {
	local base ins watch stalled
	iwcm_spawn rs "$IWCM_TMP/rping-s-7600.log" rping -s -a "$IWCM_ADDR" -p 7600 -C 1
	iwcm_spawn rs "$IWCM_TMP/rping-s-7601.log" rping -s -a "$IWCM_ADDR" -p 7601 -C 1
	iwcm_spawn rs "$IWCM_TMP/rping-s-7599.log" rping -s -a "$IWCM_ADDR" -p 7599 -C 1
	if ! iwcm_wait_listen 7599 || ! iwcm_wait_listen 7600 || ! iwcm_wait_listen 7601; then
		fail hol_ms "rping servers did not listen"
		iwcm_stop_all
		return
	fi
	# A first pair warms up (the first user context on the device is
	# slower); the second is the baseline.
	if ! rping_client 7599 || ! rping_client 7600; then
		fail hol_ms "rping without stall failed"
		iwcm_stop_all
		return
	fi
	base=$pair_s
	hol_trace_on
	# The moment the target's handler starts to sleep, from the kernel log
	# as it is written (kmsg_then.py: /dev/kmsg from its end), so that the
	# rping connection starts at the beginning of the stall rather than
	# after a look at the whole log (seconds under TCG: the traced delay is
	# then the stall left when rping's request arrives).  (Not dmesg -W
	# into a pipe: its output is block-buffered, stdbuf or not; on
	# Debian's kernel the line reached grep 3 s after the stall ended.)
	rm -f "$IWCM_TMP/hol.ready"
	python3 "$top/tools/testing/selftests/iw_cm/kmsg_then.py" "$IWCM_TMP/hol.ready" \
		"CONNECT_REQUEST handler stalls" 60 true &
	watch=$!
	iwcm_wait_for 30 test -e "$IWCM_TMP/hol.ready" || iwcm_log "kmsg_then.py not ready in 30 s"
	# The stalled handler: the host's admin queue connect waits for it.
	timeout -k 5 60 insmod "$sample_ko" role=both addr="$IWCM_ADDR" nr_io_queues=1 \
		queue_depth=4 stall_qid=0 stall_ms=5000 >"$IWCM_TMP/insmod.log" 2>&1 &
	ins=$!
	wait "$watch"
	stalled=$?
	if [ $stalled -ne 0 ]; then
		fail hol_ms "the sample's handler did not stall (kmsg_then.py status $stalled)"
	elif ! { [ -n "$hol_trace" ] || echo "hol: the handler stalls" > $tr/trace_marker; } ||
		! rping_client 7601; then
		fail hol_ms "rping during the stall failed (or the trace marker could not be written)"
	else
		result hol_ms "$(awk -v a="$base" -v b="$pair_s" 'BEGIN { printf "%.0f", (b - a) * 1000 }')"
		result hol_rping_stalled_ms "$(awk -v b="$pair_s" 'BEGIN { printf "%.0f", b * 1000 }')"
		result hol_rping_alone_ms "$(awk -v a="$base" 'BEGIN { printf "%.0f", a * 1000 }')"
		hol_trace_result 7601
	fi
	hol_trace_off
	iwcm_stop_all
	wait "$ins"
	unload_sample
}

bench_mem() {
	local q=$1 s0 s1 ids
	unload_sample
	sync
	echo 2 > /proc/sys/vm/drop_caches
	sleep 1
	s0=$(slab_bytes)
	if ! sample_load "$q"; then
		fail "mem${q}_bytes_per_id" "sample not connected ($(field host live)/$q live): $(tail -n1 "$IWCM_TMP/insmod.log")"
		unload_sample
		return
	fi
	sleep 1
	s1=$(slab_bytes)
	ids=$((2 * q + 1))
	result "mem${q}_bytes_per_id" "$(( (s1 - s0) / ids ))"
	unload_sample
}

# The scale figures: tools/bench/iw_cm_scale/ on the loaded iw_cm, the
# population grown through BENCH_SCALE (ascending), the operations measured
# at each size, then everything torn down.
bench_scale() {
	local n s0 s1 t0 max=0 sdir=/sys/kernel/debug/iw_cm_scale m v
	for n in $scale_sizes; do max=$n; done
	if ! insmod "$scale_ko" max_ids="$max" 2>"$IWCM_TMP/scale.log"; then
		fail scale "insmod iw_cm_scale: $(tail -n1 "$IWCM_TMP/scale.log")"
		return
	fi
	sync
	echo 2 > /proc/sys/vm/drop_caches
	s0=$(slab_bytes)
	for n in $scale_sizes; do
		t0=$(now)
		if ! echo "build $n" > "$sdir/ctl"; then
			fail "scale$n" "build: $(grep '^error' "$sdir/result" | tail -n1)"
			break
		fi
		echo "bench: scale $n cm_ids built in $(since "$t0") s"
		s1=$(slab_bytes)
		result "scale${n}_bytes_per_id" "$(( (s1 - s0) / n ))"
		t0=$(now)
		if ! echo "measure $scale_samples" > "$sdir/ctl"; then
			fail "scale$n" "measure: $(grep '^error' "$sdir/result" | tail -n1)"
			break
		fi
		echo "bench: scale $n cm_ids measured ($scale_samples samples) in $(since "$t0") s"
	done
	t0=$(now)
	echo teardown > "$sdir/ctl" || fail scale "teardown: $(grep '^error' "$sdir/result" | tail -n1)"
	echo "bench: scale torn down in $(since "$t0") s"
	while read -r m v; do
		[ "$m" = error ] || result "$m" "$v"
	done < "$sdir/result"
	rmmod iw_cm_scale || fail scale "rmmod iw_cm_scale"
}

# irqsoff_start: the irqsoff tracer armed, its maximum reset.  The
# function-trace option is off: with it every function called with
# interrupts off is traced, which lengthens the very sections measured.
irqsoff_start() {
	echo 0 > $tr/tracing_on
	echo irqsoff > $tr/current_tracer || echo "bench: irqsoff: cannot select the irqsoff tracer"
	[ ! -e $tr/options/function-trace ] || echo 0 > $tr/options/function-trace
	echo 0 > $tr/tracing_max_latency
	echo 1 > $tr/tracing_on
}

# irqsoff_stop CASE: the tracer stopped; the maximum as irqsoff_CASE_us,
# whether iw_cm is in that section as irqsoff_CASE_iwcm; the section's
# ends and stack as "bench: irqsoff" lines, the trace into the results
# share.
irqsoff_stop() {
	local c=$1 us t
	echo 0 > $tr/tracing_on
	us=$(cat $tr/tracing_max_latency)
	t=$IWCM_TMP/irqsoff-$c.trace
	cat $tr/trace > "$t"
	echo nop > $tr/current_tracer
	[ -d /mnt/results ] && cp "$t" "/mnt/results/irqsoff-$impl-$round-$c.trace"
	case "$us" in
	'' | *[!0-9]*) fail "irqsoff_${c}_us" "tracing_max_latency: '$us'"; return ;;
	esac
	result "irqsoff_${c}_us" "$us"
	# "=> started at: X", "=> ended at: Y", then the stack ("=> fn").
	sed -n 's/^#* *=> \(started at\|ended at\): */\1 /p' "$t" | while read -r l; do
		echo "bench: irqsoff $impl $c ${us} us: $l"
	done
	echo "bench: irqsoff $impl $c stack: $(sed -n 's/^ *=> \([^:]*\)$/\1/p' "$t" | head -n 12 | tr '\n' ' ')"
	if grep -E '=>' "$t" | grep -qE 'iw_cm|iwcm|iw_create_cm_id|iw_destroy_cm_id|cm_work_handler'; then
		result "irqsoff_${c}_iwcm" 1
	else
		result "irqsoff_${c}_iwcm" 0
	fi
}

# irqtask CASE CMD: the longest interrupts-off section of the task that
# runs CMD (a shell string, run by a bash whose pid the trace follows),
# from the irq_disable/irq_enable events (CONFIG_PREEMPTIRQ_TRACEPOINTS,
# the irqsoff tracer's own hooks) filtered by set_event_pid: unlike
# tracing_max_latency, which is the longest section of any task, timer and
# kworker included, this is the longest one the caller's own work causes.
# A section that an interrupt's entry began (caller irqentry_*) is the
# interrupt's, not the task's: counted apart; one that __schedule began
# is a context switch (interrupts go back on in finish_task_switch once
# the task runs again, and the tasks in between are not traced): left out.  Results irqtask_CASE_us
# (the longest task section, us), irqtask_CASE_irq_us (the longest
# interrupt section in that task), irqtask_CASE_n (task sections seen);
# "bench: irqtask" lines give the longest one's ends.  A ring buffer that
# overran would leave sections out: then the case fails.
irqtask() {
	local c=$1 cmd=$2 t ev=$tr/events/preemptirq v us irq_us n p50 p99 p999 over b e
	if [ ! -d $ev/irq_disable ]; then
		fail "irqtask_${c}_us" "no preemptirq events (CONFIG_PREEMPTIRQ_TRACEPOINTS)"
		return
	fi
	echo 0 > $tr/tracing_on
	echo nop > $tr/current_tracer
	echo 32768 > $tr/buffer_size_kb
	: > $tr/trace
	echo 1 > $ev/irq_disable/enable
	echo 1 > $ev/irq_enable/enable
	bash -c "echo \$\$ > $tr/set_event_pid && echo 1 > $tr/tracing_on && $cmd"
	echo 0 > $tr/tracing_on
	echo 0 > $ev/irq_disable/enable
	echo 0 > $ev/irq_enable/enable
	: > $tr/set_event_pid
	t=$IWCM_TMP/irqtask-$c.trace
	cat $tr/trace > "$t"
	: > $tr/trace
	[ -d /mnt/results ] && gzip -c "$t" > "/mnt/results/irqtask-$impl-$round-$c.trace.gz"
	if grep -q "overrun: [1-9]" $tr/per_cpu/cpu*/stats; then
		fail "irqtask_${c}_us" "the trace buffer overran: sections left out"
		return
	fi
	# Per CPU: a disable opens a section, the next enable closes it.
	v=$(awk -v durs="$t.durs" '
		/ irq_disable: / {
			split($0, a, "]"); cpu = a[1]; sub(/.*\[/, "", cpu)
			ts = $0; sub(/: irq_disable:.*/, "", ts); sub(/.* /, "", ts)
			c = $0; sub(/.*caller=/, "", c); sub(/ .*/, "", c)
			t0[cpu] = ts; by[cpu] = c; next
		}
		/ irq_enable: / {
			split($0, a, "]"); cpu = a[1]; sub(/.*\[/, "", cpu)
			if (!(cpu in t0)) next
			ts = $0; sub(/: irq_enable:.*/, "", ts); sub(/.* /, "", ts)
			e = $0; sub(/.*caller=/, "", e); sub(/ .*/, "", e)
			d = (ts - t0[cpu]) * 1000000
			if (by[cpu] ~ /^__schedule\+/) {
				# A context switch: the task left the CPU with
				# interrupts off and another one (not traced) ran
				# until this task came back.
				sw++
			} else if (by[cpu] ~ /^(irqentry|asm_|sysvec|__sysvec|exc_|common_interrupt)/) {
				if (d > irq) irq = d
			} else {
				n++
				printf "%d\n", d + 0.5 > durs
				if (d > 50) over++
				if (d > mx) { mx = d; mb = by[cpu]; me = e }
			}
			delete t0[cpu]
		}
		END {
			printf "%d %d %d %d %s %s\n", mx + 0.5, irq + 0.5, n, over,
				(mb == "" ? "-" : mb), (me == "" ? "-" : me)
		}
	' "$t")
	read -r us irq_us n over b e <<<"$v"
	if [ "${n:-0}" -eq 0 ]; then
		fail "irqtask_${c}_us" "no interrupts-off section of the task in the trace"
		return
	fi
	# The task sections' percentiles (nearest rank).
	sort -n "$t.durs" > "$t.sorted" 2>/dev/null
	p50=$(sed -n "$(( (n + 1) / 2 ))p" "$t.sorted")
	p99=$(sed -n "$(( (n * 99 + 99) / 100 ))p" "$t.sorted")
	p999=$(sed -n "$(( (n * 999 + 999) / 1000 ))p" "$t.sorted")
	rm -f "$t.durs" "$t.sorted"
	result "irqtask_${c}_us" "$us"
	result "irqtask_${c}_irq_us" "$irq_us"
	result "irqtask_${c}_n" "$n"
	result "irqtask_${c}_p50_us" "$p50"
	result "irqtask_${c}_p99_us" "$p99"
	result "irqtask_${c}_p999_us" "$p999"
	result "irqtask_${c}_over50" "$over"
	echo "bench: irqtask $impl $c ${us} us (of $n task sections: p50 $p50, p99 $p99, p99.9 $p999 us, $over over 50 us; interrupts' longest ${irq_us} us): began at $b, ended at $e"
}

# The irqsoff figures (trace kernel): N live cm_ids from iw_cm_scale, the
# tracer armed around reads of iw_cm/cm_ids (ours), of /proc/slabinfo
# (both) and around iw_cm_scale's churn (both).
bench_irqsoff() {
	local sdir=/sys/kernel/debug/iw_cm_scale t0
	# The VM's init mounts debugfs only.
	[ -e $tr/available_tracers ] || mount -t tracefs nodev $tr 2>/dev/null
	if ! grep -qw irqsoff $tr/available_tracers 2>/dev/null; then
		fail irqsoff "no irqsoff tracer in this kernel (IWCM_KFLAVOUR=trace)"
		return
	fi
	if ! insmod "$scale_ko" max_ids="$irqsoff_ids" 2>"$IWCM_TMP/scale.log"; then
		fail irqsoff "insmod iw_cm_scale: $(tail -n1 "$IWCM_TMP/scale.log")"
		return
	fi
	t0=$(now)
	if ! echo "build $irqsoff_ids" > "$sdir/ctl"; then
		fail irqsoff "build: $(grep '^error' "$sdir/result" | tail -n1)"
		echo teardown > "$sdir/ctl"
		rmmod iw_cm_scale
		return
	fi
	echo "bench: irqsoff $irqsoff_ids cm_ids built in $(since "$t0") s"
	if [ "$impl" = rust ]; then
		local n
		n=$(($(wc -l < /sys/kernel/debug/iw_cm/cm_ids)))
		echo "bench: irqsoff iw_cm/cm_ids has $n lines"
		irqsoff_start
		t0=$(now)
		for _ in $(seq 1 "$irqsoff_reads"); do cat /sys/kernel/debug/iw_cm/cm_ids > /dev/null; done
		echo "bench: irqsoff $irqsoff_reads reads of iw_cm/cm_ids in $(since "$t0") s"
		irqsoff_stop table
		irqtask table "exec cat /sys/kernel/debug/iw_cm/cm_ids > /dev/null"
	fi
	irqsoff_start
	for _ in $(seq 1 "$irqsoff_reads"); do cat /proc/slabinfo > /dev/null; done
	irqsoff_stop slabinfo
	irqtask slabinfo "exec cat /proc/slabinfo > /dev/null"
	irqsoff_start
	t0=$(now)
	echo "measure $irqsoff_samples" > "$sdir/ctl" ||
		fail irqsoff_churn_us "measure: $(grep '^error' "$sdir/result" | tail -n1)"
	echo "bench: irqsoff churn ($irqsoff_samples samples) in $(since "$t0") s"
	irqsoff_stop churn
	irqtask churn "echo 'measure $irqsoff_samples' > $sdir/ctl"
	echo teardown > "$sdir/ctl" || fail irqsoff "teardown: $(grep '^error' "$sdir/result" | tail -n1)"
	rmmod iw_cm_scale || fail irqsoff "rmmod iw_cm_scale"
}

run_round() {
	local n q
	if ! load_stack; then
		fail stack "cannot load the $impl iw_cm stack"
		return
	fi
	for d in $(modinfo -F depends "$sample_ko" 2>/dev/null | tr , ' '); do
		modprobe "$d"
	done
	if wanted cmtime; then
		for n in $cmtime_sizes; do bench_cmtime "$n"; done
	fi
	wanted ucmatose && bench_ucmatose
	wanted send_lat && bench_send_lat
	wanted hol && bench_hol
	if wanted mem; then
		for q in $mem_sizes; do bench_mem "$q"; done
	fi
	if wanted teardown; then
		for q in $teardown_sizes; do bench_teardown "$q"; done
	fi
	wanted scale && bench_scale
	wanted irqsoff && bench_irqsoff
}

echo "bench: kernel $(uname -r), $rounds ABBA rounds"
# kmemleak's automatic scan (60 s after boot, then every 10 min) walks all
# of memory, for tens of seconds under TCG, slowing whichever figure runs
# then (it fell on the C iw_cm's scale figures in a trial run); off for
# the benchmark.  The VM's own scan at the end still reports leaks.
[ -e /sys/kernel/debug/kmemleak ] && echo scan=off > /sys/kernel/debug/kmemleak
for round in $(seq 1 "$rounds"); do
	if [ $((round % 2)) -eq 1 ]; then order="c rust"; else order="rust c"; fi
	for impl in $order; do
		echo "bench: round $round, $impl iw_cm, at $(cut -d' ' -f1 /proc/uptime) s"
		run_round
	done
done
impl=all round=0
unload_stack || fail stack "cannot unload the last stack"
rm -rf "$IWCM_TMP"
echo "bench: $failed failed figure(s)"
[ $failed -eq 0 ]
