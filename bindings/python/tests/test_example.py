"""examples/python/send_mail.py: sends once what was approved, and nothing once tampered with."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import approval_gate as ag

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "python", "send_mail.py")


def run_example(store, outbox, *flags):
    env = {**os.environ, "APPROVAL_GATE_STORE": store, "SMTP_OUTBOX": str(outbox)}
    env.pop("SMTP_HOST", None)
    example = subprocess.Popen(
        [sys.executable, EXAMPLE, *flags], env=env, stdout=subprocess.PIPE, text=True
    )
    first = example.stdout.readline()
    assert first.startswith("request "), first
    id = first.split()[1]
    ag.Gate.open(store).approve(id, by="alice", reason="looks right")
    out, _ = example.communicate(timeout=120)
    return example.returncode, out, id


def test_the_example_sends_the_approved_email_once(store, tmp_path):
    outbox = tmp_path / "outbox"
    code, out, id = run_example(store, outbox)
    assert code == 0, out
    assert "sent once" in out
    [message] = list(outbox.iterdir())
    text = message.read_text()
    assert "To: alice@example.com" in text and "Subject: Invoice 1042" in text
    assert ag.Gate.open(store).check(id).status == "consumed"


def test_the_tampered_example_sends_nothing(store, tmp_path):
    outbox = tmp_path / "outbox"
    code, out, id = run_example(store, outbox, "--tamper")
    assert code == 1
    assert "not sent (payload_mismatch)" in out
    assert not outbox.exists() or not list(outbox.iterdir())
    assert ag.Gate.open(store).check(id).status == "approved_unconsumed"
