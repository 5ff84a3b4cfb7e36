#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Run a command the moment the kernel logs a line.

  kmsg_then.py READY_FILE PATTERN TIMEOUT_S CMD [ARG...]
  kmsg_then.py READY_FILE PATTERN TIMEOUT_S --note N PREFIX TEXT LOG CMD [ARG...]

Opens /dev/kmsg at its end, creates READY_FILE, waits for a new record
whose text contains PATTERN (a plain substring) and then replaces itself
with CMD (its exit status is CMD's).  Exits 124 if no such record comes
within TIMEOUT_S seconds.  Polling the kernel log from the shell takes
seconds per look on a TCG guest; stuck_handler.sh starts its second
connection with this so that the connection gets the whole stall.

With --note, CMD runs as a child instead, its output (stdout and stderr,
line by line: CMD must not buffer it) copied to LOG, and the moment its
Nth line starting with PREFIX comes, TEXT is written to the kernel log:
what CMD did is placed in the kernel log's order without a shell's
polling (each look seconds late under TCG).  CMD is killed after
TIMEOUT_S seconds (status 124); otherwise the status is CMD's.
"""
import subprocess
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
                if cmd[0] == "--note":
                    sys.exit(run_noting(int(cmd[1]), cmd[2], cmd[3], cmd[4], cmd[5:],
                                        timeout))
                os.execvp(cmd[0], cmd)


def run_noting(count, prefix, text, log_path, cmd, timeout):
    """CMD with its output copied to LOG_PATH and TEXT written to the
    kernel log at its COUNTth line starting with PREFIX."""
    seen = 0
    pending = b""
    pfx = prefix.encode()
    with open(log_path, "wb", buffering=0) as log:
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = child.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([out], [], [], left)[0]:
                child.kill()
                child.wait()
                return 124
            data = os.read(out, 65536)
            if not data:
                break
            log.write(data)
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.startswith(pfx):
                    seen += 1
                    if seen == count:
                        with open("/dev/kmsg", "w") as kmsg:
                            kmsg.write(text + "\n")
        return child.wait()


if __name__ == "__main__":
    main()
