#!/usr/bin/env python3
"""What `@requires_approval` does in Python alone, without the store.

The decorator's forms of `bench/execute.py`, with the gate's native `execute_approved` replaced
by a stub that canonicalizes the payload and hands the body fresh JSON values from those bytes,
as the binding does, with no consume, no audit line and no fsync: what remains is the
decorator's own work (binding the arguments, `json_form`, canonicalizing, the faithfulness check,
the body's copy). CPU only, so it stays readable on a loaded machine.

    python3 bench/overhead.py [CALLS]        # default 2000 per run, 15 runs per form

Prints median and fastest per call, in microseconds. No pytest: a plain script.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any, Callable

import approval_gate as ag
from approval_gate import Claim, requires_approval

from execute import Email

ID = "a1b2c3d4e5f6"


class StubGrant:
    def __init__(self, payload: Any) -> None:
        self.payload = payload

    def assert_active(self) -> None:
        pass


class StubNative:
    """Stands for `_native.Gate`: no store, the payload's round trip only."""

    def execute_approved(self, id: str, action: str, body: Callable[[Any], Any], *, operation: Any = None,
                         payload: Any = None) -> Any:
        if payload is None:
            return body(StubGrant(None))
        text, _ = ag._native.canonicalize(payload)
        return body(StubGrant(json.loads(text)))

    def refuse_payload_type(self, id: str, problem: str) -> Exception:
        raise AssertionError(problem)


@requires_approval(operation="bench.dict")
def with_dict(payload: dict, grant: Any) -> None:
    grant.assert_active()


@requires_approval(operation="bench.dataclass")
def with_dataclass(payload: Email, grant: Any) -> None:
    grant.assert_active()


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    gate = object.__new__(ag.Gate)
    gate._native = StubNative()  # type: ignore[assignment]
    claim = Claim(gate, ID, "bench")
    forms = {
        "stub alone, no payload": lambda n: gate._native.execute_approved(ID, "bench", StubGrant.assert_active),
        "decorator, dict": lambda n: with_dict({"to": "alice@example.com", "subject": f"n{n}"}, claim),
        "decorator, dataclass": lambda n: with_dataclass(Email("alice@example.com", f"n{n}"), claim),
    }
    print(f"{'form':<28} {'median':>9} {'fastest':>9}  (15 runs of {calls} calls, µs per call)")
    for name, call in forms.items():
        for n in range(calls):  # warm up: the annotations resolved, caches filled
            call(n)
        runs = []
        for _ in range(15):
            start = time.perf_counter()
            for n in range(calls):
                call(n)
            runs.append((time.perf_counter() - start) / calls * 1e6)
        print(f"{name:<28} {statistics.median(runs):9.2f} {min(runs):9.2f}")


if __name__ == "__main__":
    main()
