"""Shared fixtures: a fresh directory store per test, and requests approved by the human's
side of the library (``Gate.approve``, the same call as Rust's public ``Gate::approve``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from typing import Any, Callable, Optional
from urllib.parse import urlsplit, urlunsplit

import pytest

import approval_gate as ag

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)


# The operator's settings the library reads (issue 37, 15): none of this machine's or user's
# may reach a test, and no test may open the real `~/.approval-gate`.
SETTINGS_ENV = [
    "APPROVAL_GATE_STORE",
    "APPROVAL_GATE_DIR",
    "APPROVAL_GATE_CONFIG",
    "APPROVAL_GATE_APPROVERS",
    "APPROVAL_GATE_QUORUM",
    "APPROVAL_GATE_MAX_PENDING",
    "APPROVAL_GATE_MAX_REQUESTS",
    "APPROVAL_GATE_DEFAULT_TTL",
    "APPROVAL_GATE_SIGNING_KEY",
    "APPROVAL_GATE_SSH_KEYGEN",
    "APPROVAL_GATE_SYSTEM_POLICY",
]


@pytest.fixture(autouse=True)
def _own_settings(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for name in SETTINGS_ENV:
        monkeypatch.delenv(name, raising=False)


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


ENV = "APPROVAL_GATE_TEST_PG"


def admin_url() -> str:
    url = os.environ.get(ENV, "")
    if not url:
        if os.environ.get("CI"):
            pytest.fail(f"the PostgreSQL tests never skip in CI: .ci/run starts a cluster and sets {ENV}, which is not set here")
        pytest.skip(f"{ENV} is not set")
    return url


@pytest.fixture
def pg_url():
    admin = admin_url()
    psql = shutil.which("psql")
    if psql is None:
        pytest.fail("psql is needed to create the test database")
    name = "ag_py_" + uuid.uuid4().hex[:12]
    subprocess.run([psql, admin, "-v", "ON_ERROR_STOP=1", "-qc", f"CREATE DATABASE {name}"], check=True)
    parts = urlsplit(admin)
    url = urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))
    try:
        yield url
    finally:
        subprocess.run([psql, admin, "-qc", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"], check=False)


@pytest.fixture(params=["dir", "postgres"])
def any_store(request, tmp_path) -> Any:
    """A fresh store of each kind: a directory, and a PostgreSQL database (initialized) on the
    server `APPROVAL_GATE_TEST_PG` names (skipped without it, failed in CI)."""
    if request.param == "dir":
        yield str(tmp_path / "approvals")
        return
    url = request.getfixturevalue("pg_url")
    ag.postgres_init(url)
    yield url
