"""Shared fixtures: a fresh directory store per test, and requests approved by the human's
side of the library (``Gate.approve``, the same call as Rust's public ``Gate::approve``)."""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Optional

import pytest

import approval_gate as ag

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)


@pytest.fixture
def store(tmp_path) -> str:
    return str(tmp_path / "approvals")


@pytest.fixture
def gate(store) -> ag.Gate:
    return ag.Gate.open(store)


@pytest.fixture
def approved(gate) -> Callable[..., str]:
    """Files a request and approves it; returns its id."""

    def make(action: str, *, operation: Optional[str] = None, payload: Any = None) -> str:
        submitted = gate.request_approval(action, "a test", operation=operation, payload=payload)
        gate.approve(submitted.id, by="alice", reason="looks right")
        return submitted.id

    return make


def events(gate: ag.Gate, id: str) -> list:
    """The audit events of one request, in order."""
    return [record["event"] for record in gate.audit_records() if record["id"] == id]
