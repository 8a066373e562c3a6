"""`requires_approval`: the Rust attribute's calling convention and semantics, from Python."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import pickle
import sys
import typing
from typing import List

import pydantic
import pytest

import approval_gate as ag
from approval_gate import Claim, Grant, requires_approval
from conftest import events


@dataclasses.dataclass(frozen=True)
class Email:
    to: str
    subject: str


class Transfer(pydantic.BaseModel):
    to: str
    amount_cents: int
    memo: str = ""


SENT: List[object] = []


@requires_approval(operation="smtp.send")
def send(email: Email, grant: Grant) -> str:
    grant.assert_active()
    SENT.append(email)
    return email.to


@pytest.fixture(autouse=True)
def _empty_outbox():
    SENT.clear()


def test_the_body_runs_once_on_a_copy_rebuilt_from_the_approved_bytes(gate, approved):
    email = Email("alice@example.com", "Invoice 1042")
    id = approved("send invoice", operation="smtp.send", payload=email)
    assert send(email, Claim(gate, id, "send invoice")) == "alice@example.com"
    assert SENT == [email]
    assert SENT[0] is not email and isinstance(SENT[0], Email)
    with pytest.raises(ag.AlreadyConsumed):
        send(email, Claim(gate, id, "send invoice"))
    assert len(SENT) == 1
    assert events(gate, id)[2:] == ["consumed", "execution_started", "execution_finished", "consume_replayed"]


def test_a_changed_payload_is_refused_and_the_body_never_runs(gate, approved):
    id = approved("send invoice", operation="smtp.send", payload=Email("alice@example.com", "Invoice"))
    with pytest.raises(ag.PayloadMismatch):
        send(Email("mallory@example.com", "Invoice"), Claim(gate, id, "send invoice"))
    with pytest.raises(ag.ActionMismatch):
        send(Email("alice@example.com", "Invoice"), Claim(gate, id, "send all invoices"))
    assert SENT == []
    assert gate.check(id).status == "approved_unconsumed"


def test_an_approval_for_another_operation_is_refused(gate, approved):
    email = Email("alice@example.com", "Invoice")
    id = approved("send invoice", operation="smtp.forward", payload=email)
    with pytest.raises(ag.OperationMismatch):
        send(email, Claim(gate, id, "send invoice"))
    assert SENT == []


def test_pending_denied_and_unknown_requests_are_refused(gate):
    email = Email("alice@example.com", "Invoice")
    pending = gate.request_approval("send invoice", "due", operation="smtp.send", payload=email).id
    with pytest.raises(ag.NotApproved):
        send(email, Claim(gate, pending, "send invoice"))
    gate.deny(pending, by="bob")
    with pytest.raises(ag.Denied):
        send(email, Claim(gate, pending, "send invoice"))
    with pytest.raises(ag.NotFound):
        send(email, Claim(gate, "a1b2c3d4e5f6", "send invoice"))
    with pytest.raises(ag.InvalidId):
        send(email, Claim(gate, "not-an-id", "send invoice"))
    assert SENT == []


def test_only_a_claim_may_stand_in_the_grants_place(gate, approved):
    email = Email("alice@example.com", "Invoice")
    id = approved("send invoice", operation="smtp.send", payload=email)
    with pytest.raises(TypeError, match="Claim"):
        send(email, (gate, id, "send invoice"))
    with pytest.raises(TypeError):
        Grant()  # no constructor: only a consume makes one
    assert gate.check(id).status == "approved_unconsumed"


def test_the_grant_dies_with_the_call_and_cannot_be_copied_or_pickled(gate, approved):
    kept = []
    copies = []

    @requires_approval(operation="op.run")
    def run(payload: dict, grant: Grant) -> None:
        kept.append(grant)
        for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
            try:
                attempt(grant)
            except TypeError as refused:
                copies.append(str(refused))
        assert grant.live
        assert payload == {"n": 1}

    id = approved("run", operation="op.run", payload={"n": 1})
    run({"n": 1}, Claim(gate, id, "run"))
    assert len(copies) == 3
    grant = kept[0]
    assert not grant.live
    for use in (grant.assert_active, lambda: grant.payload, lambda: grant.id, lambda: grant.payload_digest):
        with pytest.raises(ag.GrantClosed):
            use()
    assert "closed" in repr(grant)


def test_a_raising_body_is_recorded_as_an_error_outcome(gate, approved):
    @requires_approval(operation="op.run")
    def run(payload: list, grant: Grant) -> None:
        raise ValueError("the side effect failed")

    id = approved("run", operation="op.run", payload=[1, 2])
    with pytest.raises(ValueError, match="the side effect failed"):
        run([1, 2], Claim(gate, id, "run"))
    finished = [r for r in gate.audit_records() if r["id"] == id and r["event"] == "execution_finished"]
    assert finished[0]["outcome"] == "error"
    assert gate.check(id).status == "consumed"


def test_a_pydantic_model_is_bound_through_its_json_form(gate, approved):
    got = []

    @requires_approval(operation="payments.transfer")
    def transfer(order: Transfer, grant: Grant) -> int:
        got.append(order)
        return order.amount_cents

    order = Transfer(to="bob", amount_cents=1250, memo="rent")
    id = approved("transfer 12.50 EUR to bob", operation="payments.transfer", payload=order)
    assert gate.check(id).payload == {"to": "bob", "amount_cents": 1250, "memo": "rent"}
    assert transfer(order, Claim(gate, id, "transfer 12.50 EUR to bob")) == 1250
    assert got == [order] and got[0] is not order


def test_the_caller_cannot_change_the_payload_through_its_object(gate, approved):
    seen = []

    @requires_approval(operation="op.run")
    def run(payload: dict, grant: Grant) -> None:
        seen.append(payload)

    mine = {"to": "alice", "items": [1, 2]}
    id = approved("run", operation="op.run", payload=mine)
    run(mine, Claim(gate, id, "run"))
    assert seen[0] == mine and seen[0] is not mine and seen[0]["items"] is not mine["items"]


@dataclasses.dataclass
class Narrow:
    to: str


def test_a_type_that_would_not_carry_the_payload_is_refused_before_anything_is_spent(gate):
    @requires_approval(operation="op.run")
    def run(payload: Narrow, grant: Grant) -> None:
        raise AssertionError("must not run")

    # The request carries a field the executor's type does not have.
    id = gate.request_approval("run", "why", operation="op.run", payload={"to": "a", "cc": "b"}).id
    gate.approve(id, by="alice")
    with pytest.raises(ag.PayloadType):
        run({"to": "a", "cc": "b"}, Claim(gate, id, "run"))
    assert gate.check(id).status == "approved_unconsumed"
    assert events(gate, id)[-1] == "consume_refused"


def test_an_invalid_payload_is_refused_and_recorded(gate, approved):
    @requires_approval(operation="op.run")
    def run(payload: object, grant: Grant) -> None:
        raise AssertionError("must not run")

    id = approved("run", operation="op.run", payload={"n": 1})
    with pytest.raises(ag.InvalidPayload):
        run({"n": float("nan")}, Claim(gate, id, "run"))
    assert events(gate, id)[-1] == "consume_refused"
    assert gate.check(id).status == "approved_unconsumed"


def test_an_annotation_that_cannot_be_resolved_is_refused_before_anything_is_spent(gate, approved):
    @dataclasses.dataclass
    class Local:
        to: str

    @requires_approval(operation="op.run")
    def run(payload: Local, grant: Grant) -> None:  # a string annotation naming a local class
        raise AssertionError("must not run")

    id = approved("run", operation="op.run", payload={"to": "a"})
    with pytest.raises(TypeError, match="cannot resolve"):
        run(Local("a"), Claim(gate, id, "run"))
    assert gate.check(id).status == "approved_unconsumed"


def test_an_invalid_operation_name_is_refused_at_decoration():
    with pytest.raises(ag.InvalidInput):
        requires_approval(operation="no spaces allowed")


def test_methods_keep_their_self(gate, approved):
    class Mailer:
        def __init__(self):
            self.outbox = []

        @requires_approval(operation="smtp.send")
        def send(self, email: Email, grant: Grant) -> int:
            self.outbox.append(email)
            return len(self.outbox)

    email = Email("a@example.com", "hi")
    id = approved("send", operation="smtp.send", payload=email)
    mailer = Mailer()
    assert mailer.send(email, Claim(gate, id, "send")) == 1
    assert mailer.outbox == [email]


def test_an_async_body_runs_on_the_loop_and_the_loop_keeps_running(gate, approved):
    @requires_approval(operation="op.run")
    async def run(payload: dict, grant: Grant) -> str:
        await asyncio.sleep(0)
        grant.assert_active()
        return payload["to"]

    id = approved("run", operation="op.run", payload={"to": "alice"})

    async def main():
        ticks = []

        async def ticker():
            for i in range(3):
                ticks.append(i)
                await asyncio.sleep(0)

        result, _ = await asyncio.gather(run({"to": "alice"}, Claim(gate, id, "run")), ticker())
        return result, ticks

    result, ticks = asyncio.run(main())
    assert result == "alice" and ticks == [0, 1, 2]
    with pytest.raises(ag.AlreadyConsumed):
        asyncio.run(run({"to": "alice"}, Claim(gate, id, "run")))


@dataclasses.dataclass(frozen=True)
class Address:
    city: str


@dataclasses.dataclass(frozen=True)
class Letter:
    to: Address
    words: str


def test_the_annotations_are_resolved_once_not_at_every_call(gate, approved, monkeypatch):
    resolved: List[object] = []
    resolve = typing.get_type_hints

    def counting(obj, *args, **kwargs):
        resolved.append(obj)
        return resolve(obj, *args, **kwargs)

    monkeypatch.setattr(typing, "get_type_hints", counting)
    got = []

    def post_body(letter: Letter, grant: Grant) -> None:
        got.append(letter)

    post = requires_approval(operation="post.send")(post_body)

    for n in range(3):
        letter = Letter(Address("Lyon"), f"letter {n}")
        id = approved(f"post letter {n}", operation="post.send", payload=letter)
        post(letter, Claim(gate, id, f"post letter {n}"))
    assert got == [Letter(Address("Lyon"), f"letter {n}") for n in range(3)]
    assert all(type(letter.to) is Address for letter in got)
    # The body's annotation, the payload type's and its nested dataclass's: once each, for
    # three faithfulness checks and three rebuilds.
    assert resolved.count(post_body) == 1
    assert resolved.count(Letter) == 1 and resolved.count(Address) == 1


@dataclasses.dataclass(frozen=True)
class Parcel:
    contents: Later  # noqa: F821  (a name defined only later, by the test)


def test_a_payload_type_that_cannot_be_resolved_yet_is_refused_each_time_until_it_can(gate, approved, monkeypatch):
    got = []

    @requires_approval(operation="post.ship")
    def ship(parcel: Parcel, grant: Grant) -> None:
        got.append(parcel)

    id = approved("ship", operation="post.ship", payload={"contents": {"city": "Lyon"}})
    for _ in range(2):  # a failure to resolve is not kept either way
        with pytest.raises(ag.PayloadType, match="NameError"):
            ship({"contents": {"city": "Lyon"}}, Claim(gate, id, "ship"))
    assert gate.check(id).status == "approved_unconsumed"
    assert events(gate, id)[-2:] == ["consume_refused", "consume_refused"]
    monkeypatch.setattr(sys.modules[__name__], "Later", Address, raising=False)
    ship({"contents": {"city": "Lyon"}}, Claim(gate, id, "ship"))
    assert got == [Parcel(Address("Lyon"))] and type(got[0].contents) is Address
