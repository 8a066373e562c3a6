"""An independent RFC 8785 (JCS) canonicalizer in pure Python, and the payload digest.

Written from the RFC, sharing no code with the Rust library: the tests compare the library's
bytes and digests with these. Numbers follow ECMAScript's Number.prototype.toString (RFC 8785
section 3.2.2.3), from the shortest round-tripping digits that Python's ``repr`` gives.
"""

from __future__ import annotations

import json
from typing import Any

import blake3


def _number(value: Any) -> str:
    if isinstance(value, bool):
        raise TypeError("bool is not a number here")
    if isinstance(value, int):
        return str(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("not a finite number")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    text = repr(abs(value))
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # The decimal point sits after `whole` digits, shifted by the exponent.
    point = len(whole) + (int(exponent) if exponent else 0)
    # Leading zeros stripped from `whole + fraction` move the point left.
    point -= len(whole + fraction) - len((whole + fraction).lstrip("0"))
    digits = digits.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp = ("+" if e >= 0 else "-") + str(abs(e))
        out = digits + "e" + exp if k == 1 else digits[0] + "." + digits[1:] + "e" + exp
    return sign + out


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def canonical(value: Any) -> str:
    """The RFC 8785 text of a JSON value."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical(item) for item in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value, key=lambda key: key.encode("utf-16-be"))
        return "{" + ",".join(_string(k) + ":" + canonical(value[k]) for k in keys) + "}"
    raise TypeError(f"not json: {type(value).__name__}")


def digest(text: str) -> str:
    """The payload digest: BLAKE3 of the canonical UTF-8 bytes, as 64 hex characters."""
    return blake3.blake3(text.encode("utf-8")).hexdigest()
