#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The iw_cm tracepoints (tracefs events/iw_cm/, Documentation/iw_cm.rst):
# enable them with rdma_cm's own rdma_cma events, run one rping, and check
# the sequence per cm_id in the one trace: each cm_id created first and
# destroyed last; every delivery after its event was queued (a child's
# CONNECT_REQUEST: queued on its listener); the active id takes its QP
# reference before CONNECT_REPLY and drops it before CLOSE is delivered;
# the passive id hears CONNECT_REQUEST, takes the QP on accept, hears
# ESTABLISHED, drops the QP before CLOSE; the listener, the active and the
# passive id all appear; rdma_cma's events of the same connection lie
# between them.  tools/iwcm-top --trace prints the timelines.  The C
# iw_cm has no tracepoints: SKIP.
. "$(dirname "$0")/lib.sh"

TR=/sys/kernel/tracing
iwcm_init trace_events 5 rping python3
[ "$IWCM_IMPL" = rust ] || iwcm_skip_all "the C iw_cm has no tracepoints"
[ -d "$TR/events/iw_cm" ] || mount -t tracefs nodev "$TR" 2>/dev/null
[ -d "$TR/events/iw_cm" ] || iwcm_skip_all "no $TR/events/iw_cm (tracefs, CONFIG_TRACEPOINTS)"
iwcm_setup_or_bail

echo 0 > "$TR/tracing_on"
echo > "$TR/trace"
echo 4096 > "$TR/buffer_size_kb"
echo 1 > "$TR/events/iw_cm/enable"
cma=0
if [ -d "$TR/events/rdma_cma" ]; then
	echo 1 > "$TR/events/rdma_cma/enable"
	cma=1
fi
echo 1 > "$TR/tracing_on"
iwcm_spawn srv "$IWCM_TMP/rping-s.log" rping -s -a "$IWCM_ADDR" -p 7620 -C 1
iwcm_wait_listen 7620
timeout 30 rping -c -a "$IWCM_ADDR" -p 7620 -C 1 -v >"$IWCM_TMP/rping-c.log" 2>&1
rc=$?
iwcm_wait "$srv" 20 >/dev/null
# The ids go when rping's process exits: wait for the count.
iwcm_wait_for 10 __iwcm_cmids_at_base
echo 0 > "$TR/tracing_on"
echo 0 > "$TR/events/iw_cm/enable"
[ $cma = 1 ] && echo 0 > "$TR/events/rdma_cma/enable"
cp "$TR/trace" "$IWCM_TMP/trace.txt"
echo > "$TR/trace"
iwcm_check "rping -C 1 with the iw_cm events on (exit $rc)" [ $rc -eq 0 ]

python3 - "$IWCM_TMP/trace.txt" "$cma" >"$IWCM_TMP/check.log" 2>&1 <<'PY'
import re, sys
path, cma = sys.argv[1], sys.argv[2] == "1"
ev_re = re.compile(r"\s(\d+\.\d+):\s+([a-z_]+):\s+(.*)$")
lines = []
for l in open(path):
    m = ev_re.search(l)
    if m:
        lines.append((float(m.group(1)), m.group(2), m.group(3)))
iw = [(i, t, n, a) for i, (t, n, a) in enumerate(lines) if n.startswith("iw_cm_")]
ids = {}
for i, t, n, a in iw:
    m = re.search(r"\bid=(\d+)", a)
    if m:
        ids.setdefault(int(m.group(1)), []).append((i, n, a))
bad = []
def has(seq, name, arg=""):
    for k, (i, n, a) in enumerate(seq):
        if n == name and arg in a:
            return k
    return None
roles = {}
for cid, seq in ids.items():
    if seq[0][1] != "iw_cm_id_create":
        bad.append("id %d: first event %s" % (cid, seq[0][1]))
    if seq[-1][1] != "iw_cm_id_destroy":
        bad.append("id %d: last event %s" % (cid, seq[-1][1]))
    for k, (i, n, a) in enumerate(seq):
        if n != "iw_cm_event_delivered":
            continue
        e = re.search(r"event=(\S+)", a).group(1)
        if e == "CONNECT_REQUEST":
            continue
        if not any(n2 == "iw_cm_event_queued" and "event=%s" % e in a2 for _, n2, a2 in seq[:k]):
            bad.append("id %d: %s delivered, never queued" % (cid, e))
    req = has(seq, "iw_cm_event_delivered", "event=CONNECT_REQUEST")
    rep = has(seq, "iw_cm_event_delivered", "event=CONNECT_REPLY")
    if has(seq, "iw_cm_event_queued", "event=CONNECT_REQUEST") is not None:
        roles["listener"] = cid
    elif rep is not None:
        roles["active"] = cid
        taken = has(seq, "iw_cm_qp_ref", "taken")
        qrep = has(seq, "iw_cm_event_queued", "event=CONNECT_REPLY")
        if taken is None or qrep is None or taken > qrep:
            bad.append("active id %d: QP not taken before CONNECT_REPLY" % cid)
    elif req is not None:
        roles["passive"] = cid
        taken = has(seq, "iw_cm_qp_ref", "taken")
        est = has(seq, "iw_cm_event_delivered", "event=ESTABLISHED")
        if taken is None or est is None or not (req < taken < est):
            bad.append("passive id %d: not CONNECT_REQUEST, QP taken, ESTABLISHED" % cid)
    close = has(seq, "iw_cm_event_delivered", "event=CLOSE")
    if cid in (roles.get("active"), roles.get("passive")):
        dropped = has(seq, "iw_cm_qp_ref", "dropped")
        if close is None or dropped is None or dropped > close:
            bad.append("id %d: QP not dropped before CLOSE was delivered" % cid)
for r in ("listener", "active", "passive"):
    if r not in roles:
        bad.append("no %s id in the trace" % r)
if cma:
    c = [i for i, (t, n, a) in enumerate(lines) if n.startswith("cm_")]
    if not c:
        bad.append("no rdma_cma event in the trace")
    elif "active" in roles:
        s = ids[roles["active"]]
        if not (s[0][0] < c[-1] and c[0] < s[-1][0]):
            bad.append("rdma_cma events not within the active id's lifetime")
for cid in sorted(ids):
    print("id %d: %s" % (cid, " ".join(n[6:] + ("(" + re.search(r"event=(\S+)", a).group(1) + ")" if "event=" in a else "") for _, n, a in ids[cid])))
print("roles:", roles, "rdma_cma events:", sum(1 for _, n, _ in lines if n.startswith("cm_")))
for b in bad:
    print("BAD", b)
sys.exit(1 if bad else 0)
PY
prc=$?
while IFS= read -r l; do iwcm_log "$l"; done <"$IWCM_TMP/check.log"
iwcm_check "iw_cm event sequence per cm_id (listener, active, passive)" [ $prc -eq 0 ]
if [ $cma = 1 ]; then
	iwcm_check "rdma_cma's events in the same trace" \
		eval '! grep -q "BAD.*rdma_cma" "$IWCM_TMP/check.log"'
else
	ktap_test_skip "rdma_cma's events in the same trace: no $TR/events/rdma_cma"
fi
"$IWCM_TOP/tools/iwcm-top/iwcm-top" --trace "$IWCM_TMP/trace.txt" >"$IWCM_TMP/timeline.txt"
iwcm_check "tools/iwcm-top --trace prints the timelines" grep -q "^cm_id [0-9]*: [0-9]* events" "$IWCM_TMP/timeline.txt"
head -n 30 "$IWCM_TMP/timeline.txt" | while IFS= read -r l; do iwcm_log "$l"; done
iwcm_finish
