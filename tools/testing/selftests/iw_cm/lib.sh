# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Shared helpers of the iw_cm selftests: KTAP output (the kernel's own
# ktap_helpers.sh), siw on a dummy netdev, the iw_cm implementation under
# test, background processes, and the leak / splat checks every test ends
# with.
#
# Environment:
#   IWCM_IMPL     c (default): the C iw_cm (modprobe iw_cm: the kernel's,
#                 or with IWCM_C_IWCM=iwpm-fixed the VM's replacement,
#                 tools/testing/iw_cm_c/)
#                 rust: our module, insmod $IWCM_TOP/drivers/infiniband/core/iw_cm/iw_cm.ko
#   IWCM_TOP      repository root (default: four levels above this file)
#   IWCM_ADDR     IPv4 address of the siw netdev (default 192.168.77.1)
#
# A test script: source this file, call iwcm_init "name" PLAN, then
# iwcm_setup, run its checks with ktap_test_pass/ktap_test_fail (or
# iwcm_check), and end with iwcm_finish.

IWCM_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The kernel's KTAP helpers: installed layout (BASE_DIR/kselftest/) first,
# then the kernel source of the test kernel.
__iwcm_find_ktap() {
	local c
	for c in "${BASE_DIR:+$BASE_DIR/kselftest/ktap_helpers.sh}" \
		 "$IWCM_LIB_DIR/../kselftest/ktap_helpers.sh" \
		 "${KSELFTEST_DIR:+$KSELFTEST_DIR/kselftest/ktap_helpers.sh}" \
		 "${KSRC:+$KSRC/tools/testing/selftests/kselftest/ktap_helpers.sh}"; do
		[ -n "$c" ] && [ -r "$c" ] && { echo "$c"; return 0; }
	done
	return 1
}
if ! __iwcm_ktap=$(__iwcm_find_ktap); then
	echo "TAP version 13"
	echo "1..0 # SKIP kselftest/ktap_helpers.sh not found (set KSELFTEST_DIR)"
	exit 4
fi
# shellcheck source=/dev/null
. "$__iwcm_ktap"

IWCM_IMPL=${IWCM_IMPL:-c}
IWCM_ADDR=${IWCM_ADDR:-192.168.77.1}
IWCM_PREFIX=${IWCM_PREFIX:-24}
IWCM_NETDEV=${IWCM_NETDEV:-dummy0}
IWCM_RDEV=${IWCM_RDEV:-siw0}
# The live cm_id count of the Rust iw_cm (debugfs iw_cm/cm_ids is the table).
IWCM_CMIDS=/sys/kernel/debug/iw_cm/count
# The repository (for the Rust module); guest-tests.sh exports it, which
# matters once the tests are installed elsewhere.
IWCM_TOP=${IWCM_TOP:-$(cd "$IWCM_LIB_DIR/../../../.." && pwd)}
IWCM_RUST_KO=${IWCM_RUST_KO:-$IWCM_TOP/drivers/infiniband/core/iw_cm/iw_cm.ko}
# Module parameters for the Rust iw_cm's insmod.
IWCM_RUST_PARAMS=${IWCM_RUST_PARAMS:-}
# Its KUnit suite, a module of its own loaded only by kunit.sh, and that
# module's parameters (make check's KUnit boot: stress_lifecycles=75000).
IWCM_KUNIT_KO=${IWCM_KUNIT_KO:-$IWCM_TOP/drivers/infiniband/core/iw_cm/iw_cm_kunit.ko}
IWCM_KUNIT_PARAMS=${IWCM_KUNIT_PARAMS:-}
# The test provider: the kernel's siw with tools/testing/siw/*.patch
# (tools/testing/siw/build.sh).  IWCM_SIW=stock uses the kernel's siw.ko.
IWCM_SIW=${IWCM_SIW:-patched}
IWCM_SIW_KO=${IWCM_SIW_KO:-$IWCM_TOP/tools/testing/siw/build/siw.ko}
# siw endpoint accounting: load_siw turns on siw's dynamic debug lines for
# an endpoint's allocation and its free (siw_cep_alloc "new endpoint",
# __siw_cep_dealloc "free endpoint"), and iwcm_finish fails the teardown
# result when an endpoint allocated since setup is not freed after the
# link is gone (siw keeps no count of its own; kmemleak sees a leaked
# endpoint only once its device's memory is gone, and not reliably).
# IWCM_SIW_EP_CHECK=0 turns it off.
IWCM_SIW_EP_CHECK=${IWCM_SIW_EP_CHECK:-1}
IWCM_SIW_DYNDBG_EP='func siw_cep_alloc +p; func __siw_cep_dealloc +p'

IWCM_PIDS=()
IWCM_SETUP_DONE=0
IWCM_CMIDS_BASE=
IWCM_DMESG_MARK=
IWCM_T0=0
IWCM_NAME=
IWCM_TMP=

iwcm_log() { ktap_print_msg "$*"; }

# Under TCG with KASAN every process start costs 0.2-0.8 s (measured in
# the test VM: /bin/true 0.18 s, date 0.5 s, grep 0.6 s, rdma 0.6 s), so
# the helpers that poll (iwcm_wait, iwcm_wait_for, iwcm_rdma_query and the
# checks built on them) use shell builtins only, apart from the one
# command that does the work.

# Seconds since the epoch with sub-second precision (bash's clock).
__iwcm_now() { echo "$EPOCHREALTIME"; }
# __iwcm_usec VAR [TIME]: VAR = TIME (seconds[.fraction], default now) in
# microseconds.
__iwcm_usec() {
	local t=${2-$EPOCHREALTIME} f=000000
	t=${t/,/.}	# (EPOCHREALTIME has the locale's decimal point)
	[[ $t =~ ^[0-9]*(\.[0-9]*)?$ && $t == *[0-9]* ]] ||
		{ iwcm_log "__iwcm_usec: not a number of seconds: '$t'" >&2; t=0; }
	[ "$t" != "${t#*.}" ] && f=${t#*.}000000
	t=0${t%%.*}
	printf -v "$1" '%d' $((10#$t * 1000000 + 10#${f:0:6}))
}
# __iwcm_elapsed T0: seconds since T0 (one decimal).
__iwcm_elapsed() {
	local a b
	__iwcm_usec a "$1"
	__iwcm_usec b
	b=$((b - a))
	printf '%d.%d' $((b / 1000000)) $((b % 1000000 / 100000))
}
# __iwcm_nap SECONDS: sleep without a process (a read that times out on
# a pipe nobody writes, opened read-write so that it never ends).
exec {IWCM_NAP_FD}<> <(:)
__iwcm_nap() {
	read -rt "$1" -u "$IWCM_NAP_FD" _ 2>/dev/null
	# (>128: timed out.  Else the fd is gone: sleep rather than spin.)
	[ $? -gt 128 ] || sleep "$1"
}

# Skip the whole test (exit 4) with a reason.
# Callable before or after iwcm_init has printed the plan.
iwcm_skip_all() {
	ktap_print_header
	if [ "$IWCM_PLAN_DONE" = 1 ]; then
		ktap_print_msg "SKIP: $*"
		ktap_print_totals
	else
		ktap_skip_all "$*"
	fi
	exit "$KSFT_SKIP"
}

# The KTAP header once per test, whoever asks first.
IWCM_HDR_DONE=0
IWCM_PLAN_DONE=0
ktap_print_header() {
	[ "$IWCM_HDR_DONE" = 1 ] && return 0
	IWCM_HDR_DONE=1
	echo "TAP version 13"
}

# iwcm_init NAME PLAN [CMD...]: skip (exit 4) unless root and every CMD is
# installed; else the KTAP header and plan, temp dir, signal handling.  The
# plan counts the test's own results plus the IWCM_FINISH_CHECKS results
# iwcm_finish adds.
IWCM_FINISH_CHECKS=3
iwcm_init() {
	IWCM_NAME=$1
	local plan=$2 c
	shift 2
	IWCM_T0=$(__iwcm_now)
	[ "$EUID" -eq 0 ] || iwcm_skip_all "$IWCM_NAME: needs root"
	for c in rdma ip modprobe "$@"; do
		command -v "$c" >/dev/null 2>&1 ||
			iwcm_skip_all "$IWCM_NAME: $c not installed (iproute2, kmod, rdma-core, rdmacm-utils, ibverbs-utils, perftest)"
	done
	ktap_print_header
	ktap_set_plan $((plan + IWCM_FINISH_CHECKS))
	IWCM_PLAN_DONE=1
	IWCM_TMP=$(mktemp -d "/tmp/iwcm-$IWCM_NAME.XXXXXX")
	trap '__iwcm_on_signal' TERM INT
	iwcm_log "$IWCM_NAME: IWCM_IMPL=$IWCM_IMPL addr $IWCM_ADDR, logs in $IWCM_TMP"
}

# iwcm_require_cmd CMD...: skip the test (exit 4) when a tool is not
# installed.  Prefer the CMD list of iwcm_init, which checks before the
# plan is printed.
iwcm_require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 ||
			iwcm_skip_all "$IWCM_NAME: $c not installed"
	done
}

# The state of every process of this test (and of any task in D state):
# what a hang diagnosis needs, printed before the cleanup kills them.
__iwcm_dump_tasks() {
	local d p
	iwcm_log "tasks of $IWCM_NAME (pid $$) at $(__iwcm_elapsed "$IWCM_T0") s:"
	timeout 10 ps -eo pid,ppid,stat,etimes,time,wchan:32,args 2>/dev/null |
		awk -v me=$$ 'NR == 1 || $2 == me || $1 == me || $3 ~ /^D/' |
		while IFS= read -r l; do iwcm_log "  $l"; done
	iwcm_log "  most CPU time (a spinning task slows every poll under TCG):"
	timeout 10 ps -eo pid,stat,time,comm --sort=-time 2>/dev/null | head -n 6 |
		while IFS= read -r l; do iwcm_log "  $l"; done
	# Every thread of the test's children (rping, perftest: a CM and a CQ
	# thread each), any task in D state, and any kworker that is running
	# a work item (its stack is more than the idle worker_thread).
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		if [ "$p" = $$ ] || [ "$(cut -d' ' -f4 "$d/stat" 2>/dev/null)" = $$ ] ||
				grep -q '^State:.*D' "$d/status" 2>/dev/null; then
			__iwcm_dump_threads "$d"
		elif grep -q '^kworker' "$d/comm" 2>/dev/null &&
				timeout 2 grep -qvE 'worker_thread|rescuer_thread|kthread|ret_from_fork|schedule|^\[<0>\] *$' "$d/stack" 2>/dev/null; then
			__iwcm_dump_threads "$d"
		fi
	done
}

# The kernel stack of every thread of process directory D.
__iwcm_dump_threads() {
	local t
	for t in "$1"/task/[0-9]*; do
		iwcm_log "  stack of ${1#/proc/}/${t##*/} ($(timeout 2 cat "$t/comm" 2>/dev/null), $(grep '^State:' "$t/status" 2>/dev/null | tr -s '\t ' ' ')):"
		timeout 5 sed 's/^/    /' "$t/stack" 2>/dev/null |
			while IFS= read -r l; do iwcm_log "$l"; done
	done
}

# iwcm_diag LABEL: what a stalled connection needs for a diagnosis, taken
# when a wait fails (before the cleanup kills anything): every rdma_cm id
# and QP of the device with its state, the TCP sockets on the siw link
# (siw's own, without a process), and the tasks' kernel stacks.
iwcm_diag() {
	local l
	iwcm_log "diag ($1) at $(__iwcm_elapsed "$IWCM_T0") s:"
	iwcm_rdma_query resource show cm_id | while IFS= read -r l; do iwcm_log "  cm_id: $l"; done
	iwcm_rdma_query resource show qp | while IFS= read -r l; do iwcm_log "  qp: $l"; done
	timeout 10 ss -tanoe 2>/dev/null | grep -F "$IWCM_ADDR" | head -n 20 |
		while IFS= read -r l; do iwcm_log "  tcp: $l"; done
	__iwcm_dump_tasks
}

# iwcm_fail_note TEXT: log TEXT and keep it for the recap iwcm_finish
# prints next to the totals (the end of a long log is what gets read).
IWCM_FAIL_NOTES=()
iwcm_fail_note() {
	iwcm_log "$*"
	IWCM_FAIL_NOTES+=("$*")
}

# iwcm_watchdog SECONDS LABEL: in the background, dump the test's tasks
# (and any task in D state) with their kernel stacks if the watchdog is
# still armed after SECONDS: a stall is diagnosed while it lasts, not after
# the runner's timeout has killed everything.  iwcm_watchdog_stop disarms.
iwcm_watchdog() {
	iwcm_watchdog_stop
	# (the sleep holds no output pipe open and dies with the watchdog)
	(
		sleep "$1" >/dev/null 2>&1 &
		s=$!
		trap 'kill $s 2>/dev/null; exit 0' TERM
		wait $s && { iwcm_log "watchdog: $2 still running after $1 s"; __iwcm_dump_tasks; } >&2
	) &
	IWCM_WATCHDOG=$!
}
iwcm_watchdog_stop() {
	if [ -n "${IWCM_WATCHDOG:-}" ]; then
		kill "$IWCM_WATCHDOG" 2>/dev/null
		wait "$IWCM_WATCHDOG" 2>/dev/null
		IWCM_WATCHDOG=
	fi
}

__iwcm_on_signal() {
	trap '' TERM INT
	iwcm_watchdog_stop
	iwcm_log "$IWCM_NAME: interrupted (timeout?): cleaning up"
	__iwcm_dump_tasks
	iwcm_stop_all
	iwcm_teardown >/dev/null 2>&1
	__iwcm_panic_on_warn_restore
	exit "$KSFT_FAIL"
}

# iwcm_check DESCRIPTION CMD...: one KTAP result from a command's status.
iwcm_check() {
	local d=$1
	shift
	if "$@"; then
		ktap_test_pass "$d"
	else
		ktap_test_fail "$d"
	fi
}

# ------------------------------------------------------------------ iw_cm

# Which iw_cm is loaded: "rust", "c", or "none".  Ours has the parameter
# stuck_handler_ms; the C iw_cm (the kernel's, built in or a module, or
# tools/testing/iw_cm_c/'s out-of-tree build of iwcm.c) has no parameter.
iwcm_loaded_impl() {
	[ -d /sys/module/iw_cm ] || { echo none; return; }
	if [ -e /sys/module/iw_cm/parameters/stuck_handler_ms ]; then echo rust; else echo c; fi
}

# iwcm_require_iwpm_fix WHY: for the port mapper tests, which need a
# port mapper client with the fixes of drivers/infiniband/core/iw_cm/iwpm/:
# ours, or iwcm.c built with them (tools/vm/run.sh IWCM_C_IWCM=iwpm-fixed
# puts tools/testing/iw_cm_c/'s module in place of the kernel's and fails
# the run unless it did).  SKIP with the kernel's own C iw_cm, saying WHY;
# a failure when IWCM_C_IWCM=iwpm-fixed asked for the fixed iwcm.c and
# modprobe would still load the kernel's (intree) module.
iwcm_require_iwpm_fix() {
	[ "$IWCM_IMPL" = rust ] && return 0
	[ "${IWCM_C_IWCM:-stock}" = iwpm-fixed ] || iwcm_skip_all "the kernel's C iw_cm: $1"
	if [ "$(modinfo -F intree iw_cm 2>/dev/null)" = Y ]; then
		ktap_print_header
		ktap_exit_fail_msg "IWCM_C_IWCM=iwpm-fixed, but modprobe finds the kernel's own iw_cm.ko ($(modinfo -F filename iw_cm 2>/dev/null))"
	fi
}

# iwcm_load_deps KO: modprobe the dependencies of an out-of-tree module
# (and ib_core), which insmod does not resolve.
iwcm_load_deps() {
	local d
	for d in $(modinfo -F depends "$1" 2>/dev/null | tr , ' ') ib_core; do
		modprobe "$d" || return 1
	done
}

# iwcm_insmod KO WHAT [PARAM=VALUE...]: insmod an out-of-tree module after
# its dependencies.
iwcm_insmod() {
	local ko=$1 what=$2
	shift 2
	if [ ! -f "$ko" ]; then
		iwcm_log "no $what at $ko"
		return 1
	fi
	iwcm_load_deps "$ko" && insmod "$ko" "$@"
}

# load_iw_cm: load the iw_cm selected by IWCM_IMPL (idempotent; fails when
# the other implementation is already loaded).
load_iw_cm() {
	local cur
	cur=$(iwcm_loaded_impl)
	if [ "$cur" != none ]; then
		if [ "$cur" != "$IWCM_IMPL" ]; then
			iwcm_log "iw_cm loaded is '$cur', IWCM_IMPL=$IWCM_IMPL"
			return 1
		fi
		return 0
	fi
	case "$IWCM_IMPL" in
	c)
		modprobe iw_cm || return 1 ;;
	rust)
		# shellcheck disable=SC2086
		iwcm_insmod "$IWCM_RUST_KO" "Rust iw_cm" $IWCM_RUST_PARAMS || return 1 ;;
	*)
		iwcm_log "IWCM_IMPL must be c or rust, not '$IWCM_IMPL'"
		return 1 ;;
	esac
	[ "$(iwcm_loaded_impl)" = "$IWCM_IMPL" ]
}

# load_siw: load the siw selected by IWCM_SIW (idempotent; fails when the
# other one is already loaded).  The patched siw is out of tree (taint O).
load_siw() {
	local cur=stock
	case "$IWCM_SIW" in
	stock|patched) ;;
	*) iwcm_log "IWCM_SIW must be patched or stock, not '$IWCM_SIW'"; return 1 ;;
	esac
	if [ -d /sys/module/siw ]; then
		local t=
		{ read -r t < /sys/module/siw/taint; } 2>/dev/null
		[[ $t == *O* ]] && cur=patched
		[ "$cur" = "$IWCM_SIW" ] && return 0
		iwcm_log "siw loaded is the $cur one, IWCM_SIW=$IWCM_SIW"
		return 1
	fi
	local dd=()
	# (The kernel splits module parameters at spaces outside double quotes.)
	[ "$IWCM_SIW_EP_CHECK" = 1 ] && dd=("dyndbg=\"$IWCM_SIW_DYNDBG_EP\"")
	if [ "$IWCM_SIW" = stock ]; then
		modprobe siw "${dd[@]}"
		return
	fi
	iwcm_insmod "$IWCM_SIW_KO" "patched siw (tools/testing/siw/build.sh)" "${dd[@]}"
}

# iwcm_dmesg_since_setup: the kernel log since iwcm_setup's marker; when
# the marker is gone (the ring buffer wrapped past it), a line saying so,
# which the splat check counts as a failure.
iwcm_dmesg_since_setup() {
	if [ -z "$IWCM_DMESG_MARK" ]; then
		dmesg
		return
	fi
	dmesg | awk -v m="$IWCM_DMESG_MARK" '
		f { print } index($0, m) { f = 1 }
		END { if (!f) print "iwcm: kernel log wrapped past this test'"'"'s setup marker: lines lost" }'
}

# iwcm_siw_endpoints_left: the siw endpoints allocated since setup and not
# freed ("CEP[hashed pointer]", one per line).  Per address, the last of
# its allocation and free lines counts (an address the allocator reuses
# appears once per allocation and once per free; an endpoint from before
# setup freed now is not one of them).
iwcm_siw_endpoints_left() {
	iwcm_dmesg_since_setup | awk '
		match($0, /CEP\[0x[0-9a-f]+\] siw_cep_alloc: new endpoint/) {
			n[substr($0, RSTART, 23)] = 1 }
		match($0, /CEP\[0x[0-9a-f]+\] __siw_cep_dealloc: free endpoint/) {
			n[substr($0, RSTART, 23)] = 0 }
		END { for (c in n) if (n[c] > 0) print c }'
}
__iwcm_siw_endpoints_freed() { [ -z "$(iwcm_siw_endpoints_left)" ]; }
# iwcm_siw_ep_accounting: is siw's endpoint accounting on (the dynamic
# debug lines enabled)?
iwcm_siw_ep_accounting() {
	[ "$IWCM_SIW_EP_CHECK" = 1 ] &&
		grep -q "siw_cep_alloc =p" /sys/kernel/debug/dynamic_debug/control 2>/dev/null
}

# iwcm_nvme_bdev NQN: the block device (nvmeXnY) of the first namespace of
# subsystem NQN.  With native multipath its X is the subsystem's instance,
# not the controller's, so "/dev/${ctrl}n1" is only right by chance.
iwcm_nvme_bdev() {
	local b
	for b in /sys/block/nvme*n*; do
		[ -b "/dev/${b##*/}" ] || continue
		grep -qxF "$1" "$b/device/subsysnqn" 2>/dev/null && { echo "${b##*/}"; return 0; }
	done
	return 1
}

# ------------------------------------------------------------------ nvmet

IWCM_NVMET_CFG=/sys/kernel/config/nvmet

# iwcm_nvmet_setup NQN PORT: an nvmet-rdma target: subsystem NQN (any host)
# with a 1 GB memory-backed null_blk namespace, port 1 on $IWCM_ADDR:PORT.
iwcm_nvmet_setup() {
	local nqn=$1 cfg=$IWCM_NVMET_CFG
	modprobe null_blk nr_devices=1 gb=1 memory_backed=1 || return 1
	modprobe nvmet || return 1
	modprobe nvmet-rdma || return 1
	mkdir -p "$cfg/subsystems/$nqn" || return 1
	echo 1 > "$cfg/subsystems/$nqn/attr_allow_any_host" || return 1
	mkdir -p "$cfg/subsystems/$nqn/namespaces/1" || return 1
	echo /dev/nullb0 > "$cfg/subsystems/$nqn/namespaces/1/device_path" || return 1
	echo 1 > "$cfg/subsystems/$nqn/namespaces/1/enable" || return 1
	mkdir -p "$cfg/ports/1" || return 1
	echo rdma > "$cfg/ports/1/addr_trtype"
	echo ipv4 > "$cfg/ports/1/addr_adrfam"
	echo "$IWCM_ADDR" > "$cfg/ports/1/addr_traddr"
	echo "$2" > "$cfg/ports/1/addr_trsvcid"
	ln -s "$cfg/subsystems/$nqn" "$cfg/ports/1/subsystems/$nqn" || return 1
}

# iwcm_nvmet_cleanup NQN: undo iwcm_nvmet_setup (what exists of it).
iwcm_nvmet_cleanup() {
	local nqn=$1 cfg=$IWCM_NVMET_CFG
	rm -f "$cfg/ports/1/subsystems/$nqn" 2>/dev/null
	rmdir "$cfg/ports/1" 2>/dev/null
	echo 0 > "$cfg/subsystems/$nqn/namespaces/1/enable" 2>/dev/null
	rmdir "$cfg/subsystems/$nqn/namespaces/1" 2>/dev/null
	rmdir "$cfg/subsystems/$nqn" 2>/dev/null
}

# iwcm_nvme_ctrl NQN: the host's controller (nvmeX) of subsystem NQN.
iwcm_nvme_ctrl() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/subsysnqn" ] && grep -qx "$1" "$c/subsysnqn" && { basename "$c"; return 0; }
	done
	return 1
}

# The Rust iw_cm's live cm_id count, or empty when the file is absent.
iwcm_cm_ids() {
	local c
	[ -r "$IWCM_CMIDS" ] && read -r c < "$IWCM_CMIDS" && echo "${c// /}"
}

# ------------------------------------------------------------------ siw

iwcm_link_up() {	# (the device in sysfs, no process: for polls)
	[ -d "/sys/class/infiniband/$IWCM_RDEV" ]
}
# iwcm_link_registered: the device in `rdma link` (one rdma process, not
# for polls).  Differs from iwcm_link_up while the device is being
# unregistered: it leaves `rdma link` (and rdma(8)'s name lookup) at the
# start, sysfs only once every client has let go of it.
iwcm_link_registered() {
	local l
	__iwcm_rdma_run link show
	for l in "${IWCM_RDMA_OUT[@]}"; do
		[[ $l == "link $IWCM_RDEV/"* ]] && return 0
	done
	return 1
}

# iwcm_setup: iw_cm + rdma_cm + siw, dummy netdev with an address, lo up,
# the siw link, its port ACTIVE.  Returns non-zero (with a message) on error.
iwcm_setup() {
	local i state
	load_iw_cm || { iwcm_log "setup: cannot load iw_cm ($IWCM_IMPL)"; return 1; }
	for m in rdma_cm rdma_ucm dummy; do
		[ -d "/sys/module/$m" ] && continue
		modprobe "$m" || { iwcm_log "setup: modprobe $m failed"; return 1; }
	done
	load_siw || { iwcm_log "setup: cannot load siw ($IWCM_SIW)"; return 1; }
	# (One ip process: each costs about half a second under TCG.)
	[ -d "/sys/class/net/$IWCM_NETDEV" ] || ip link add "$IWCM_NETDEV" type dummy || return 1
	ip -batch - <<-EOF || { iwcm_log "setup: addresses or links of lo and $IWCM_NETDEV failed"; return 1; }
		link set lo up
		addr flush dev $IWCM_NETDEV
		addr add $IWCM_ADDR/$IWCM_PREFIX dev $IWCM_NETDEV
		link set $IWCM_NETDEV up
	EOF
	if ! iwcm_link_up; then
		rdma link add "$IWCM_RDEV" type siw netdev "$IWCM_NETDEV" || {
			iwcm_log "setup: rdma link add $IWCM_RDEV failed"
			return 1
		}
	fi
	IWCM_SETUP_DONE=1
	# The port goes ACTIVE once the netdev is up: poll with a deadline.
	if ! iwcm_wait_for 5 __iwcm_port_active; then
		state=$(__iwcm_port_state)
		iwcm_log "setup: $IWCM_RDEV/1 state '$state', not ACTIVE after 5 s"
		return 1
	fi
	# IWCM_SIW_DYNDBG=1: siw's dynamic debug lines (endpoint states and
	# CM work) in the kernel log, for diagnosing a provider sequence.
	if [ -n "${IWCM_SIW_DYNDBG:-}" ]; then
		echo "module siw +p" > /sys/kernel/debug/dynamic_debug/control
	fi
	IWCM_CMIDS_BASE=$(iwcm_cm_ids)
	# The kernel log from here on, found by a marker rather than a line
	# count (which goes wrong once the ring buffer has wrapped).
	IWCM_DMESG_MARK="iwcm-selftest: $IWCM_NAME setup $$ ${EPOCHREALTIME/./}"
	echo "$IWCM_DMESG_MARK" > /dev/kmsg
	return 0
}

__iwcm_port_state() {	# (sysfs: "4: ACTIVE")
	local s=
	{ read -r _ s < "/sys/class/infiniband/$IWCM_RDEV/ports/1/state"; } 2>/dev/null
	echo "$s"
}
__iwcm_port_active() { [ "$(__iwcm_port_state)" = ACTIVE ]; }

# iwcm_teardown: stop our processes, delete the siw link (bounded: siw
# has no disassociate_ucontext, a leftover user blocks it), the netdev.
iwcm_teardown() {
	local rc=0
	iwcm_stop_all
	if iwcm_link_up && iwcm_link_registered; then
		iwcm_bounded 60 rdma link delete "$IWCM_RDEV"
		rc=$?
		[ $rc -eq 0 ] || iwcm_log "teardown: rdma link delete $IWCM_RDEV failed or hung (status $rc)"
	fi
	ip link del "$IWCM_NETDEV" 2>/dev/null
	IWCM_SETUP_DONE=0
	return $rc
}

# ------------------------------------------------------------------ processes

# iwcm_spawn VAR LOG CMD...: start CMD in the background, output to LOG,
# its pid in VAR; remembered for iwcm_stop_all.
iwcm_spawn() {
	local var=$1 log=$2
	shift 2
	# (Not the runner's descriptors 3 and 4, its output pipe: a process
	# left behind must not hold the KTAP stream open.)
	"$@" >"$log" 2>&1 3>&- 4>&- &
	local pid=$!
	IWCM_PIDS+=("$pid")
	printf -v "$var" '%s' "$pid"
}

# True when PID is gone or a zombie (shell builtins only: no fork).
iwcm_exited() {
	local st=
	{ read -r st < "/proc/$1/stat"; } 2>/dev/null
	st=${st##*) }
	st=${st%% *}
	[ -z "$st" ] || [ "$st" = Z ]
}

# iwcm_rdma_query ARGS...: `rdma ARGS` (a query such as `resource show`),
# bounded to 20 s.  A query still running then is a kernel-side stall: its
# state, wait channel and kernel stack are logged (KTAP diagnostics on
# stderr), then it is killed; the status is then 124.
iwcm_rdma_query() {
	local rc
	__iwcm_rdma_run "$@"
	rc=$?
	[ ${#IWCM_RDMA_OUT[@]} -eq 0 ] || printf '%s\n' "${IWCM_RDMA_OUT[@]}"
	return $rc
}
# __iwcm_rdma_run ARGS...: iwcm_rdma_query's work, the output's lines in
# the array IWCM_RDMA_OUT of this shell: its parsers read them there, not
# from a pipe (bash's read takes a pipe one byte per system call: 270000
# of them for 2000 cm_ids), and mapfile reads the file in blocks (a read
# loop seeks back after every line).
IWCM_RDMA_OUT=()
__iwcm_rdma_seq=0
__iwcm_rdma_run() {
	local out pid rc l
	__iwcm_rdma_seq=$((__iwcm_rdma_seq + 1))
	out=${IWCM_TMP:-/tmp}/rdma-query.$BASHPID.$__iwcm_rdma_seq
	IWCM_RDMA_OUT=()
	rdma "$@" >"$out" 2>/dev/null 3>&- 4>&- &
	pid=$!
	iwcm_wait "$pid" 20
	rc=$?
	if [ $rc -eq 124 ]; then
		# On stderr: stdout is the query's output, read by a pipe.
		{
			iwcm_log "rdma $*: still running after 20 s (pid $pid, $(grep '^State:' "/proc/$pid/status" 2>/dev/null), wchan $(cat "/proc/$pid/wchan" 2>/dev/null)):"
			timeout 5 sed 's/^/    /' "/proc/$pid/stack" 2>/dev/null |
				while IFS= read -r l; do iwcm_log "$l"; done
			__iwcm_dump_tasks
		} >&2
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	else
		mapfile -t IWCM_RDMA_OUT < "$out"
	fi
	: > "$out"
	return $rc
}

# iwcm_wait PID SECONDS: the exit status of PID, or 124 when it is still
# running after SECONDS (it is left running).
iwcm_wait() {
	local pid=$1 end now
	__iwcm_usec end "$2"
	__iwcm_usec now
	end=$((end + now))
	while ! iwcm_exited "$pid"; do
		__iwcm_usec now
		[ "$now" -gt "$end" ] && return 124
		__iwcm_nap 0.1
	done
	# (stderr: no "Killed" job notice in the KTAP)
	wait "$pid" 2>/dev/null
}

# iwcm_bounded SECONDS CMD...: CMD's status (an external command), with a
# bound that holds even when CMD sleeps uninterruptibly in the kernel (an
# `rdma link delete` or an umount that a ULP blocks: no signal ends it,
# and `timeout` would wait for it for ever, and the kselftest runner with
# it).  CMD runs in the background under `timeout -k 5 SECONDS` (which
# signals CMD's whole process group: mount's helpers too), with its
# output and errors in files copied to ours once it ends, and without the
# runner's descriptors 3 and 4 (the runner's output pipe).  At SECONDS,
# CMD is logged with its kernel stack and the tasks in D state; if
# `timeout` is still waiting for it 10 s after that, `timeout` is killed
# and CMD left behind.  The status is then 124.
iwcm_bounded() {
	local secs=$1 out err pid cmd_pid rc l lines
	shift
	# (Per call, not only per shell: a CMD left behind still writes to its.)
	__iwcm_rdma_seq=$((__iwcm_rdma_seq + 1))
	out=${IWCM_TMP:-/tmp}/bounded-out.$BASHPID.$__iwcm_rdma_seq
	err=${IWCM_TMP:-/tmp}/bounded-err.$BASHPID.$__iwcm_rdma_seq
	timeout -k 5 "$secs" "$@" >"$out" 2>"$err" 3>&- 4>&- &
	pid=$!
	iwcm_wait "$pid" "$secs"
	rc=$?
	if [ $rc -eq 124 ]; then
		read -r cmd_pid _ < "/proc/$pid/task/$pid/children" 2>/dev/null
		cmd_pid=${cmd_pid:-$pid}
		{
			iwcm_log "$*: still running after $secs s (pid $cmd_pid, $(grep '^State:' "/proc/$cmd_pid/status" 2>/dev/null | tr -s '\t ' ' '), wchan $(cat "/proc/$cmd_pid/wchan" 2>/dev/null)):"
			timeout 5 sed 's/^/    /' "/proc/$cmd_pid/stack" 2>/dev/null |
				while IFS= read -r l; do iwcm_log "$l"; done
			__iwcm_dump_tasks
		} >&2
		# timeout sends SIGTERM now and SIGKILL 5 s later.
		iwcm_wait "$pid" 10 >/dev/null 2>&1
		if [ $? -eq 124 ]; then
			iwcm_log "$*: pid $cmd_pid survives SIGKILL: left behind" >&2
			kill -KILL "$pid" 2>/dev/null
		fi
		rc=124
	fi
	mapfile -t lines < "$out"
	[ ${#lines[@]} -eq 0 ] || printf '%s\n' "${lines[@]}"
	mapfile -t lines < "$err"
	[ ${#lines[@]} -eq 0 ] || printf '%s\n' "${lines[@]}" >&2
	: > "$out"
	: > "$err"
	return $rc
}

# iwcm_wait_for SECONDS CMD...: poll CMD until it succeeds (every 0.1 s);
# non-zero after SECONDS of wall-clock time (a deadline, not a number of
# polls: under TCG with busy vCPUs one poll can take a second).
iwcm_wait_for() {
	local end=$((SECONDS + $1 + 1))	# (whole seconds: at least $1)
	shift
	while [ "$SECONDS" -lt "$end" ]; do
		"$@" && return 0
		__iwcm_nap 0.1
	done
	"$@"
}

# A listening rdma_cm id on TCP port PORT (rdma resource show cm_id).
iwcm_listening() {
	local l re="src-addr +[0-9.]*:$1( |$)"
	__iwcm_rdma_run resource show cm_id
	for l in "${IWCM_RDMA_OUT[@]}"; do
		[[ $l =~ \ state\ +LISTEN\  ]] && [[ $l =~ $re ]] && return 0
	done
	return 1
}

# iwcm_wait_listen PORT [SECONDS]: wait for a server's listener.
iwcm_wait_listen() {
	iwcm_wait_for "${2:-20}" iwcm_listening "$1"
}

# A line matching REGEX in FILE.
# iwcm_quick VAR FULL QUICK WHAT: VAR=FULL, or VAR=QUICK under IWCM_QUICK=1
# (make check trims its longest loops to fit CI's time; make check-all
# runs FULL), saying so in the test's output.
iwcm_quick() {
	if [ "${IWCM_QUICK:-0}" = 1 ] && [ "$2" != "$3" ]; then
		printf -v "$1" '%s' "$3"
		iwcm_log "IWCM_QUICK=1: $4 $3 (make check-all: $2)"
	else
		printf -v "$1" '%s' "$2"
	fi
}

# (Builtins: it is polled.  For the short logs of the tools a test starts.)
iwcm_log_has() {
	local l
	{ while IFS= read -r l || [ -n "$l" ]; do
		[[ $l =~ $2 ]] && return 0
	done < "$1"; } 2>/dev/null
	return 1
}

# iwcm_rping_ok COUNT: one rping server and client pair over the siw link,
# COUNT pings (-v); true when both exit 0 and the client printed every
# ping.  Shows both logs when not.
iwcm_rping_ok() {
	local n=$1 srv crc src ok=1
	local slog=$IWCM_TMP/rping-ok-server.log clog=$IWCM_TMP/rping-ok-client.log
	iwcm_spawn srv "$slog" rping -s -a "$IWCM_ADDR" -C "$n"
	if iwcm_wait_listen 7174; then
		timeout -k 5 60 rping -c -a "$IWCM_ADDR" -C "$n" -v >"$clog" 2>&1
		crc=$?
		iwcm_wait "$srv" 30
		src=$?
		[ $crc -eq 0 ] && [ $src -eq 0 ] && [ "$(grep -c '^ping data' "$clog")" -eq "$n" ] || ok=0
	else
		ok=0
	fi
	[ $ok -eq 1 ] || { iwcm_show_log "$slog"; iwcm_show_log "$clog"; }
	[ $ok -eq 1 ]
}

# iwcm_stop_all: SIGKILL every process we started that still runs, reap
# it; one that SIGKILL does not end in 10 s (asleep uninterruptibly in the
# kernel: a ULP's I/O on a hung transport) is logged with its kernel stack
# and left behind, never waited for.
iwcm_stop_all() {
	local p
	for p in "${IWCM_PIDS[@]}"; do
		if ! iwcm_exited "$p"; then
			kill -9 "$p" 2>/dev/null
			iwcm_wait "$p" 10 >/dev/null 2>&1
			if [ $? -eq 124 ]; then
				{
					iwcm_log "pid $p ($(cat "/proc/$p/comm" 2>/dev/null)) survives SIGKILL for 10 s ($(grep '^State:' "/proc/$p/status" 2>/dev/null | tr -s '\t ' ' ')): left behind; its kernel stack:"
					timeout 5 sed 's/^/    /' "/proc/$p/stack" 2>/dev/null |
						while IFS= read -r l; do iwcm_log "$l"; done
				} >&2
				continue
			fi
		fi
		wait "$p" 2>/dev/null
	done
	IWCM_PIDS=()
}

# iwcm_show_log FILE: a process's output as KTAP diagnostics.
iwcm_show_log() {
	[ -s "$1" ] || return 0
	sed -e "s|^|$(basename "$1"): |" "$1" | tail -n "${2:-40}" | while IFS= read -r l; do
		ktap_print_msg "$l"
	done
}

# ------------------------------------------------------------------ leak checks

# rdma_cm ids of our device (rdma resource show cm_id), one per line.
iwcm_dev_cm_ids() {
	local l
	__iwcm_rdma_run resource show cm_id
	for l in "${IWCM_RDMA_OUT[@]}"; do
		[[ $l == "link $IWCM_RDEV/"* || $l == "dev $IWCM_RDEV "* ]] && printf '%s\n' "$l"
	done
	return 0
}

__iwcm_no_dev_cm_ids() { [ -z "$(iwcm_dev_cm_ids)" ]; }
__iwcm_cmids_at_base() { [ "$(iwcm_cm_ids)" = "$IWCM_CMIDS_BASE" ]; }

# iwcm_check_no_leak: every user process gone, then no rdma_cm id on the
# device and (Rust iw_cm) the cm_id count back to its value after setup.
# Two KTAP results.
iwcm_check_no_leak() {
	iwcm_stop_all
	if iwcm_wait_for 10 __iwcm_no_dev_cm_ids; then
		ktap_test_pass "no rdma_cm id left on $IWCM_RDEV"
	else
		iwcm_dev_cm_ids | while IFS= read -r l; do ktap_print_msg "left: $l"; done
		ktap_test_fail "no rdma_cm id left on $IWCM_RDEV"
	fi
	if [ "$IWCM_IMPL" != rust ]; then
		ktap_test_skip "iw_cm cm_id count back to baseline: the C iw_cm keeps no count"
	elif [ -z "$IWCM_CMIDS_BASE" ] || [ ! -r "$IWCM_CMIDS" ]; then
		# (Ours without its count is ours broken, not a test to skip.)
		ktap_test_fail "iw_cm cm_id count back to baseline: no $IWCM_CMIDS with the Rust iw_cm"
	elif iwcm_wait_for 10 __iwcm_cmids_at_base; then
		ktap_test_pass "iw_cm cm_id count back to baseline ($IWCM_CMIDS_BASE)"
	else
		ktap_test_fail "iw_cm cm_id count back to baseline: $(iwcm_cm_ids), was $IWCM_CMIDS_BASE"
	fi
}

# Kernel messages since setup that are splats.
IWCM_SPLAT_RE='WARNING:|BUG:|Oops|INFO: task .* blocked|possible (recursive|circular) locking|general protection|UBSAN:|KASAN:|unreferenced object|kernel BUG|refcount_t:|iwcm: kernel log wrapped'
iwcm_new_splats() {
	iwcm_dmesg_since_setup | grep -E "$IWCM_SPLAT_RE"
}

# Upstream siw (IWCM_SIW=stock, make check-all's job suite_stock_siw_rust):
# the faults of the kernel's own siw that the test siw fixes, each named by
# its patch in tools/testing/siw/.  A test that would meet one reports an
# XFAIL naming the patch only when IWCM_SIW=stock; with the test siw the
# same result is a plain pass or fail.
# iwcm_siw_fix NNNN: the file name of tools/testing/siw/NNNN-*.patch.
iwcm_siw_fix() {
	local f
	for f in "$IWCM_TOP/tools/testing/siw/$1"-*.patch; do
		[ -e "$f" ] && { echo "tools/testing/siw/${f##*/}"; return; }
	done
	echo "tools/testing/siw/$1 (patch file missing)"
}
# iwcm_stock_siw: the siw under test is the kernel's own.
iwcm_stock_siw() { [ "$IWCM_SIW" = stock ]; }
# iwcm_fail_or_siw_xfail NNNN DESCRIPTION WHAT: a failed result; with
# upstream siw, whose fault WHAT (the symptom the caller has matched) the
# test siw's patch NNNN fixes, an XFAIL naming that patch instead.
iwcm_fail_or_siw_xfail() {
	if iwcm_stock_siw; then
		ktap_test_xfail "$2: upstream siw: $3, fixed by $(iwcm_siw_fix "$1")"
	else
		ktap_test_fail "$2"
	fi
}
# iwcm_siw_key_exhausted FILE...: the processes' logs show a CQ or QP
# creation refused (cmtime, ucmatose, rdma_disc): upstream siw's mmap key
# SIW_INVAL_UOBJ_KEY (the 145th mapped queue of a process, about 72 QPs or
# 36 ucmatose connections; tools/testing/siw/0001).
IWCM_SIW_KEY_RE='failure creating qp|unable to create (CQ|QP)|FAIL: rdma_create_qp: Cannot allocate memory'
iwcm_siw_key_exhausted() { cat "$@" 2>/dev/null | grep -qE "$IWCM_SIW_KEY_RE"; }
# iwcm_upstream_siw_splats: with upstream siw, are all the kernel's reports
# since setup those of upstream siw faults that a tools/testing/siw patch
# fixes?  tools/vm/splat-check.py --allow-upstream-siw decides (the same
# narrow signatures as the VM's own splat check in that job: lockdep's
# softirq-unsafe sk_callback_lock from a siw socket callback, 0002;
# kmemleak's siw endpoint, 0006; KASAN's read of the device by an
# endpoint freed after it, 0007; KASAN's read of a flushed WR's next
# pointer, 0010); prints the patch files, one a line.
iwcm_upstream_siw_splats() {
	local f out rc
	iwcm_stock_siw || return 1
	f=$(mktemp)
	iwcm_dmesg_since_setup >"$f"
	# Lines lost to a wrapped log may have held any report.
	grep -q "^iwcm: kernel log wrapped" "$f" && { rm -f "$f"; return 1; }
	out=$(python3 "$IWCM_TOP/tools/vm/splat-check.py" --allow-upstream-siw "$f" 2>&1)
	rc=$?
	rm -f "$f"
	[ $rc -eq 0 ] || return 1
	sed -n 's/^splat-check: accepted upstream siw report .*(fixed by \(.*\))$/\1/p' <<<"$out" | sort -u | grep .
}

# iwcm_finish: the leak checks (2 results), teardown + splat check (1
# result), duration; exit 1 on any failure, else 2 on a known failure
# (XFAIL), 4 when all skipped, 0 pass.
iwcm_finish() {
	local splats rc
	if [ "$IWCM_SETUP_DONE" = 1 ]; then
		iwcm_check_no_leak
		local acct=0 eps=
		iwcm_siw_ep_accounting && acct=1
		iwcm_teardown
		rc=$?
		# (After the teardown, which the peers' tests cover too.)
		__iwcm_panic_on_warn_restore
		splats=$(iwcm_new_splats)
		# siw frees an endpoint on its CM workqueue: allow it a moment.
		if [ $acct = 1 ] && ! iwcm_wait_for 10 __iwcm_siw_endpoints_freed; then
			eps=$(iwcm_siw_endpoints_left)
		fi
		local siwfix=
		[ $rc -eq 0 ] && [ -n "$splats" ] && siwfix=$(iwcm_upstream_siw_splats)
		if [ $rc -eq 0 ] && { [ -z "$splats" ] || [ -n "$siwfix" ]; } &&
				{ [ -n "$eps" ] || [ -n "$siwfix" ]; } && iwcm_stock_siw; then
			# Upstream siw's own faults only, each fixed by a
			# tools/testing/siw patch: known, outside iw_cm.  An endpoint
			# whose peer never completes its MPA request is leaked (0006);
			# the reports are those iwcm_upstream_siw_splats accepts.
			[ -n "$siwfix" ] && printf '%s\n' "$splats" | head -20 |
				while IFS= read -r l; do ktap_print_msg "dmesg (upstream siw): $l"; done
			[ -n "$eps" ] && ktap_print_msg "siw endpoints never freed: $(wc -l <<<"$eps") (upstream siw, fixed by $(iwcm_siw_fix 0006))"
			ktap_test_xfail "teardown (rdma link delete): upstream siw's own faults only$([ -n "$eps" ] && echo ", endpoints whose MPA request never came leaked: $(iwcm_siw_fix 0006)")$([ -n "$siwfix" ] && echo ", reports fixed by $(tr '\n' ' ' <<<"$siwfix" | sed 's/ $//')")"
		elif [ $rc -eq 0 ] && [ -z "$splats" ] && [ -z "$eps" ]; then
			ktap_test_pass "teardown (rdma link delete) without kernel splat$([ $acct = 1 ] && echo ", every siw endpoint freed")"
		else
			[ -n "$splats" ] && printf '%s\n' "$splats" | head -20 |
				while IFS= read -r l; do ktap_print_msg "dmesg: $l"; done
			[ -n "$eps" ] && ktap_print_msg "siw endpoints never freed: $(wc -l <<<"$eps"): $(head -n 8 <<<"$eps" | tr '\n' ' ')"
			ktap_test_fail "teardown (rdma link delete) without kernel splat$([ $acct = 1 ] && echo ", every siw endpoint freed")"
		fi
	else
		iwcm_stop_all
		__iwcm_panic_on_warn_restore
		while [ "$KTAP_TESTNO" -le "$KSFT_NUM_TESTS" ]; do
			ktap_test_fail "not run: setup failed or test aborted"
		done
	fi
	[ -n "$IWCM_TMP" ] && rm -rf "$IWCM_TMP"
	local n
	for n in "${IWCM_FAIL_NOTES[@]}"; do
		ktap_print_msg "$IWCM_NAME: failure: $n"
	done
	ktap_print_msg "$IWCM_NAME: duration $(__iwcm_elapsed "$IWCM_T0") s"
	ktap_print_totals
	if [ $((KTAP_TESTNO - 1)) -ne "$KSFT_NUM_TESTS" ]; then
		ktap_print_msg "$IWCM_NAME: $((KTAP_TESTNO - 1)) results for a plan of $KSFT_NUM_TESTS"
		exit "$KSFT_FAIL"
	fi
	if [ "$KTAP_CNT_FAIL" -gt 0 ]; then
		exit "$KSFT_FAIL"
	fi
	# A known failure outside iw_cm (ktap_test_xfail, with its reason):
	# the runner reports "# XFAIL", tools/check.sh counts it as skipped.
	if [ "$KTAP_CNT_XFAIL" -gt 0 ]; then
		exit "$KSFT_XFAIL"
	fi
	if [ "$KTAP_CNT_PASS" -eq 0 ] && [ "$KTAP_CNT_SKIP" -gt 0 ]; then
		exit "$KSFT_SKIP"
	fi
	exit "$KSFT_PASS"
}

# iwcm_panic_on_warn: with ours, kernel.panic_on_warn=1 until iwcm_finish
# (which restores it after its teardown, as the signal handler does): a
# WARN that a remote peer can draw is a remote
# crash on such a machine, so the tests of what peers send run with it
# (issue 39; Documentation/iw_cm.rst, "What a remote peer can do").  A
# WARN then panics the guest and the job fails.  Not with the C iw_cm,
# whose BUG()s on some peers the tests skip anyway, nor with upstream siw
# (IWCM_SIW=stock), whose own faults (KASAN reports, which panic_on_warn
# turns into panics too) are XFAILs there.
__iwcm_pow_old=
iwcm_panic_on_warn() {
	[ "$IWCM_IMPL" = rust ] && ! iwcm_stock_siw && [ -w /proc/sys/kernel/panic_on_warn ] || return 0
	read -r __iwcm_pow_old < /proc/sys/kernel/panic_on_warn
	echo 1 > /proc/sys/kernel/panic_on_warn
	iwcm_log "$IWCM_NAME: panic_on_warn=1 until the end of the test (was $__iwcm_pow_old)"
}
__iwcm_panic_on_warn_restore() {
	[ -n "$__iwcm_pow_old" ] || return 0
	echo "$__iwcm_pow_old" > /proc/sys/kernel/panic_on_warn
	__iwcm_pow_old=
}

# iwcm_setup_or_bail: setup, or fail every planned result and exit.
iwcm_setup_or_bail() {
	if iwcm_setup; then
		ktap_test_pass "setup: $IWCM_RDEV on $IWCM_NETDEV ($IWCM_ADDR), iw_cm $IWCM_IMPL"
	else
		ktap_test_fail "setup: $IWCM_RDEV on $IWCM_NETDEV ($IWCM_ADDR), iw_cm $IWCM_IMPL"
		iwcm_teardown >/dev/null 2>&1
		IWCM_SETUP_DONE=0
		iwcm_finish
	fi
}
