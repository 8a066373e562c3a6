"""A Python request, run by the Rust CLI's `approval-gate exec`: one store, one payload
canonicalization, whichever language files, decides or executes.

Needs the `approval-gate` binary: `APPROVAL_GATE_BIN`, else the workspace's
`target/debug/approval-gate` (which `cargo test --workspace` builds, as `.ci/run` does before
this suite). Without it the tests skip, except in CI, where they fail.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

import approval_gate as ag
from approval_gate import Claim, Grant, requires_approval

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


@pytest.fixture
def cli() -> str:
    path = os.environ.get("APPROVAL_GATE_BIN") or os.path.join(ROOT, "target", "debug", "approval-gate")
    if not os.access(path, os.X_OK):
        message = f"the approval-gate binary is not at {path} (cargo build -p approval-gate-cli)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


PAYLOAD = {"to": "alice@example.com", "amount_cents": 125000, "rate": 0.0375, "memo": "Rechnung €1042 ✓"}


def exec_cli(cli: str, store: str, id: str, presented: str, out) -> subprocess.CompletedProcess:
    return subprocess.run(
        [cli, "--store", store, "exec", id, "--operation", "payments.transfer", "--payload-stdin",
         "--", "sh", "-c", f'cat > "{out}"'],
        input=presented.encode(),
        capture_output=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("APPROVAL_GATE_")},
    )


def test_the_rust_cli_runs_a_python_request_with_the_same_canonical_bytes(cli, gate, store, tmp_path):
    submitted = gate.request_approval("transfer 1250 EUR", "rent", operation="payments.transfer", payload=PAYLOAD)
    gate.approve(submitted.id, by="alice")
    out = tmp_path / "stdin.json"
    # The CLI gets the payload as other JSON text (another key order, spacing, escapes): it
    # canonicalizes it itself, and must find the same bytes Python's request carries.
    presented = json.dumps(dict(reversed(list(PAYLOAD.items()))), indent=2, ensure_ascii=True)
    done = exec_cli(cli, store, submitted.id, presented, out)
    assert done.returncode == 0, done.stderr.decode()
    assert out.read_text(encoding="utf-8") == ag.canonicalize(PAYLOAD)[0]
    assert gate.check(submitted.id).status == "consumed"
    finished = [r for r in gate.audit_records() if r["id"] == submitted.id and r["event"] == "execution_finished"]
    assert finished[0]["outcome"] == "ok"

    # And the Python decorator refuses the replay the CLI's execution made it.
    @requires_approval(operation="payments.transfer")
    def transfer(order: dict, grant: Grant) -> None:
        raise AssertionError("must not run")

    with pytest.raises(ag.AlreadyConsumed):
        transfer(PAYLOAD, Claim(gate, submitted.id, "transfer 1250 EUR"))


def test_the_rust_cli_refuses_a_changed_payload_of_a_python_request(cli, gate, store, tmp_path):
    submitted = gate.request_approval("transfer 1250 EUR", "rent", operation="payments.transfer", payload=PAYLOAD)
    gate.approve(submitted.id, by="alice")
    out = tmp_path / "stdin.json"
    done = exec_cli(cli, store, submitted.id, json.dumps({**PAYLOAD, "amount_cents": 125001}), out)
    assert done.returncode == 115, done.stderr.decode()  # mismatch
    assert not out.exists()
    assert gate.check(submitted.id).status == "approved_unconsumed"
