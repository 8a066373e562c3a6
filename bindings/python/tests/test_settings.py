"""The operator's settings (issue 37, 15): `Gate.open` resolves the store, the limits and the
policy exactly as the binaries do (the library's `settings`), from the same environment, config
file and system policy, so a Python executor enforces what `approval-gate exec` enforces."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import List

import pytest

import approval_gate as ag
from approval_gate import Claim, Grant, requires_approval

needs_ssh_keygen = pytest.mark.skipif(
    shutil.which("ssh-keygen") is None, reason="ssh-keygen (openssh-client) makes the keys"
)

PAYLOAD = {"to": "bob", "amount_cents": 1250}
RAN: List[object] = []


@requires_approval(operation="payments.transfer")
def transfer(order: dict, grant: Grant) -> None:
    RAN.append(order)


@pytest.fixture(autouse=True)
def _nothing_ran():
    RAN.clear()


def write(path, text: str) -> str:
    path.write_text(text)
    os.chmod(path, 0o644)
    return str(path)


def public_key(dir, name: str) -> str:
    key = dir / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True)
    return (dir / f"{name}.pub").read_text().strip()


def forged(store: str, monkeypatch, config: str) -> str:
    """A request the agent filed and "approved" itself, unsigned, through a gate whose settings
    hold no policy (as anything writing the store can); the settings go back to `config`."""
    empty = os.path.join(os.path.dirname(config), "empty.toml")
    with open(empty, "w") as f:
        f.write("")
    monkeypatch.setenv("APPROVAL_GATE_CONFIG", empty)
    agent = ag.Gate.open(store)
    id = agent.request_approval("pay bob", "rent", operation="payments.transfer", payload=PAYLOAD).id
    agent.approve(id, by="alice@example.com")
    monkeypatch.setenv("APPROVAL_GATE_CONFIG", config)
    return id


def test_gate_open_opens_the_store_the_config_file_names(tmp_path, monkeypatch):
    store = str(tmp_path / "approvals")
    config = write(tmp_path / "config.toml", f"store = {store!r}\n")
    monkeypatch.setenv("APPROVAL_GATE_CONFIG", config)
    assert ag.Gate.open().location == store
    # The environment comes before the file, as for the binaries.
    other = str(tmp_path / "other")
    monkeypatch.setenv("APPROVAL_GATE_DIR", other)
    assert ag.Gate.open().location == other


def test_the_config_files_limits_hold(tmp_path, monkeypatch):
    config = write(tmp_path / "config.toml", "max_pending = 1\n")
    monkeypatch.setenv("APPROVAL_GATE_CONFIG", config)
    gate = ag.Gate.open(str(tmp_path / "approvals"))
    gate.request_approval("one", "why")
    with pytest.raises(ag.QueueFull):
        gate.request_approval("two", "why")


@needs_ssh_keygen
def test_the_config_files_approvers_hold_for_gate_open_with_and_without_a_store(tmp_path, monkeypatch):
    store = str(tmp_path / "approvals")
    signers = write(tmp_path / "allowed_signers", f"alice@example.com {public_key(tmp_path, 'alice')}\n")
    config = write(tmp_path / "config.toml", f"store = {store!r}\napprovers = {signers!r}\n")
    id = forged(store, monkeypatch, config)
    for gate in (ag.Gate.open(), ag.Gate.open(store)):
        with pytest.raises(ag.ApprovalGateError) as refused:
            transfer(PAYLOAD, Claim(gate, id, "pay bob"))
        assert refused.value.code in ("insufficient_approvals", "signature_required"), refused.value
        with pytest.raises(ag.SignatureRequired):
            gate.approve(gate.request_approval("x", "y").id, by="alice@example.com")
    assert RAN == []
    assert ag.Gate.open(store).check(id).status == "approved_unconsumed"


@needs_ssh_keygen
@pytest.mark.skipif(os.geteuid() != 0, reason="a system policy must be owned by root or another account (CI runs as root)")
def test_the_system_policy_exec_enforces_is_enforced_by_python(tmp_path, monkeypatch):
    etc = tmp_path / "etc"
    etc.mkdir()
    os.chmod(etc, 0o755)
    signers = write(etc / "allowed_signers", f"alice@example.com {public_key(etc, 'alice')}\n")
    system = write(etc / "policy.toml", f"approvers = {signers!r}\n")
    store = str(tmp_path / "approvals")
    config = write(tmp_path / "config.toml", "")  # the user's own file says nothing of a policy
    monkeypatch.delenv("APPROVAL_GATE_SYSTEM_POLICY", raising=False)
    id = forged(store, monkeypatch, config)

    monkeypatch.setenv("APPROVAL_GATE_SYSTEM_POLICY", system)
    with pytest.raises(ag.ApprovalGateError) as refused:
        transfer(PAYLOAD, Claim(ag.Gate.open(store), id, "pay bob"))
    assert refused.value.code in ("insufficient_approvals", "signature_required"), refused.value
    # Approvers of the caller's own cannot replace the system's, by argument or environment.
    own = write(tmp_path / "own_signers", f"alice@example.com {public_key(tmp_path, 'mallory')}\n")
    with pytest.raises(ag.InvalidInput, match="cannot replace"):
        ag.Gate.open(store, approvers=own)
    monkeypatch.setenv("APPROVAL_GATE_APPROVERS", own)
    with pytest.raises(ag.InvalidInput, match="cannot replace"):
        ag.Gate.open(store)
    assert RAN == []
