"""The PostgreSQL store from Python: the same gate over a `postgres://` URL.

Runs against the server `APPROVAL_GATE_TEST_PG` names (a superuser URL; `.ci/run` starts a
throwaway cluster and exports it). Without it the tests skip, except in CI (`CI` set), where a
missing server is a failure, never a skip.
"""

from __future__ import annotations

import pytest

import approval_gate as ag
from approval_gate import Claim, Grant, requires_approval


def test_a_request_is_approved_executed_once_and_audited_in_postgres(pg_url):
    assert ag.postgres_init(pg_url) >= 1
    gate = ag.Gate.open(pg_url)
    assert gate.location.startswith("postgres")
    sent = []

    @requires_approval(operation="smtp.send")
    def send(email: dict, grant: Grant) -> str:
        grant.assert_active()
        sent.append(email)
        return email["to"]

    email = {"to": "alice@example.com", "subject": "Invoice 1042"}
    id = gate.request_approval("send invoice 1042", "due", operation="smtp.send", payload=email).id
    with pytest.raises(ag.NotApproved):
        send(email, Claim(gate, id, "send invoice 1042"))
    gate.approve(id, by="alice")
    with pytest.raises(ag.PayloadMismatch):
        send({**email, "to": "mallory@example.com"}, Claim(gate, id, "send invoice 1042"))
    assert send(email, Claim(gate, id, "send invoice 1042")) == "alice@example.com"
    with pytest.raises(ag.AlreadyConsumed):
        send(email, Claim(gate, id, "send invoice 1042"))
    assert sent == [email]
    log = [r["event"] for r in gate.audit_records() if r["id"] == id]
    assert log.count("execution_started") == 1 and log.count("execution_finished") == 1
    assert gate.check(id).status == "consumed"
    assert gate.verify_audit() >= len(log)


def test_a_payload_digest_is_the_same_in_postgres(pg_url):
    ag.postgres_init(pg_url)
    gate = ag.Gate.open(pg_url)
    payload = {"amount_cents": 125000, "rate": 0.0375, "to": "alice@example.com"}
    submitted = gate.request_approval("pay", "rent", operation="pay", payload=payload)
    assert submitted.status.payload_digest == ag.canonicalize(payload)[1]
