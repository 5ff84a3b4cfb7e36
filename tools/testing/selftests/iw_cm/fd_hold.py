#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Hold a copy of another process's RDMA verbs file descriptors.

  fd_hold.py PID [PATTERN]
  fd_hold.py --exec LOG [--kill-connected PORT] CMD [ARG...]

Duplicates (pidfd_getfd(2), as root) every file descriptor of PID whose
/proc link contains PATTERN (default "uverbs"), prints "held N", and keeps
them until it is killed.  PID's verbs device may be opened later: it
polls for up to 20 s.  While it holds
them, the verbs objects of PID (its QPs) outlive PID: unload_race.sh uses
it to keep a cm_id referenced by the provider after rdma_cm is gone.

With --exec it starts CMD itself (output to LOG) once Python is up, and
prints "spawned PID at T" (T: the wall-clock time of the start, as
`date +%s.%N` gives it) before it holds PID's verbs files: under TCG
Python takes seconds to start, which would otherwise come after the
client's connection request and eat into the provider's timeout.  With
--kill-connected, once it holds the files and CMD has a TCP connection
to PORT established (siw sends its MPA request as soon as it has), it
kills CMD with SIGKILL, reaps it (every file of CMD is closed then) and
prints "killed PID at T connected yes|no": no process of the caller's
between the connection and the kill (each costs about a second under
TCG).
"""
import ctypes
import os
import signal
import subprocess
import sys
import time

SYS_pidfd_getfd = {"x86_64": 438, "aarch64": 438}.get(os.uname().machine, 438)


def die_with_parent():
    """In the child: SIGKILL when fd_hold.py dies (the test's cleanup kills
    fd_hold.py only: the client must not outlive it, holding rdma_ucm)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def connected(port):
    """A TCP connection to PORT is established (/proc/net/tcp, tcp6)."""
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            rem, state = fields[2], fields[3]
            if state == "01" and int(rem.rsplit(":", 1)[1], 16) == port:
                return True
    return False


def main():
    pattern = "uverbs"
    kill_port = None
    child = None
    if sys.argv[1] == "--exec":
        log_path = sys.argv[2]
        cmd = sys.argv[3:]
        if cmd[:1] == ["--kill-connected"]:
            kill_port = int(cmd[1])
            cmd = cmd[2:]
        with open(log_path, "wb") as log:
            t = time.time()
            child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=log,
                                     preexec_fn=die_with_parent)
        pid = child.pid
        print("spawned %d at %.6f" % (pid, t), flush=True)
    else:
        pid = int(sys.argv[1])
        if len(sys.argv) > 2:
            pattern = sys.argv[2]
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    held = []
    # PID may not have opened its verbs device yet: poll for up to 20 s.
    deadline = time.monotonic() + 20
    while not held and time.monotonic() < deadline:
        for name in os.listdir("/proc/%d/fd" % pid):
            try:
                target = os.readlink("/proc/%d/fd/%s" % (pid, name))
            except OSError:
                continue
            if pattern not in target:
                continue
            fd = libc.syscall(SYS_pidfd_getfd, pidfd, int(name), 0)
            if fd < 0:
                print("pidfd_getfd %s (%s): errno %d" % (name, target, ctypes.get_errno()), flush=True)
                return 1
            held.append(fd)
        if not held:
            time.sleep(0.05)
    print("held %d" % len(held), flush=True)
    if not held:
        return 1
    if kill_port is not None:
        deadline = time.monotonic() + 10
        up = connected(kill_port)
        while not up and time.monotonic() < deadline:
            time.sleep(0.02)
            up = connected(kill_port)
        child.kill()
        child.wait()
        print("killed %d at %.6f connected %s" % (pid, time.time(), "yes" if up else "no"),
              flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
