#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""A broken or malicious MPA peer (RFC 5044, with the MPA v2 extension of
RFC 6581) on plain TCP, for the iw_cm selftests (hostile_peer.sh).

As a server it plays the passive side against an rdma_cm client (rping -c):
it reads the client's MPA request and answers with the chosen fault.  As a
client it plays the active side against an rdma_cm listener (rping -s -P):
it sends the chosen malformed request and reads what comes back.  It never
speaks DDP/RDMAP: a connection that does get established is closed (or
reset) by the peer after a moment.

  mpa_peer.py server CASE ADDR PORT [--timeout S]
  mpa_peer.py client CASE ADDR PORT [--timeout S] [--pdata HEX]
  mpa_peer.py flood ADDR PORT [--count N] [--parallel P] [--timeout S]
  mpa_peer.py list server|client

Prints one line per step ("peer: ...") and exits 0 when it could play its
part (a TCP connection was made), 1 otherwise.  --pdata gives the ULP's
private data of the client cases that a kernel listener must accept
(rtr_*, noread_hold): an NVMe/RDMA CM request for nvmet-rdma, say
(remote_peer.sh); by default 4 zero bytes (rtr_*) or none (noread_hold).

As a flood (connect_flood.sh) it opens N TCP connections, P at a time,
each sending a well-formed MPA v2 request, and sorts what each gets back:
an MPA reply (accepted, or rejected with the reject flag: served), the
connection closed or reset without a reply, or the TCP connect refused
(refused); a reply that is not one, or nothing within --timeout seconds,
is a failure (exit 1).  Prints one line with the counts.  It opens at
most 16 connections between two looks at the ready ones, so that each
request goes out as soon as its connection is up: siw closes a passive
connection whose MPA request has not come 10 s after it accepted it, and
under TCG opening 1200 sockets before sending a request took longer than
that (every request was closed unread; 2026-12-07).
"""

import argparse
import socket
import struct
import sys
import time

KEY_REQ = b"MPA ID Req Frame"
KEY_REP = b"MPA ID Rep Frame"
F_MARKERS = 0x8000
F_CRC = 0x4000
F_REJECT = 0x2000
F_ENHANCED = 0x1000
V2_PEER_TO_PEER = 0x8000
V2_WRITE_RTR = 0x8000
V2_READ_RTR = 0x4000
IRD_ORD_MASK = 0x3FFF
MPA_MAX_PRIVDATA = 512


def log(msg):
    print("peer: " + msg, flush=True)


def frame(key, bits, pdata, pd_len=None):
    """An MPA request/reply frame: key, bits (flags | revision), pd_len."""
    if pd_len is None:
        pd_len = len(pdata)
    return key + struct.pack(">HH", bits, pd_len) + pdata


def v2(ird, ord_):
    return struct.pack(">HH", ird, ord_)


def recv_exact(s, n, timeout):
    s.settimeout(timeout)
    buf = b""
    while len(buf) < n:
        try:
            chunk = s.recv(n - len(buf))
        except (socket.timeout, ConnectionError, OSError):
            break
        if not chunk:
            break
        buf += chunk
    return buf


def read_frame(s, timeout):
    """Reads one MPA frame; returns (key, bits, pd_len, pdata) or None."""
    hdr = recv_exact(s, 20, timeout)
    if len(hdr) < 20:
        log("frame: %d header bytes, then nothing" % len(hdr))
        return None
    key = hdr[:16]
    bits, pd_len = struct.unpack(">HH", hdr[16:20])
    pdata = b""
    if pd_len <= MPA_MAX_PRIVDATA:
        pdata = recv_exact(s, pd_len, timeout)
    log("frame: key %r, bits %#06x (rev %d), pd_len %d, %d bytes of private data"
        % (key, bits, bits & 0xFF, pd_len, len(pdata)))
    return key, bits, pd_len, pdata


def reset(s):
    """Closes with an RST (SO_LINGER 0)."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def valid_reply(req):
    """A well-formed MPA v2 reply to request `req` (what siw would send)."""
    _, bits, _, pdata = req
    ird = ord_ = 8
    if bits & F_ENHANCED and len(pdata) >= 4:
        rird, rord = struct.unpack(">HH", pdata[:4])
        ird = rord & IRD_ORD_MASK
        ord_ = rird & IRD_ORD_MASK
        if rird & V2_PEER_TO_PEER:
            ird |= V2_PEER_TO_PEER
            ord_ |= V2_WRITE_RTR if rord & V2_WRITE_RTR else V2_READ_RTR
        return frame(KEY_REP, F_ENHANCED | 2, v2(ird, ord_))
    return frame(KEY_REP, 1, b"")


# ---- the passive side's faults (against an rdma_cm client) --------------

def srv_garbage(s, req):
    s.sendall(b"X" * 64)


def srv_overlong_pd_len(s, req):
    s.sendall(frame(KEY_REP, F_ENHANCED | 2, v2(8, 8) + b"P" * 596, pd_len=600))


def srv_reject(s, req):
    s.sendall(frame(KEY_REP, F_REJECT | 2, b""))


def srv_reject_pdata(s, req):
    s.sendall(frame(KEY_REP, F_REJECT | F_ENHANCED | 2, v2(8, 8) + b"go away, full"))


def srv_wrong_key(s, req):
    s.sendall(frame(KEY_REQ, F_ENHANCED | 2, v2(8, 8)))


def srv_bad_revision(s, req):
    s.sendall(frame(KEY_REP, F_ENHANCED | 7, v2(8, 8)))


def srv_truncated(s, req):
    s.sendall(valid_reply(req)[:10])


def srv_truncated_pdata(s, req):
    s.sendall(frame(KEY_REP, F_ENHANCED | 2, v2(8, 8) + b"p" * 26, pd_len=100))


def srv_reply_then_rst(s, req):
    s.sendall(valid_reply(req))
    time.sleep(0.5)


def srv_reply_then_fpdu(s, req):
    # A responder that sends at once (siw's own does: ESTABLISHED as soon
    # as its reply is out): a valid reply and, in the same segment, the
    # start of an FPDU (an MPA length and a DDP untagged header).
    s.sendall(valid_reply(req) + struct.pack(">H", 18) + b"\x41\x43" + b"\0" * 16)


def srv_reply(s, req):
    s.sendall(valid_reply(req))


def srv_huge_ird_ord(s, req):
    # The responder's IRD 0x3fff becomes the initiator's ORD: upstream siw
    # accepts it unclamped (relaxed IRD negotiation) and reports it to the
    # IWCM as a truncated u8 beyond the device's max_ord.
    s.sendall(frame(KEY_REP, F_ENHANCED | 2, v2(IRD_ORD_MASK, 1)))
    time.sleep(0.5)


def srv_enhanced_no_pdata(s, req):
    s.sendall(frame(KEY_REP, F_ENHANCED | 2, b""))


def srv_enhanced_short_pdata(s, req):
    s.sendall(frame(KEY_REP, F_ENHANCED | 2, b"\x00\x08"))


def srv_silence(s, req):
    pass


# name: (function, how the connection ends: close | rst | hold)
SERVER_CASES = {
    "garbage": (srv_garbage, "close"),
    "overlong_pd_len": (srv_overlong_pd_len, "close"),
    # A reject without private data is followed by nothing siw reads as
    # data: upstream siw_recv_mpa_rr() reads beyond the frame and takes an
    # EOF that arrived with it for a protocol error (CONNECT_REPLY -EINVAL,
    # rdma_cm's CONNECT_ERROR) instead of the reject (-ECONNRESET,
    # REJECTED); the test siw's 0008 no longer reads there.  Wait for siw
    # to close, so that the case tests the reject with either siw.
    "reject": (srv_reject, "hold"),
    "reject_pdata": (srv_reject_pdata, "close"),
    "wrong_key": (srv_wrong_key, "close"),
    "bad_revision": (srv_bad_revision, "close"),
    "truncated": (srv_truncated, "close"),
    "truncated_pdata": (srv_truncated_pdata, "close"),
    "reply_then_rst": (srv_reply_then_rst, "rst"),
    # The FPDU's bytes belong to the QP, not to the reply
    # (tools/testing/siw/0008; siw failed the connect, -EINVAL).
    "reply_then_fpdu": (srv_reply_then_fpdu, "hold"),
    "huge_ird_ord": (srv_huge_ird_ord, "close"),
    "enhanced_no_pdata": (srv_enhanced_no_pdata, "close"),
    "enhanced_short_pdata": (srv_enhanced_short_pdata, "close"),
    "silence": (srv_silence, "hold"),
    # A valid reply, then whatever comes (an RDMA READ request) read and
    # never answered until the client closes (rdma_disc -m read-close).
    "reply_hold": (srv_reply, "hold"),
}


# ---- the active side's faults (against an rdma_cm listener) --------------

def req_v2(ulp=b""):
    return frame(KEY_REQ, F_ENHANCED | 2, v2(8, 8) + ulp)


def req_rtr(ulp=b"\0" * 4):
    """A peer-to-peer MPA v2 request asking for an RTR frame (RDMA WRITE)."""
    return frame(KEY_REQ, F_ENHANCED | 2,
                 v2(8 | V2_PEER_TO_PEER, 8 | V2_WRITE_RTR) + ulp)


# The client cases whose request carries the ULP's private data (--pdata):
# name -> the request for that private data.
ULP_REQUESTS = {
    "rtr_hold": req_rtr,
    "rtr_close": req_rtr,
    "rtr_fin": req_rtr,
    "noread_hold": req_v2,
}


CLIENT_CASES = {
    "garbage": (b"X" * 64, "close"),
    "overlong_pd_len": (frame(KEY_REQ, F_ENHANCED | 2, v2(8, 8) + b"P" * 596, pd_len=600), "close"),
    "wrong_key": (frame(KEY_REP, F_ENHANCED | 2, v2(8, 8)), "close"),
    "bad_revision": (frame(KEY_REQ, F_ENHANCED | 7, v2(8, 8)), "close"),
    "markers": (frame(KEY_REQ, F_MARKERS | F_ENHANCED | 2, v2(8, 8)), "close"),
    "enhanced_short_pdata": (frame(KEY_REQ, F_ENHANCED | 2, b"\x00\x08"), "close"),
    "truncated": (req_v2()[:10], "close"),
    "truncated_hold": (req_v2()[:10], "hold"),
    # Not a byte of MPA: held beyond siw's MPA timer (5 s), or closed
    # before it (each left a siw endpoint behind, tools/testing/siw/0006).
    "silent_hold": (b"", "hold"),
    "silent_close": (b"", "close"),
    # Silent until siw closes the connection (its MPA timer, 5 s) or the
    # --timeout: beyond its listener and device (siw_halfopen_unplug.sh).
    "silent_hold_long": (b"", "hold_long"),
    "truncated_pdata": (frame(KEY_REQ, F_ENHANCED | 2, v2(8, 8) + b"p" * 26, pd_len=100), "close"),
    "request_then_rst": (req_v2(b"hello"), "rst"),
    "long_pdata": (req_v2(b"L" * 300), "close"),
    "huge_ird_ord": (frame(KEY_REQ, F_ENHANCED | 2, v2(IRD_ORD_MASK, IRD_ORD_MASK)), "close"),
    # A well-formed peer-to-peer request that asks for an RTR frame (an
    # RDMA WRITE of length 0 as the initiator's first frame), the reply
    # read, and then no RTR: upstream siw has accepted and waits for that
    # frame with no timer, so the listener's connection is never
    # ESTABLISHED (iser.sh: isert's DEVICE_REMOVAL waited for it for good,
    # tools/testing/isert/0004); the test siw closes it after 5 s
    # (tools/testing/siw/0012).  Held until --timeout (then reset) or
    # until the listener's side closes.
    "rtr_hold": (req_rtr(), "rtr_hold"),
    # The same, reset once the reply is in: siw reports the reset as
    # CLOSE before ESTABLISHED (the C iw_cm BUG()s in cm_close_handler()).
    # (A FIN would not do: it wakes siw's RTR data_ready, which then
    # reports ESTABLISHED first.)
    "rtr_close": (req_rtr(), "rtr_close"),
    # The same, half-closed once the reply is in (a FIN, then silent but
    # reading until --timeout): the FIN wakes siw's RTR data_ready while
    # its close work is queued, so ESTABLISHED and CLOSE race (siw may
    # report ESTABLISHED after CLOSE: never a WARN with ours).
    "rtr_fin": (req_rtr(), "rtr_fin"),
    # A well-formed request whose reply is never read: the listener
    # accepts (ESTABLISHED at once, no RTR) and the peer never sends a
    # byte more, until --timeout or the listener closes.
    "noread_hold": (req_v2(), "noread_hold"),
}


def hold(s, hold_s):
    """Holds the connection silent (reading whatever comes) for hold_s
    seconds; True if it is still open then, False if the listener closed
    it (which it says, with when: peer_lib.sh's rtr_timeout reads that)."""
    log("holding the connection silent for %.0f s" % hold_s)
    s.settimeout(hold_s)
    t0 = time.time()
    try:
        while s.recv(4096):
            pass
        log("closed by the listener after %.1f s" % (time.time() - t0))
    except socket.timeout:
        log("still open after %.0f s" % hold_s)
        return True
    except OSError as e:
        log("closed by the listener after %.1f s (%s)" % (time.time() - t0, e.strerror))
    return False


def end(s, how, hold_s):
    if how == "rst":
        log("closing with RST")
        reset(s)
        return
    if how == "hold":
        hold(s, hold_s)
    log("closing")
    s.close()


def run_server(case, addr, port, timeout):
    fn, how = SERVER_CASES[case]
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(4)
    ls.settimeout(timeout)
    log("server %s listening on %s:%d" % (case, addr, port))
    try:
        s, peer = ls.accept()
    except socket.timeout:
        log("no connection within %d s" % timeout)
        return 1
    log("connection from %s:%d" % peer)
    req = read_frame(s, timeout)
    if req is None:
        req = (b"", 0, 0, b"")
    fn(s, req)
    end(s, how, min(timeout, 15))
    ls.close()
    return 0


def run_burst(addr, port, n):
    """Opens n TCP connections at once without a word of MPA, holds them
    2 s and closes them: more than a listener's siw work elements (its
    backlog), so siw leaves some of them unaccepted in the listening
    socket's queue when their close arrives."""
    socks = []
    failed = 0
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect((addr, port))
        except BlockingIOError:
            pass
        except OSError as e:
            log("connect: %s" % e)
            failed += 1
        socks.append(s)
    time.sleep(2)
    for s in socks:
        s.close()
    log("burst of %d connections opened and closed, %d failed" % (n, failed))
    return 1 if failed else 0


# Connections a flood opens between two looks at the ready ones.
FLOOD_BATCH = 16


def run_flood(addr, port, n, parallel, timeout):
    """See the module's text: N MPA requests, P connections at a time."""
    import errno
    import resource
    import selectors

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = parallel + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(want, hard)))
    sel = selectors.DefaultSelector()
    req = req_v2(b"flood")
    out = dict.fromkeys(["accepted", "rejected", "closed", "refused",
                         "unanswered", "garbled"], 0)
    live = {}  # socket -> [bytes read, deadline]
    t0 = time.time()

    def finish(s, what):
        out[what] += 1
        sel.unregister(s)
        del live[s]
        if what == "accepted":
            # Closed at once: the listener sees the connection end.
            reset(s)
        else:
            s.close()

    started = 0
    last_sweep = 0.0
    while started < n or live:
        opened = 0
        while len(live) < parallel and started < n and opened < FLOOD_BATCH:
            opened += 1
            started += 1
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect((addr, port))
            except BlockingIOError:
                pass
            except OSError:
                out["refused"] += 1
                s.close()
                continue
            live[s] = [b"", time.time() + timeout]
            sel.register(s, selectors.EVENT_WRITE)
        # Not blocking while there is room to open more.
        more = len(live) < parallel and started < n
        for key, ev in sel.select(0 if more else 0.2):
            s = key.fileobj
            if ev & selectors.EVENT_WRITE:
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    finish(s, "refused" if err == errno.ECONNREFUSED else "closed")
                    continue
                try:
                    s.send(req)
                except OSError:
                    finish(s, "closed")
                    continue
                sel.modify(s, selectors.EVENT_READ)
                continue
            try:
                chunk = s.recv(4096)
            except OSError:
                chunk = b""
            st = live[s]
            st[0] += chunk
            if len(st[0]) >= 20:
                key_, (bits, _) = st[0][:16], struct.unpack(">HH", st[0][16:20])
                if key_ != KEY_REP:
                    finish(s, "garbled")
                else:
                    finish(s, "rejected" if bits & F_REJECT else "accepted")
            elif not chunk:
                finish(s, "closed")
        now = time.time()
        if now - last_sweep >= 1:
            last_sweep = now
            for s in [s for s, st in live.items() if st[1] < now]:
                finish(s, "unanswered")
    log("flood: %d requests to %s:%d, %d at a time, in %.1f s: %s"
        % (n, addr, port, parallel, time.time() - t0,
           ", ".join("%s %d" % kv for kv in out.items())))
    return 1 if out["unanswered"] or out["garbled"] else 0


def hold_unread(s, timeout):
    """Waits, reading nothing, until the other side closes or resets the
    connection or `timeout` passes."""
    import select
    p = select.poll()
    p.register(s, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
    end_t = time.time() + timeout
    while time.time() < end_t:
        if p.poll(200):
            log("the listener closed the connection")
            return
    log("held %.0f s" % timeout)


def run_client(case, addr, port, timeout, pdata=None):
    if case == "burst":
        return run_burst(addr, port, 24)
    data, how = CLIENT_CASES[case]
    if pdata is not None:
        if case not in ULP_REQUESTS:
            log("--pdata is for the cases %s only" % " ".join(ULP_REQUESTS))
            return 1
        data = ULP_REQUESTS[case](pdata)
    s = socket.create_connection((addr, port), timeout=timeout)
    log("client %s connected to %s:%d at %.3f, sending %d bytes"
        % (case, addr, port, time.time(), len(data)))
    s.sendall(data)
    if how == "hold":
        end(s, how, min(timeout, 8))
        return 0
    if how == "hold_long":
        end(s, "hold", timeout)
        return 0
    if how == "noread_hold":
        log("request sent; the reply is never read")
        hold_unread(s, timeout)
        s.close()
        return 0
    if how in ("rtr_hold", "rtr_close", "rtr_fin"):
        rep = read_frame(s, timeout)
        if rep is None or rep[0] != KEY_REP or rep[1] & F_REJECT:
            log("no MPA reply accepting the request")
            s.close()
            return 1
        log("accepted; the RTR frame it asked for is never sent")
        if how == "rtr_fin":
            log("half-closing (FIN), then reading until closed")
            s.shutdown(socket.SHUT_WR)
            end(s, "hold", timeout)
            return 0
        # (rtr_hold still open at its end resets: a FIN would race siw's
        # RTR data_ready against its close work, which upstream siw does
        # not survive; rtr_fin is that case.)
        end(s, "rst" if how == "rtr_close" or hold(s, timeout) else "close", 0)
        return 0
    rep = read_frame(s, 3)
    if rep is not None and rep[1] & F_REJECT:
        log("rejected by the listener")
    end(s, how, 0)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("role", choices=["server", "client", "flood", "list"])
    ap.add_argument("case")
    ap.add_argument("addr", nargs="?")
    ap.add_argument("port", nargs="?", type=int)
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--parallel", type=int, default=512)
    ap.add_argument("--pdata", help="the ULP's private data, in hex")
    a = ap.parse_args()
    if a.role == "flood":
        # flood ADDR PORT: the case is the address.
        try:
            return run_flood(a.case, int(a.addr), a.count, a.parallel, a.timeout)
        except OSError as e:
            log("socket error: %s" % e)
            return 1
    if a.role == "list":
        print(" ".join(SERVER_CASES if a.case == "server" else CLIENT_CASES))
        return 0
    try:
        if a.role == "server":
            return run_server(a.case, a.addr, a.port, a.timeout)
        pdata = None
        if a.pdata is not None:
            try:
                pdata = bytes.fromhex(a.pdata)
            except ValueError:
                log("--pdata: not hex: %r" % a.pdata)
                return 2
            if len(pdata) > MPA_MAX_PRIVDATA - 4:
                log("--pdata: %d bytes, more than MPA allows" % len(pdata))
                return 2
        return run_client(a.case, a.addr, a.port, a.timeout, pdata)
    except OSError as e:
        log("socket error: %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
