"""Payloads: the same RFC 8785 bytes and BLAKE3 digest as the Rust library, and clear refusals
of what JSON cannot carry exactly.

The bytes and digests the binding computes (through the Rust library) are compared with an
independent pure-Python RFC 8785 implementation (``jcs.py``) and the ``blake3`` package, over
10,000 seeded random payloads, hypothesis-generated ones, and the library's own shared corpus.
"""

from __future__ import annotations

import json
import math
import os
import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import approval_gate as ag
import jcs

MAX_SAFE = 2**53 - 1
CORPUS = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "approval-gate", "src", "payload", "corpus.txt"
)


def acceptable_float(value: float) -> bool:
    """A float the library accepts: finite, and not integral below 1e21 (``1.0`` would read
    as the integer ``1``)."""
    return math.isfinite(value) and (not value.is_integer() or abs(value) >= 1e21)


def random_text(rng: random.Random) -> str:
    alphabet = string.ascii_letters + string.digits + ' "\\/\b\f\n\r\t\x01\x1f\x7f'
    out = []
    for _ in range(rng.randrange(0, 12)):
        pick = rng.random()
        if pick < 0.7:
            out.append(rng.choice(alphabet))
        elif pick < 0.85:
            out.append(chr(rng.randrange(0x80, 0xD800)))
        elif pick < 0.95:
            out.append(chr(rng.randrange(0xE000, 0x10000)))
        else:
            out.append(chr(rng.randrange(0x10000, 0x110000)))
    return "".join(out)


def random_float(rng: random.Random) -> float:
    while True:
        kind = rng.random()
        if kind < 0.3:
            value = rng.uniform(-1e6, 1e6)
        elif kind < 0.6:
            value = rng.choice([-1, 1]) * 10 ** rng.uniform(-30, 30)
        else:
            value = rng.choice([-1, 1]) * 10 ** rng.uniform(-320, 308)
        if acceptable_float(value):
            return value


def random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(8 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.randint(-MAX_SAFE, MAX_SAFE) if rng.random() < 0.5 else rng.randint(-1000, 1000)
    if kind == 3:
        return random_float(rng)
    if kind in (4, 5):
        return random_text(rng)
    if kind == 6:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(0, 5))]
    return {random_text(rng): random_value(rng, depth + 1) for _ in range(rng.randrange(0, 5))}


def test_ten_thousand_seeded_payloads_have_the_independent_bytes_and_digest():
    rng = random.Random(26)
    checked = 0
    for _ in range(10_000):
        value = random_value(rng)
        if value is None:
            value = {"null": None}  # null at the top level means "no payload"
        text, digest = ag.canonicalize(value)
        expected = jcs.canonical(value)
        assert text == expected, value
        assert digest == jcs.digest(expected), value
        # The library's text reads back as the same value.
        assert json.loads(text) == value or value != value
        checked += 1
    assert checked == 10_000


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE, max_value=MAX_SAFE)
    | st.floats(allow_nan=False, allow_infinity=False).filter(acceptable_float)
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(
        st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
        children,
        max_size=5,
    ),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(json_values.filter(lambda v: v is not None))
def test_generated_payloads_have_the_independent_bytes_and_digest(value):
    text, digest = ag.canonicalize(value)
    assert text == jcs.canonical(value)
    assert digest == jcs.digest(text)


def corpus_cases():
    with open(CORPUS, encoding="utf-8") as corpus:
        for line in corpus:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                yield line.split("\t")


def test_the_shared_corpus_gives_the_recorded_bytes_and_digests():
    accepted = refused = 0
    for fields in corpus_cases():
        text = fields[0]
        if fields[1].startswith("refused"):
            kind = fields[1][len("refused"):].strip()
            if kind in ("DuplicateKey", "Syntax", "TooLarge"):
                continue  # json text the Python value cannot hold as such
            try:
                value = json.loads(text)
            except ValueError:
                continue
            with pytest.raises(ag.InvalidPayload):
                ag.canonicalize(value)
            refused += 1
            continue
        value = json.loads(text)
        canonical, digest = ag.canonicalize(value)
        assert canonical == fields[1], text
        assert digest == fields[2], text
        assert jcs.canonical(value) == fields[1], text
        assert jcs.digest(fields[1]) == fields[2], text
        accepted += 1
    assert accepted >= 20 and refused >= 5, (accepted, refused)


@pytest.mark.parametrize(
    "value, words",
    [
        (float("nan"), "not a finite number"),
        (float("inf"), "not a finite number"),
        ({"x": [float("-inf")]}, "/x/0"),
        (MAX_SAFE + 1, "9007199254740991"),
        (-(MAX_SAFE + 1), "9007199254740991"),
        (2**70, "9007199254740991"),
        ({1: "a"}, "key of type int"),
        ({("a",): "a"}, "key of type tuple"),
        (1.0, "integral value"),
        ({"a": -0.0}, "integral value"),
        ({"s": "a\x00b"}, "nul"),
        ({"s": "\ud800"}, "unicode"),
        (None, "null at the top level"),
        ({"when": object()}, "type object"),
        (b"bytes", "type bytes"),
        ({1, 2}, "type set"),
    ],
)
def test_what_json_cannot_carry_exactly_is_refused(value, words):
    with pytest.raises(ag.InvalidPayload) as refused:
        ag.canonicalize(value)
    assert words in str(refused.value)
    assert refused.value.code == "invalid_payload"


def test_booleans_stay_booleans_and_ints_stay_ints():
    assert ag.canonicalize([True, False, 1, 0])[0] == "[true,false,1,0]"
    assert ag.canonicalize({"a": MAX_SAFE, "b": -MAX_SAFE})[0] == '{"a":9007199254740991,"b":-9007199254740991}'

    class Flag(int):
        pass

    # An int subclass is an int (its value), never a bool.
    assert ag.canonicalize([Flag(1)])[0] == "[1]"


def test_nesting_beyond_the_limit_is_refused_without_recursing_forever():
    deep: list = []
    for _ in range(40):
        deep = [deep]
    with pytest.raises(ag.InvalidPayload, match="deeper than 32"):
        ag.canonicalize(deep)
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(ag.InvalidPayload):
        ag.canonicalize(cycle)


def test_a_payload_over_64_kib_is_refused():
    with pytest.raises(ag.InvalidPayload, match="over the limit"):
        ag.canonicalize({"blob": "x" * (64 * 1024)})


def test_tuples_are_arrays_and_dataclasses_their_fields():
    import dataclasses

    @dataclasses.dataclass
    class Point:
        x: int
        y: float

    assert ag.canonicalize((1, "a"))[0] == '[1,"a"]'
    assert ag.canonicalize(Point(1, 0.5)) == ag.canonicalize({"y": 0.5, "x": 1})
