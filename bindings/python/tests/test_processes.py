"""Many processes and crashes: one approval runs once, whoever races for it, and a process
killed between the consume and the outcome (in the body, or after the claim before the body is
entered) leaves the approval spent and the outcome unknown."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap

import approval_gate as ag
from approval_gate import Claim, Grant, requires_approval
from conftest import events

RACERS = 16

RACER = textwrap.dedent(
    """
    import sys
    import approval_gate as ag
    from approval_gate import Claim, Grant, requires_approval

    store, id, effects = sys.argv[1:4]

    @requires_approval(operation="ledger.append")
    def append(entry: dict, grant: Grant) -> None:
        grant.assert_active()
        with open(effects, "a") as f:
            f.write(entry["line"] + "\\n")

    gate = ag.Gate.open(store)
    print("ready", flush=True)
    sys.stdin.readline()  # everyone starts together
    try:
        append({"line": "paid"}, Claim(gate, id, "append one line"))
        print("ran", flush=True)
    except ag.ApprovalGateError as refused:
        print("refused", refused.code, flush=True)
    """
)


def approve(gate: ag.Gate, action: str, operation: str, payload: dict) -> str:
    id = gate.request_approval(action, "a test", operation=operation, payload=payload).id
    gate.approve(id, by="alice")
    return id


def test_sixteen_processes_race_one_approval_and_exactly_one_runs(any_store, tmp_path):
    store = any_store
    gate = ag.Gate.open(store)
    id = approve(gate, "append one line", "ledger.append", {"line": "paid"})
    effects = tmp_path / "effects.txt"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, store, id, str(effects)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(RACERS)
    ]
    for racer in racers:
        assert racer.stdout.readline().strip() == "ready"
    for racer in racers:
        racer.stdin.write("go\n")
        racer.stdin.flush()
    answers = []
    for racer in racers:
        out, _ = racer.communicate(timeout=120)
        assert racer.returncode == 0
        answers.append(out.strip())
    assert answers.count("ran") == 1, answers
    assert answers.count("refused already_consumed") == RACERS - 1, answers
    assert effects.read_text() == "paid\n"
    log = events(gate, id)
    assert log.count("consumed") == 1 and log.count("execution_started") == 1
    assert log.count("consume_replayed") == RACERS - 1
    assert gate.verify_audit() > 0


CRASHER = textwrap.dedent(
    """
    import sys
    import approval_gate as ag
    from approval_gate import Claim, Grant, requires_approval

    store, id = sys.argv[1:3]

    @requires_approval(operation="deploy.production")
    def deploy(build: dict, grant: Grant) -> None:
        print("started", flush=True)
        sys.stdin.readline()  # killed here, in the middle of the side effect

    deploy({"build": 42}, Claim(ag.Gate.open(store), id, "deploy build 42"))
    """
)


def reopened_with_the_outcome_unknown(store: str, id: str) -> ag.Gate:
    """The store opened again after a crash mid-execution: its recovery has recorded the
    execution's outcome as unknown, and the approval stays spent."""
    gate = ag.Gate.open(store)
    assert events(gate, id)[-3:] == ["consumed", "execution_started", "execution_finished"]
    finished = [r for r in gate.audit_records() if r["id"] == id and r["event"] == "execution_finished"]
    assert finished[0]["outcome"] == "unknown"
    assert gate.check(id).status == "consumed"
    return gate


def test_a_process_killed_mid_execution_leaves_the_approval_spent_and_the_outcome_unknown(any_store):
    store = any_store
    id = approve(ag.Gate.open(store), "deploy build 42", "deploy.production", {"build": 42})
    crasher = subprocess.Popen(
        [sys.executable, "-c", CRASHER, store, id], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert crasher.stdout.readline().strip() == "started"
    os.kill(crasher.pid, signal.SIGKILL)
    crasher.wait(timeout=60)
    assert crasher.returncode == -signal.SIGKILL

    # The next open recovers: the execution's outcome is recorded as unknown, never retried.
    gate = reopened_with_the_outcome_unknown(store, id)
    ran = []
    try:
        gate.execute_approved(id, "deploy build 42", ran.append, operation="deploy.production", payload={"build": 42})
    except ag.AlreadyConsumed:
        pass
    else:
        raise AssertionError("a crashed execution's approval was usable again")
    assert ran == []
    assert gate.recover() == []  # idempotent: nothing left to repair


# Killed after the claim and the start written ahead, before the body is entered. No failpoint:
# the sealed body checks, inside the library's execute_approved (after the consume and
# `execution_started`, before the body), that the object it hands the body is the approved
# payload, reading the dataclass's fields. The check before the consume reads them once (the
# caller passes JSON values, so it reads none), so the second read in the process is the sealed
# body's: that one says so and parks on stdin.
CLAIM_CRASHER = textwrap.dedent(
    """
    import dataclasses
    import sys
    import approval_gate as ag
    from approval_gate import Claim, Grant, requires_approval

    store, id, marker = sys.argv[1:4]
    reads = 0

    @dataclasses.dataclass(frozen=True)
    class Build:
        number: int

        def __getattribute__(self, name):
            global reads
            if name == "number":
                reads += 1
                if reads == 2:  # the sealed body's check, after the claim
                    print("claimed", flush=True)
                    sys.stdin.readline()  # killed here, before the body runs
            return object.__getattribute__(self, name)

    @requires_approval(operation="deploy.production")
    def deploy(build: Build, grant: Grant) -> None:
        with open(marker, "w") as f:
            f.write("the body ran")

    deploy({"number": 42}, Claim(ag.Gate.open(store), id, "deploy build 42"))
    """
)


@dataclasses.dataclass(frozen=True)
class Build:
    number: int


def test_a_process_killed_after_the_claim_before_the_body_leaves_the_approval_spent_and_the_outcome_unknown(
    any_store, tmp_path
):
    store = any_store
    gate = ag.Gate.open(store)
    id = approve(gate, "deploy build 42", "deploy.production", {"number": 42})
    marker = tmp_path / "body-ran"
    crasher = subprocess.Popen(
        [sys.executable, "-c", CLAIM_CRASHER, store, id, str(marker)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert crasher.stdout.readline().strip() == "claimed"
        # Parked at the point: the claim is made and the start written ahead, nothing finished.
        # (This gate was opened before the crasher started: reading runs no recovery.)
        assert events(gate, id) == ["requested", "approved", "consumed", "execution_started"]
        assert gate.check(id).status == "consumed"
    finally:
        os.kill(crasher.pid, signal.SIGKILL)
        crasher.wait(timeout=60)
    assert crasher.returncode == -signal.SIGKILL
    assert not marker.exists(), "the body ran"
    assert events(gate, id)[-1] == "execution_started"  # the kill wrote nothing

    # The next open recovers: the outcome is recorded as unknown, never retried.
    gate = reopened_with_the_outcome_unknown(store, id)

    # Spent: neither the decorator nor a bare consume gets it again.
    ran = []

    @requires_approval(operation="deploy.production")
    def deploy(build: Build, grant: Grant) -> None:
        ran.append(build)

    try:
        deploy(Build(42), Claim(gate, id, "deploy build 42"))
    except ag.AlreadyConsumed:
        pass
    else:
        raise AssertionError("an approval claimed by a killed process was usable again")
    try:
        gate.consume(id, "deploy build 42", operation="deploy.production", payload={"number": 42})
    except ag.AlreadyConsumed:
        pass
    else:
        raise AssertionError("an approval claimed by a killed process was consumed again")
    assert ran == [] and not marker.exists()
    assert events(gate, id)[-2:] == ["consume_replayed", "consume_replayed"]
    assert gate.recover() == []  # idempotent: nothing left to repair
    assert gate.verify_audit() > 0
