"""The gate's API: asking, deciding, checking, waiting, consuming, executing."""

from __future__ import annotations

import asyncio
import threading

import pytest

import approval_gate as ag
from approval_gate import _native
from conftest import events


def test_every_library_error_code_has_its_own_exception_class():
    codes = _native.error_codes()
    assert len(codes) >= 40
    for code in codes:
        cls = ag.errors.error_class(code)
        assert cls is not ag.ApprovalGateError, code
        assert issubclass(cls, ag.ApprovalGateError)
        assert cls.code == code
        assert getattr(ag, cls.__name__) is cls
    assert len({ag.errors.error_class(c) for c in codes}) == len(codes)


def test_each_exception_class_follows_the_library_error_table():
    table = _native.error_table()
    assert [code for code, _, _ in table] == _native.error_codes()
    bases = {
        ag.Refused: "refused",
        ag.Invalid: "invalid",
        ag.Fault: "fault",
        ag.Incomplete: "incomplete",
    }
    assert ag.errors.CLASSES == {name: base for base, name in bases.items()}
    for code, class_, family in table:
        cls = ag.errors.error_class(code)
        # Its base is its class in the table, and only that one; it names its family.
        assert cls.__bases__ == (ag.errors.CLASSES[class_],), code
        assert (cls.class_, cls.family) == (class_, family), code
        error = ag.errors._from_native(code, "m", None, None, False)
        assert isinstance(error, cls) and isinstance(error, ag.errors.CLASSES[class_])
    # No class in the module for a code the library does not have, and every base is used.
    python_codes = {cls.code for base in bases for cls in base.__subclasses__()}
    assert python_codes == {code for code, _, _ in table}
    assert {class_ for _, class_, _ in table} == set(bases.values())
    # Codes of one family share a class: catching a base never splits a family.
    class_of = {}
    for _, class_, family in table:
        assert class_of.setdefault(family, class_) == class_, family


def test_a_request_is_pending_until_a_human_decides(gate):
    submitted = gate.request_approval(
        "send invoice 1042", "it is due", operation="smtp.send", payload={"to": "a@example.com"}
    )
    assert not submitted.deduplicated
    status = gate.check(submitted.id)
    assert status.status == "pending" and status.pending
    assert status.payload == {"to": "a@example.com"}
    assert status.authorizes_execution is False
    again = gate.request_approval(
        "send invoice 1042", "it is due", operation="smtp.send", payload={"to": "a@example.com"}
    )
    assert again.deduplicated and again.id == submitted.id
    approved = gate.approve(submitted.id, by="alice", reason="ok")
    assert approved.status == "approved_unconsumed" and approved.decided_by == "alice"


def test_a_status_report_carries_the_same_digest_as_canonicalize(gate):
    payload = {"amount_cents": 500, "to": "bob", "rate": 0.0375}
    submitted = gate.request_approval("pay", "rent", operation="pay", payload=payload)
    assert submitted.status.payload_digest == ag.canonicalize(payload)[1]


@pytest.mark.parametrize(
    "decide, error",
    [
        (None, ag.NotApproved),
        (lambda g, i: g.deny(i, by="bob", reason="no"), ag.Denied),
        (lambda g, i: (g.approve(i, by="bob"), g.revoke(i, by="bob")), ag.Revoked),
    ],
)
def test_only_an_approval_authorizes(gate, decide, error):
    id = gate.request_approval("act", "why", operation="op.run", payload={"n": 1}).id
    if decide:
        decide(gate, id)
    ran = []
    with pytest.raises(error) as refused:
        gate.execute_approved(id, "act", ran.append, operation="op.run", payload={"n": 1})
    assert ran == []
    assert refused.value.code == error.code
    assert refused.value.request_id == id
    assert "consume_refused" in events(gate, id)


def test_execute_approved_runs_once_and_records_the_outcome(gate, approved):
    id = approved("pay 5 EUR", operation="pay", payload={"amount_cents": 500})
    seen = []

    def body(grant):
        grant.assert_active()
        seen.append((grant.id, grant.operation, grant.payload))
        return "paid"

    assert gate.execute_approved(id, "pay 5 EUR", body, operation="pay", payload={"amount_cents": 500}) == "paid"
    assert seen == [(id, "pay", {"amount_cents": 500})]
    with pytest.raises(ag.AlreadyConsumed) as replay:
        gate.execute_approved(id, "pay 5 EUR", body, operation="pay", payload={"amount_cents": 500})
    assert replay.value.status == "consumed"
    assert len(seen) == 1
    assert events(gate, id) == [
        "requested", "approved", "consumed", "execution_started", "execution_finished", "consume_replayed",
    ]
    finished = [r for r in gate.audit_records() if r["event"] == "execution_finished"]
    assert finished[0]["outcome"] == "ok"
    assert gate.verify_audit() == len(gate.audit_records())


@pytest.mark.parametrize(
    "action, operation, payload, error",
    [
        ("pay 6 EUR", "pay", {"amount_cents": 500}, ag.ActionMismatch),
        ("pay 5 EUR", "refund", {"amount_cents": 500}, ag.OperationMismatch),
        ("pay 5 EUR", "pay", {"amount_cents": 600}, ag.PayloadMismatch),
        ("pay 5 EUR", "pay", None, ag.PayloadMismatch),
        ("pay 5 EUR", None, {"amount_cents": 500}, ag.OperationMismatch),
    ],
)
def test_a_mismatch_refuses_and_spends_nothing(gate, approved, action, operation, payload, error):
    id = approved("pay 5 EUR", operation="pay", payload={"amount_cents": 500})
    with pytest.raises(error) as refused:
        gate.execute_approved(id, action, lambda g: 1 / 0, operation=operation, payload=payload)
    assert refused.value.status == "approved_unconsumed"
    assert gate.check(id).status == "approved_unconsumed"
    # The right binding still works afterwards: the refusal spent nothing.
    assert gate.execute_approved(id, "pay 5 EUR", lambda g: "ok", operation="pay", payload={"amount_cents": 500}) == "ok"


def test_a_raising_body_is_an_error_outcome_and_the_approval_stays_spent(gate, approved):
    id = approved("act", operation="op.run")

    def body(grant):
        raise RuntimeError("smtp said no")

    with pytest.raises(RuntimeError, match="smtp said no"):
        gate.execute_approved(id, "act", body, operation="op.run")
    finished = [r for r in gate.audit_records() if r["event"] == "execution_finished"]
    assert finished[0]["outcome"] == "error"
    assert "RuntimeError: smtp said no" in finished[0]["error"]
    assert gate.check(id).status == "consumed"


def test_consume_gives_a_grant_that_closes(gate, approved):
    id = approved("act", operation="op.run", payload=[1, "two", None])
    with gate.consume(id, "act", operation="op.run", payload=[1, "two", None]) as grant:
        assert grant.live and grant.payload == [1, "two", None]
        grant.assert_active()
    assert not grant.live
    with pytest.raises(ag.GrantClosed):
        grant.assert_active()
    with pytest.raises(ag.AlreadyConsumed):
        gate.consume(id, "act", operation="op.run", payload=[1, "two", None])


def test_an_invalid_id_is_refused(gate):
    with pytest.raises(ag.InvalidId):
        gate.check("../../etc/passwd")
    with pytest.raises(ag.NotFound):
        gate.check("a1b2c3d4e5f6")


def test_wait_releases_the_gil_and_wakes_on_the_decision(gate):
    id = gate.request_approval("act", "why").id
    decided = threading.Event()
    result = []

    def waiter():
        result.append(gate.wait(id, timeout=60))
        decided.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    # This thread keeps running Python while the other waits: the wait does not hold the GIL.
    gate.deny(id, by="bob")
    assert decided.wait(30), "the wait did not wake on the decision"
    thread.join()
    assert result[0].status == "denied"


def test_wait_times_out_still_pending(gate):
    id = gate.request_approval("act", "why").id
    assert gate.wait(id, timeout=0.05).status == "pending"


def test_wait_async_does_not_block_the_event_loop(gate):
    id = gate.request_approval("act", "why").id

    async def main():
        waiting = asyncio.ensure_future(gate.wait_async(id, 60))
        ticks = 0
        # The loop runs other tasks while the wait is under way.
        for _ in range(5):
            await asyncio.sleep(0)
            ticks += 1
        assert not waiting.done()
        await asyncio.get_running_loop().run_in_executor(None, lambda: gate.approve(id, by="alice"))
        status = await asyncio.wait_for(waiting, 30)
        return ticks, status

    ticks, status = asyncio.run(main())
    assert ticks == 5 and status.status == "approved_unconsumed"


def wait_threads() -> int:
    """The library's wait threads alive in this process (named `approval-gate wait <id>`,
    which the kernel cuts to 15 bytes)."""
    import os

    count = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as comm:
                count += comm.read().startswith("approval-gate w")
        except OSError:
            pass
    return count


def test_cancelling_wait_async_ends_the_wait_thread(gate):
    import time

    id = gate.request_approval("act", "why").id
    before = wait_threads()

    async def main():
        waiting = asyncio.ensure_future(gate.wait_async(id, 600))
        for _ in range(50):  # until the wait is under way (the watch starts off the loop)
            await asyncio.sleep(0.01)
            if wait_threads() > before:
                break
        assert wait_threads() == before + 1
        waiting.cancel()
        try:
            await waiting
        except asyncio.CancelledError:
            pass

    asyncio.run(main())
    # Thread exit raises no event to wait on: poll the kernel's list, bounded.
    deadline = time.monotonic() + 10
    while wait_threads() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert wait_threads() == before
    assert gate.check(id).status == "pending"


def test_open_refuses_a_quorum_without_approvers(store):
    with pytest.raises(ag.InvalidInput):
        ag.Gate.open(store, quorum={"payments.*": 2})


def test_open_refuses_an_unknown_store_scheme():
    with pytest.raises(ag.InvalidInput):
        ag.Gate.open("ftp://example.com/x")


def test_an_expired_approval_is_refused_and_a_live_grant_stops_asserting(gate):
    import datetime
    import time

    # The shortest time to live the library accepts; the test waits for the clock, not for
    # any event, since expiry is the passing of time itself.
    held = gate.request_approval("hold", "why", operation="op.run", ttl=10).id
    unused = gate.request_approval("unused", "why", operation="op.run", ttl=10).id
    gate.approve(held, by="alice")
    gate.approve(unused, by="alice")
    grant = gate.consume(held, "hold", operation="op.run")
    grant.assert_active()
    expires = datetime.datetime.fromisoformat(grant.expires_at.replace("Z", "+00:00")).timestamp()
    time.sleep(max(0.0, expires - time.time()) + 0.05)
    with pytest.raises(ag.ApprovalExpired) as expired:
        grant.assert_active()
    assert expired.value.request_id == held
    ran = []
    with pytest.raises(ag.ApprovalExpired):
        gate.execute_approved(unused, "unused", ran.append, operation="op.run")
    assert ran == []
    assert gate.check(unused).status == "approved_expired"
