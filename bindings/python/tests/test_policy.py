"""A signature policy: under `approvers` (an OpenSSH allowed_signers file) and a quorum, an
approval counts only with enough distinct trusted signatures, verified at every consume."""

from __future__ import annotations

import shutil
import subprocess

import pytest

import approval_gate as ag
from approval_gate import Claim, Grant, requires_approval

pytestmark = pytest.mark.skipif(
    shutil.which("ssh-keygen") is None, reason="ssh-keygen (openssh-client) makes and signs with the keys"
)


def make_key(tmp_path, name: str) -> tuple:
    key = tmp_path / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True)
    return key, (tmp_path / f"{name}.pub").read_text().strip()


def sign(key, statement: bytes) -> str:
    signed = subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-q", "-f", str(key), "-n", "approval-gate"],
        input=statement,
        capture_output=True,
        check=True,
    )
    return signed.stdout.decode()


def test_a_quorum_table_without_a_star_entry_is_refused(tmp_path):
    _, alice_pub = make_key(tmp_path, "alice")
    approvers = tmp_path / "allowed_signers"
    approvers.write_text(f"alice@example.com {alice_pub}\n")
    with pytest.raises(ag.InvalidInput, match="not `\\*`"):
        ag.Gate.open(tmp_path / "store", approvers=approvers, quorum={"payments.*": 2})


def test_two_trusted_signatures_make_a_payment_approval(tmp_path):
    alice, alice_pub = make_key(tmp_path, "alice")
    bob, bob_pub = make_key(tmp_path, "bob")
    mallory, _ = make_key(tmp_path, "mallory")
    approvers = tmp_path / "allowed_signers"
    approvers.write_text(f"alice@example.com {alice_pub}\nbob@example.com {bob_pub}\n")
    gate = ag.Gate.open(tmp_path / "store", approvers=approvers, quorum="payments.*=2,*=1")

    paid = []

    @requires_approval(operation="payments.transfer")
    def transfer(order: dict, grant: Grant) -> None:
        grant.assert_active()
        paid.append(order)

    order = {"to": "bob", "amount_cents": 1250}
    id = gate.request_approval("transfer 12.50 EUR", "rent", operation="payments.transfer", payload=order).id
    assert gate.check(id).required_approvals == 2

    # Unsigned, or signed by a key the policy does not trust: no approval.
    with pytest.raises((ag.SignatureRequired, ag.InvalidInput)):
        gate.approve(id, by="alice")
    forged = sign(mallory, gate.decision_statement(id, "alice@example.com"))
    with pytest.raises((ag.BadSignature, ag.UntrustedSigner)):
        gate.approve(id, by="alice", signed=("alice@example.com", forged))

    one = gate.approve(id, by="alice", signed=("alice@example.com", sign(alice, gate.decision_statement(id, "alice@example.com"))))
    assert one.status == "pending"  # one of two
    with pytest.raises(ag.NotApproved):
        transfer(order, Claim(gate, id, "transfer 12.50 EUR"))
    assert paid == []

    gate.approve(id, by="bob", signed=("bob@example.com", sign(bob, gate.decision_statement(id, "bob@example.com"))))
    transfer(order, Claim(gate, id, "transfer 12.50 EUR"))
    assert paid == [order]

    # An executor whose policy does not trust alice's key refuses an approval she signed.
    other = tmp_path / "other_signers"
    other.write_text(f"bob@example.com {bob_pub}\n")
    id2 = gate.request_approval("transfer 1 EUR", "test", operation="payments.transfer", payload={"c": 100}).id
    for name, key in (("alice@example.com", alice), ("bob@example.com", bob)):
        gate.approve(id2, by=name, signed=(name, sign(key, gate.decision_statement(id2, name))))
    strict = ag.Gate.open(tmp_path / "store", approvers=other, quorum={"payments.*": 2, "*": 1})
    with pytest.raises(ag.UntrustedSigner, match="alice@example.com"):
        strict.execute_approved(id2, "transfer 1 EUR", lambda g: None, operation="payments.transfer", payload={"c": 100})
