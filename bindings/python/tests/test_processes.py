"""Many processes and crashes: one approval runs once, whoever races for it, and a process
killed between the consume and the outcome leaves the approval spent and the outcome unknown."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import approval_gate as ag
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
    gate = ag.Gate.open(store)
    assert events(gate, id)[-3:] == ["consumed", "execution_started", "execution_finished"]
    finished = [r for r in gate.audit_records() if r["id"] == id and r["event"] == "execution_finished"]
    assert finished[0]["outcome"] == "unknown"
    assert gate.check(id).status == "consumed"
    ran = []
    try:
        gate.execute_approved(id, "deploy build 42", ran.append, operation="deploy.production", payload={"build": 42})
    except ag.AlreadyConsumed:
        pass
    else:
        raise AssertionError("a crashed execution's approval was usable again")
    assert ran == []
    assert gate.recover() == []  # idempotent: nothing left to repair
