#!/usr/bin/env python3
"""What the Python path costs next to the Rust one: `execute_approved` end to end.

The same measurement as the library's `cargo bench -p approval-gate --bench gate --
execute_approved`: a request filed and approved just before (untimed), then one timed
execution (consume, `execution_started`, the body, `execution_finished`) on a directory store.
Three Python forms, each timed the same way:

- `gate.execute_approved(id, action, body)`, no payload: the Rust bench's exact case;
- the `@requires_approval` decorator with a small dict payload (canonicalized in Rust, the
  body's copy rebuilt from the approved bytes);
- the decorator with a dataclass payload (the faithfulness check before the consume, and the
  dataclass rebuilt for the body).

    python3 bench/execute.py [SAMPLES]        # default 50; stores under APPROVAL_GATE_BENCH_DIR
    python3 bench/execute.py SAMPLES --interleaved

Prints median, fastest and slowest per form, in milliseconds. By default each form's samples
run one after the other; `--interleaved` takes one sample of each form in turn, so that a
change of the machine's load (a shared machine) falls on the three forms alike, and adds each
form's median against the no-payload one. No pytest: a plain script.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import tempfile
import time

import approval_gate as ag
from approval_gate import Claim, Grant, requires_approval


@dataclasses.dataclass(frozen=True)
class Email:
    to: str
    subject: str


@requires_approval(operation="bench.dict")
def with_dict(payload: dict, grant: Grant) -> None:
    grant.assert_active()


@requires_approval(operation="bench.dataclass")
def with_dataclass(payload: Email, grant: Grant) -> None:
    grant.assert_active()


def body(grant: Grant) -> None:
    grant.assert_active()


def one(gate: ag.Gate, n: int, form: str) -> float:
    """One timed execution of `form` on a request filed and approved just before (untimed)."""
    action = f"bench {form} {n}"
    if form == "execute_approved":
        operation, payload = None, None
    elif form == "decorator, dict":
        operation, payload = "bench.dict", {"to": "alice@example.com", "subject": f"n{n}"}
    else:
        operation, payload = "bench.dataclass", Email("alice@example.com", f"n{n}")
    id = gate.request_approval(action, "bench", operation=operation, payload=payload).id
    gate.approve(id, by="bench")
    start = time.perf_counter()
    if form == "execute_approved":
        gate.execute_approved(id, action, body)
    elif form == "decorator, dict":
        with_dict(payload, Claim(gate, id, action))
    else:
        with_dataclass(payload, Claim(gate, id, action))
    return time.perf_counter() - start


def measure(gate: ag.Gate, samples: int, form: str) -> list:
    return [one(gate, n, form) for n in range(samples)]


FORMS = ("execute_approved", "decorator, dict", "decorator, dataclass")


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--interleaved"]
    interleaved = len(args) < len(sys.argv) - 1
    samples = int(args[0]) if args else 50
    root = os.environ.get("APPROVAL_GATE_BENCH_DIR") or tempfile.gettempdir()
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        gate = ag.Gate.open(os.path.join(tmp, "gate"))
        measure(gate, 5, "execute_approved")  # warm up: the store's files exist
        print(f"{'form':<28} {'median':>9} {'fastest':>9} {'slowest':>9}  ({samples} samples, ms)")
        if interleaved:
            times = {form: [] for form in FORMS}
            for n in range(5, 5 + samples):  # past the warm-up's actions
                for form in FORMS:
                    times[form].append(one(gate, n, form) * 1000)
            base = statistics.median(times["execute_approved"])
            for form in FORMS:
                median = statistics.median(times[form])
                print(
                    f"{form:<28} {median:9.2f} {min(times[form]):9.2f} {max(times[form]):9.2f}"
                    f"  x{median / base:.3f}"
                )
            return
        for form in FORMS:
            times = [t * 1000 for t in measure(gate, samples, form)]
            print(f"{form:<28} {statistics.median(times):9.2f} {min(times):9.2f} {max(times):9.2f}")


if __name__ == "__main__":
    main()
