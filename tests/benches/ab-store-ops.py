#!/usr/bin/env python3
"""Before against after for directory-store operations, alternating, on one disk (issue 42).

    python3 tests/benches/ab-store-ops.py BEFORE AFTER [OPS] [ROUNDS] [COUNT]

BEFORE and AFTER are two release builds of tests/src/bin/store-ops.rs (build the earlier
one from its own worktree with its own CARGO_TARGET_DIR); OPS a comma-separated list of
file, approve, deny, consume, execute (default: all but deny); ROUNDS (default 12) the
rounds, each timing COUNT (default 200) operations with one build and then the other, the
order swapped every round, since this disk's speed drifts within minutes. Each run is
store-ops's counted part only (its setup untimed), wall time over COUNT; the stores live
under APPROVAL_GATE_BENCH_DIR (else the system temporary directory). Prints each
operation's medians and in how many rounds AFTER was faster. Not part of CI.
"""
import statistics
import subprocess
import sys
import time

if len(sys.argv) < 3:
    sys.exit(__doc__)
builds = {"before": sys.argv[1], "after": sys.argv[2]}
ops = (sys.argv[3] if len(sys.argv) > 3 else "file,approve,consume,execute").split(",")
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 12
count = int(sys.argv[5]) if len(sys.argv) > 5 else 200


def per_op(build, op):
    """Microseconds a operation of one run of `build`."""
    run = subprocess.Popen(
        [build, op, str(count)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    if run.stdout.readline().strip() != "ready":
        sys.exit(f"{build} {op}: not ready")
    started = time.perf_counter()
    run.stdin.write("go\n")
    run.stdin.flush()
    said = run.stdout.readline().strip()
    took = time.perf_counter() - started
    run.stdin.write("exit\n")
    run.stdin.flush()
    if said != "done" or run.wait() != 0:
        sys.exit(f"{build} {op}: said {said!r}, exited {run.returncode}")
    return took / count * 1e6


for op in ops:
    times = {"before": [], "after": []}
    for r in range(rounds):
        for which in ("before", "after") if r % 2 == 0 else ("after", "before"):
            times[which].append(per_op(builds[which], op))
    before, after = (statistics.median(times[k]) for k in ("before", "after"))
    faster = sum(a < b for b, a in zip(times["before"], times["after"]))
    print(
        f"{op}: before {before:.0f} µs, after {after:.0f} µs ({after / before:.2f}×), "
        f"after faster in {faster} of {rounds} rounds"
    )
