#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Hold a copy of another process's RDMA verbs file descriptors.

  fd_hold.py PID [PATTERN]
  fd_hold.py --exec LOG CMD [ARG...]

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
client's connection request and eat into the provider's timeout.
"""
import ctypes
import os
import signal
import subprocess
import sys
import time

SYS_pidfd_getfd = {"x86_64": 438, "aarch64": 438}.get(os.uname().machine, 438)


def main():
    pattern = "uverbs"
    if sys.argv[1] == "--exec":
        with open(sys.argv[2], "wb") as log:
            t = time.time()
            pid = subprocess.Popen(sys.argv[3:], stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=log).pid
        print("spawned %d at %.3f" % (pid, t), flush=True)
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
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
