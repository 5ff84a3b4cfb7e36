#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Hold a copy of another process's RDMA verbs file descriptors.

  fd_hold.py PID [PATTERN]

Duplicates (pidfd_getfd(2), as root) every file descriptor of PID whose
/proc link contains PATTERN (default "uverbs"), prints "held N", and keeps
them until it is killed.  PID's verbs device may be opened later: it
polls for up to 20 s.  While it holds
them, the verbs objects of PID (its QPs) outlive PID: unload_race.sh uses
it to keep a cm_id referenced by the provider after rdma_cm is gone.
"""
import ctypes
import os
import signal
import sys
import time

SYS_pidfd_getfd = {"x86_64": 438, "aarch64": 438}.get(os.uname().machine, 438)


def main():
    pid = int(sys.argv[1])
    pattern = sys.argv[2] if len(sys.argv) > 2 else "uverbs"
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
