"""Payloads: the same RFC 8785 bytes and BLAKE3 digest as the Rust library, and clear refusals
of what JSON cannot carry exactly.

The bytes and digests the binding computes (through the Rust library) are compared with an
independent pure-Python RFC 8785 implementation (``jcs.py``) and the ``blake3`` package, over
10,000 seeded random payloads, hypothesis-generated ones, and the library's own shared corpus.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import json
import math
import os
import random
import string
from typing import Any

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


# `json_form` of a dataclass is `dataclasses.asdict`'s result, exactly: the same types at every
# level (1, 1.0 and True are told apart), the same key order, fresh containers. It converts what
# payloads are made of itself and leaves anything else to `asdict`; both ways are pinned here.


@dataclasses.dataclass
class Pair:
    left: Any
    right: Any


@dataclasses.dataclass(frozen=True)
class Tagged:
    tag: str
    pairs: list
    more: Any = None


Spot = collections.namedtuple("Spot", "x y")


class Items(list):
    pass


class Colour(str, enum.Enum):
    RED = "red"


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same type at every level, containers in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items())
        )
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


@dataclasses.dataclass(frozen=True)
class Key:
    k: int


def outcome(convert: Any, value: Any) -> Any:
    try:
        return convert(value)
    except Exception as error:  # asdict's own failures (a dataclass as a key: unhashable)
        return (type(error), str(error))


def as_asdict(value: Any) -> bool:
    return same(outcome(ag.json_form, value), outcome(dataclasses.asdict, value))


atoms = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4),
)
unusual = st.one_of(
    st.builds(Spot, atoms, atoms),
    st.lists(atoms, max_size=3).map(Items),
    st.frozensets(st.integers(), max_size=3),
    st.just(Colour.RED),
    st.binary(max_size=3),
)


def containers(children):
    return st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(
            st.one_of(st.text(max_size=3), st.integers(), st.tuples(st.integers()), st.builds(Key, st.integers())),
            children,
            max_size=3,
        ),
        st.builds(Pair, children, children),
        st.builds(Tagged, st.text(max_size=3), st.lists(st.builds(Pair, children, children), max_size=2), children),
    )


@settings(max_examples=500, deadline=None)
@given(st.recursive(st.one_of(atoms, unusual), containers, max_leaves=16), st.recursive(atoms, containers, max_leaves=16))
def test_the_json_form_of_a_dataclass_is_what_asdict_gives(anything, plain):
    assert as_asdict(Pair(anything, plain))
    assert as_asdict(Pair(plain, plain))
    assert as_asdict(Tagged("t", [Pair(plain, anything)], {"k": Pair(plain, [plain])}))


def test_the_json_form_of_nested_dataclasses_in_lists_tuples_and_dicts():
    value = Tagged(
        "order",
        [Pair(1, 1.0), Pair(True, None)],
        {"first": Pair((Pair("a", [1, 2]),), {"n": Tagged("in", [])}), 2: [Pair(Spot(1, 2), Items([3]))]},
    )
    form = ag.json_form(value)
    assert same(form, dataclasses.asdict(value))
    assert form == {
        "tag": "order",
        "pairs": [{"left": 1, "right": 1.0}, {"left": True, "right": None}],
        "more": {
            "first": {"left": ({"left": "a", "right": [1, 2]},), "right": {"n": {"tag": "in", "pairs": [], "more": None}}},
            2: [{"left": Spot(1, 2), "right": Items([3])}],
        },
    }
    # Fresh containers, never the caller's.
    assert form["pairs"] is not value.pairs and form["more"] is not value.more
    assert ag.canonicalize(Tagged("t", [Pair(1, "x")])) == ag.canonicalize(
        {"tag": "t", "pairs": [{"left": 1, "right": "x"}], "more": None}
    )


def test_the_json_form_of_deep_and_cyclic_dataclasses_is_what_asdict_does():
    deep: Any = 0
    for n in range(60):
        deep = Pair(n, [deep])
    assert same(ag.json_form(deep), dataclasses.asdict(deep))
    with pytest.raises(ag.InvalidPayload, match="deeper than 32"):
        ag.canonicalize(deep)
    cycle = Pair(1, [])
    cycle.right.append(cycle)
    with pytest.raises(RecursionError):
        dataclasses.asdict(cycle)
    with pytest.raises(RecursionError):
        ag.json_form(cycle)
