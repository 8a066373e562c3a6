#!/usr/bin/env python3
"""What asking a file's times costs its next fdatasync (issue 42).

    python3 tests/benches/stat-then-sync.py [DIR] [ROUNDS]

In DIR (default: the current directory; put it on the disk you mean to measure), a 1 MiB
file written and synced once, then 2,000 times: 200 bytes overwritten in place and
fdatasync'ed, with and without an fstat (which asks for the file's times, as Rust's
std::fs::Metadata does) before each write; the rounds alternate. Prints each round's median.
On Linux 6.13 and later, a file whose times were asked for gets a fine-grained time at its
next write, which dirties its inode; on ext4 without a journal that fdatasync then writes
the inode table as well. No third-party modules; not part of CI: a measurement tool.
"""
import os
import statistics
import sys
import tempfile
import time

where = sys.argv[1] if len(sys.argv) > 1 else "."
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3


def median_sync(directory, stat_first, n=2000):
    path = os.path.join(directory, "synced")
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        os.write(fd, b"\0" * (1 << 20))
        os.fsync(fd)
        took = []
        for i in range(n):
            started = time.perf_counter()
            if stat_first:
                os.fstat(fd)
            os.pwrite(fd, b"x" * 200, (i * 200) % (1 << 20))
            os.fdatasync(fd)
            took.append(time.perf_counter() - started)
        return statistics.median(took) * 1e6
    finally:
        os.close(fd)
        os.unlink(path)


with tempfile.TemporaryDirectory(dir=where) as directory:
    for _ in range(rounds):
        plain = median_sync(directory, False)
        stated = median_sync(directory, True)
        print(f"overwrite + fdatasync: {plain:.0f} µs; with an fstat before each write: {stated:.0f} µs")
