"""The package as a typed program sees it: ``mypy --strict`` accepts a typical program using
every public name, each exception class included."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import approval_gate as ag
from approval_gate import errors

TYPICAL = '''\
from __future__ import annotations

import dataclasses

import approval_gate as ag
from approval_gate import (
    ApprovalGateError,
    Claim,
    Gate,
    Grant,
    GrantClosed,
    InvalidInput,
    InvalidPayload,
    PayloadType,
    requires_approval,
)


@dataclasses.dataclass(frozen=True)
class Email:
    to: str
    subject: str


@requires_approval(operation="smtp.send")
def send(email: Email, grant: Grant) -> str:
    grant.assert_active()
    return email.to


def run(gate: Gate, id: str) -> str:
    try:
        return send(Email("a@example.com", "hi"), Claim(gate, id, "send"))
    except (GrantClosed, InvalidInput, InvalidPayload, PayloadType) as refused:
        return refused.code
    except ApprovalGateError as refused:
        return refused.message
'''


def test_every_exception_class_is_exported_by_name():
    classes = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, errors.ApprovalGateError)
    }
    assert classes == set(errors.__all__)
    for name in classes:
        assert name in ag.__all__, name
        assert getattr(ag, name) is getattr(errors, name)


def test_mypy_strict_accepts_a_typical_program_using_every_exception_class(tmp_path):
    every = "\n".join(f"caught_{name}: type[ag.{name}] = ag.{name}" for name in errors.__all__)
    imported = "from approval_gate import " + ", ".join(errors.__all__) + "\n"
    program = tmp_path / "program.py"
    program.write_text(TYPICAL + "\n" + imported + every + "\n")
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull, str(program)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
