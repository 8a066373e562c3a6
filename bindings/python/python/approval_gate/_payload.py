"""Payloads: the JSON form of a value (dataclass, pydantic model, JSON values), its canonical
text and digest (the Rust library's), and a payload type rebuilt from approved JSON."""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any, Optional, Tuple

from . import _native


# The types `dataclasses.asdict` returns as they are (its `copy.deepcopy` of them is the object
# itself), by exact type: a subclass (an enum over str, say) goes the general way.
_ATOMS = frozenset({str, int, float, bool, type(None)})


@dataclasses.dataclass
class _Box:
    """One value, for ``dataclasses.asdict`` to convert it as it converts a field's."""

    value: Any


def _fields_form(value: Any) -> Any:
    """``dataclasses.asdict``'s conversion of ``value``, made here for what payloads are made of
    (dataclass instances, exact ``dict``, ``list`` and ``tuple``, ``str``, ``int``, ``float``,
    ``bool``, ``None``) without ``asdict``'s deep copy of every leaf, and left to ``asdict``
    itself for anything else (a namedtuple, a subclass of a container, a set, ...). A cycle
    raises ``RecursionError``, as in ``asdict``."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if hasattr(kind, "__dataclass_fields__"):
        return {field.name: _fields_form(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if kind is list:
        return [_fields_form(item) for item in value]
    if kind is tuple:
        return tuple([_fields_form(item) for item in value])
    if kind is dict:
        return {_fields_form(key): _fields_form(item) for key, item in value.items()}
    return dataclasses.asdict(_Box(value))["value"]


def json_form(value: Any) -> Any:
    """The JSON value a payload stands for.

    A dataclass instance is ``dataclasses.asdict(value)``; a pydantic model is
    ``value.model_dump(mode="json")``; anything else is taken as it is, and must be JSON
    values only (``dict`` with ``str`` keys, ``list``, ``tuple``, ``str``, ``int``, ``float``,
    ``bool``, ``None``), checked when it is canonicalized.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields_form(value)
    dump = getattr(type(value), "model_dump", None)
    if dump is not None and callable(dump) and hasattr(type(value), "model_validate"):
        return value.model_dump(mode="json")
    return value


def canonicalize(value: Any) -> Tuple[str, str]:
    """The canonical JSON text (RFC 8785) of a payload and the BLAKE3 digest of its bytes.

    Computed by the Rust library, so the digest is the one a Rust executor computes. Raises
    :class:`InvalidPayload` for what cannot be a payload: ``None`` at the top level (omit the
    payload instead), NaN or infinite floats, floats with an integral value below 1e21
    (``1.0``; write ``1``), integers beyond ±9007199254740991, non-string keys, NUL
    characters, lone surrogates, nesting deeper than 32, more than 64 KiB.
    """
    return _native.canonicalize(json_form(value))



def _is_pydantic_model(cls: Any) -> bool:
    return isinstance(cls, type) and callable(getattr(cls, "model_validate", None)) and callable(
        getattr(cls, "model_dump", None)
    )


def _rebuild(cls: Optional[type], value: Any) -> Any:
    """The payload as the body's type, rebuilt from the approved JSON ``value``."""
    if cls is None:
        return value
    if _is_pydantic_model(cls):
        return cls.model_validate(value)  # type: ignore[attr-defined]
    if dataclasses.is_dataclass(cls) and isinstance(cls, type):
        if not isinstance(value, dict):
            raise TypeError(f"{cls.__name__} needs a json object, not {type(value).__name__}")
        fields = {}
        for name, nested in _fields_of(cls):
            if name not in value:
                continue
            item = value[name]
            if nested is not None:
                item = _rebuild(nested, item)
            fields[name] = item
        return cls(**fields)
    return value


@functools.lru_cache(maxsize=256)
def _fields_of(cls: type) -> Tuple[Tuple[str, Optional[type]], ...]:
    """A dataclass's fields in order, each with its annotated type when that is a dataclass or
    a pydantic model (rebuilt in turn), else ``None``. Its type hints are resolved at the first
    rebuild that succeeds in resolving them and kept (as ``requires_approval`` keeps the body's);
    a failure to resolve them is raised again at every rebuild, never kept."""
    hints = typing.get_type_hints(cls)
    plan = []
    for field in dataclasses.fields(cls):
        hint = hints.get(field.name)
        nested = hint if isinstance(hint, type) and (dataclasses.is_dataclass(hint) or _is_pydantic_model(hint)) else None
        plan.append((field.name, nested))
    return tuple(plan)

