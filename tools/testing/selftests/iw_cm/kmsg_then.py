#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Run a command the moment the kernel logs a line.

  kmsg_then.py READY_FILE PATTERN TIMEOUT_S CMD [ARG...]

Opens /dev/kmsg at its end, creates READY_FILE, waits for a new record
whose text contains PATTERN (a plain substring) and then replaces itself
with CMD (its exit status is CMD's).  Exits 124 if no such record comes
within TIMEOUT_S seconds.  Polling the kernel log from the shell takes
seconds per look on a TCG guest; stuck_handler.sh starts its second
connection with this so that the connection gets the whole stall.
"""
import os
import select
import sys
import time


def main():
    ready, pattern, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
    cmd = sys.argv[4:]
    if not cmd:
        sys.exit("usage: kmsg_then.py READY_FILE PATTERN TIMEOUT_S CMD [ARG...]")
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    os.lseek(fd, 0, os.SEEK_END)
    open(ready, "w").close()
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            sys.exit(124)
        select.select([fd], [], [], left)
        while True:
            try:
                rec = os.read(fd, 8192)
            except BlockingIOError:
                break
            except BrokenPipeError:
                # Records overwritten before this read: go on.
                continue
            # "prio,seq,usec,flags;text"
            text = rec.decode(errors="replace").split(";", 1)[-1]
            if pattern in text:
                os.close(fd)
                os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main()
