"""Properties of the decorator over generated payloads, and threads racing in one process."""

from __future__ import annotations

import tempfile
import threading

from hypothesis import given, settings
from hypothesis import strategies as st

import approval_gate as ag
from approval_gate import Claim, Grant, requires_approval

MAX_SAFE = 2**53 - 1

text = st.text(max_size=6, alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))
scalars = (
    st.booleans()
    | st.integers(min_value=-MAX_SAFE, max_value=MAX_SAFE)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer())
    | text
    | st.none()
)
payloads = st.dictionaries(
    text,
    st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(text, c, max_size=3), max_leaves=6),
    max_size=4,
)

RAN: list = []
OUTCOMES = {"ran": 0, "refused": 0}


@requires_approval(operation="prop.run")
def run(payload: dict, grant: Grant) -> object:
    RAN.append(payload)
    return payload


_STORE = tempfile.TemporaryDirectory()
_GATE: list = []
_COUNT = iter(range(10**9))


def shared_gate() -> ag.Gate:
    """One store for every example (opening one costs fsyncs); each example its own request."""
    if not _GATE:
        _GATE.append(ag.Gate.open(_STORE.name + "/store", max_pending=10_000))
    return _GATE[0]


@settings(max_examples=200, deadline=None)
@given(approved=payloads, other=payloads, reuse=st.booleans())
def test_the_body_runs_exactly_when_the_presented_payload_is_the_approved_one(approved, other, reuse):
    # Half the time the caller presents the approved value with its keys in another order (the
    # same canonical JSON), half the time an independent one (almost always different).
    presented = dict(reversed(list(approved.items()))) if reuse else other
    gate = shared_gate()
    action = f"run {next(_COUNT)}"
    id = gate.request_approval(action, "property", operation="prop.run", payload=approved).id
    gate.approve(id, by="alice")
    RAN.clear()
    same = ag.canonicalize(approved) == ag.canonicalize(presented)
    try:
        result = run(presented, Claim(gate, id, action))
    except ag.PayloadMismatch:
        OUTCOMES["refused"] += 1
        assert not same
        assert RAN == []
        assert gate.check(id).status == "approved_unconsumed"
    else:
        OUTCOMES["ran"] += 1
        assert same
        # The body got the approved value, rebuilt: equal as canonical JSON.
        assert ag.canonicalize(result) == ag.canonicalize(approved)
        assert len(RAN) == 1
        assert gate.check(id).status == "consumed"


def test_the_property_saw_both_outcomes():
    # Runs after the property in this module (pytest keeps the file's order).
    assert OUTCOMES["ran"] > 0 and OUTCOMES["refused"] > 0, OUTCOMES


def test_sixteen_threads_race_one_approval_and_exactly_one_runs(gate, approved):
    ran = []
    refused = []
    barrier = threading.Barrier(16)

    @requires_approval(operation="ledger.append")
    def append(entry: dict, grant: Grant) -> None:
        ran.append(threading.get_ident())

    id = approved("append", operation="ledger.append", payload={"line": "paid"})

    def racer():
        barrier.wait()
        try:
            append({"line": "paid"}, Claim(gate, id, "append"))
        except ag.AlreadyConsumed:
            refused.append(1)

    threads = [threading.Thread(target=racer) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(ran) == 1 and len(refused) == 15
