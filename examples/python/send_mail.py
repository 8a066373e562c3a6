#!/usr/bin/env python3
"""A trusted executor in Python that sends one email, exactly as a human approved it, at most once.

    pip install ./bindings/python
    python3 examples/python/send_mail.py          # files the request and waits for your decision
    # in another terminal, run the command it prints:
    cargo run -q -p approval-gate-cli --bin approval-gate -- approve <id>

The send function carries ``@requires_approval(operation="smtp.send")``: its body runs only
inside the gate's ``execute_approved``, on an ``Email`` rebuilt from the approved bytes, and
never otherwise. The Python twin of ``cargo run --example smtp``; requests made by either are
the same requests (same canonical payload, same digest), decided with the same CLI.

Mail goes to a plain SMTP relay at ``SMTP_HOST`` (``host:port``, such as a local MailHog) when
set; otherwise the message is written to an outbox directory (``SMTP_OUTBOX``, default
``$TMPDIR/approval-gate-outbox``), one ``.eml`` file per message. The store is
``APPROVAL_GATE_STORE`` (a directory or a ``postgres://`` URL), else ``APPROVAL_GATE_DIR``, else
``~/.approval-gate``, so the human's CLI finds the request.

Options: ``--tamper`` changes the recipient after approval (nothing is sent, and it says why);
``--ttl SECONDS`` sets the request's time to live (default 600).
"""

from __future__ import annotations

import argparse
import dataclasses
import email.message
import os
import smtplib
import sys
import tempfile
import uuid

import approval_gate as ag
from approval_gate import Claim, Grant, requires_approval


@dataclasses.dataclass(frozen=True)
class Email:
    """The email, as the human sees it in `approval-gate show` and as the executor sends it."""

    sender: str
    to: str
    subject: str
    body: str

    def action(self) -> str:
        return f"send email to {self.to}, subject: {self.subject}"


def deliver(mail: Email) -> str:
    """The side effect: hand the message to the relay, or write it to the outbox."""
    message = email.message.EmailMessage()
    message["From"], message["To"], message["Subject"] = mail.sender, mail.to, mail.subject
    message.set_content(mail.body)
    relay = os.environ.get("SMTP_HOST")
    if relay:
        host, _, port = relay.partition(":")
        with smtplib.SMTP(host, int(port or 25), timeout=30) as smtp:
            smtp.send_message(message)
        return f"relay {relay}"
    outbox = os.environ.get("SMTP_OUTBOX") or os.path.join(tempfile.gettempdir(), "approval-gate-outbox")
    os.makedirs(outbox, mode=0o700, exist_ok=True)
    path = os.path.join(outbox, f"{uuid.uuid4().hex}.eml")
    with open(path, "wb") as out:
        out.write(bytes(message))
    return path


@requires_approval(operation="smtp.send")
def send(mail: Email, grant: Grant) -> str:
    # `mail` is the Email rebuilt from the approved bytes, not the caller's object.
    grant.assert_active()  # immediately before the side effect
    return deliver(mail)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tamper", action="store_true", help="change the recipient after approval")
    parser.add_argument("--ttl", type=float, default=600, help="the request's time to live, in seconds")
    parser.add_argument("--to", default="alice@example.com")
    args = parser.parse_args()

    gate = ag.Gate.open()
    mail = Email(
        sender="billing@example.com",
        to=args.to,
        subject="Invoice 1042",
        body="Hello Alice,\n\nyour invoice 1042 (125.00 EUR) is attached.\n",
    )
    action = mail.action()

    # The agent's side: ask.
    submitted = gate.request_approval(
        action, "the invoice is due today", operation="smtp.send", payload=mail, ttl=args.ttl
    )
    print(f"request {submitted.id} filed: {action}", flush=True)
    print(
        f"decide it in another terminal:\n  approval-gate approve {submitted.id}\n"
        f"  approval-gate deny {submitted.id}",
        flush=True,
    )

    # Wait for a human (woken by the store's events), then try to act.
    status = gate.wait(submitted.id, timeout=args.ttl)
    print(f"request {submitted.id} is {status.status}", flush=True)

    if args.tamper:
        mail = dataclasses.replace(mail, to="mallory@example.com")
    try:
        where = send(mail, Claim(gate, submitted.id, action))
    except ag.ApprovalGateError as refused:
        print(f"not sent ({refused.code}): {refused}", flush=True)
        return 1
    print(f"sent once: {where}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
