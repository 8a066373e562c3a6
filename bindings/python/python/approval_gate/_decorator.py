"""``requires_approval``: the decorator that runs a body only inside an approved, single-use
execution, and the :class:`Claim` a caller passes in the grant's place."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, TypeVar

from . import _native
from ._native import Grant
from ._payload import _is_pydantic_model, _rebuild, json_form
from .errors import ApprovalGateError

if TYPE_CHECKING:
    from . import Gate

R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


@dataclasses.dataclass(frozen=True)
class Claim:
    """The approval a caller claims to hold: which gate, which request, and the exact action
    text the human approved.

    It proves nothing by itself: a function under :func:`requires_approval` consumes it, bound
    to the function's operation and the payload passed alongside, and runs its body only if
    that consume succeeds.
    """

    gate: Gate
    id: str
    action: str



def _payload_type(sealed: _native.SealedBody, qualname: str, name: str) -> Optional[type]:
    """The body's payload type from its annotation, if it is a dataclass or a pydantic model."""
    problem = None
    try:
        hint = sealed.type_hints().get(name)
    except Exception as error:
        problem = f"{type(error).__name__}: {error}"
    if problem is not None:
        # Refused rather than guessed: the body would get json values where it declared a type.
        # Raised afresh, not chained: the failed resolution's frames hold the body.
        raise TypeError(
            f"{qualname}: cannot resolve the annotation of {name!r} ({problem}); define the "
            "payload type at module level, or leave the parameter unannotated for json values"
        )
    if isinstance(hint, type) and (dataclasses.is_dataclass(hint) or _is_pydantic_model(hint)):
        return hint
    return None


def _checked(gate: Gate, id: str, cls: Optional[type], approved_text: str) -> Any:
    """The payload the body will get, built once from the approved bytes (as ``cls``, else as
    JSON values) and checked to carry them exactly, before anything is consumed: that very
    object, never another build, is what the body gets. A type that would not carry the bytes
    exactly (a field it drops or defaults, a value it converts, a constructor that does not
    build the same object twice) is the Rust library's ``payload_type`` refusal, recorded as
    one."""
    name = "json values" if cls is None else cls.__name__
    problem = None
    try:
        built = _rebuild(cls, json.loads(approved_text))
        echo, _ = _native.canonicalize(json_form(built))
        if echo != approved_text:
            problem = (
                f"{name} changes the payload: serializing it again gives {echo!r}, not the "
                "approved bytes; use a type that keeps every field and value exactly"
            )
    except ApprovalGateError as error:
        problem = f"{name} cannot carry the payload: {error}"
    except Exception as error:  # any failure to rebuild is a refusal, never a pass
        problem = f"{name} cannot be rebuilt from the payload: {type(error).__name__}: {error}"
    if problem is not None:
        raise gate._native.refuse_payload_type(id, problem)
    return built


def requires_approval(*, operation: str) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Runs a function's body only inside an approved, single-use execution, on the payload a
    human approved: the Python form of the Rust attribute ``#[requires_approval]``.

    The guarded function's last two parameters are the payload and the grant::

        @requires_approval(operation="smtp.send")
        def send(email: Email, grant: Grant) -> str:
            grant.assert_active()          # immediately before the side effect
            return smtp.send(email)

        send(email, Claim(gate, request_id, action))

    The caller passes the payload it means to run and a :class:`Claim` in the grant's place.
    The wrapper consumes the approval bound to exactly this operation, the claim's action
    text and the payload's canonical JSON (``Gate.execute_approved``), writes the start ahead,
    calls the body with a copy of the payload rebuilt from the approved bytes (as the
    annotated dataclass or pydantic model, else as JSON values; never the caller's object) and
    a grant live only during the call, and records the outcome (an exception is an ``error``
    outcome, raised again). Any refusal raises its exception and the body never runs.

    An ``async def`` body is awaited on the caller's event loop while the consume and the
    records run on a worker thread, so the loop is never blocked.
    """
    if not isinstance(operation, str):
        raise TypeError("operation must be a string")
    _native.check_operation_name(operation)

    def decorate(func: Callable[..., R]) -> Callable[..., R]:
        signature = inspect.signature(func)
        qualname = func.__qualname__
        params = [
            p
            for p in signature.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        if len(params) < 2 or len(params) != len(signature.parameters):
            raise TypeError(
                f"{qualname}: a function under requires_approval takes its other "
                "arguments, then the payload, then the grant, all positional (no *args or "
                "keyword-only parameters)"
            )
        payload_name, grant_name = params[-2].name, params[-1].name
        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            raise TypeError(
                f"{qualname}: a generator function cannot be guarded: its body would run only "
                "when iterated, after the grant is closed, and the outcome would read ok for work "
                "not done; do the work in the body and return its results (a list, say)"
            )
        is_async = inspect.iscoroutinefunction(func)
        # The body, out of reach: no attribute of the function returned below, nor any closure
        # cell of it, holds `func`; the sealed body runs it only under the grant of an approved
        # execution of this operation, on the approved payload.
        sealed = _native.SealedBody(func, operation, len(params) - 2)
        resolved: List[Optional[type]] = []  # the declared payload type, resolved at the first call

        def declared_type() -> Optional[type]:
            if not resolved:
                resolved.append(_payload_type(sealed, qualname, payload_name))
            return resolved[0]

        def prepare(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Tuple[inspect.BoundArguments, Claim, Any, Optional[type], str]:
            bound = signature.bind(*args, **kwargs)
            claim = bound.arguments[grant_name]
            if not isinstance(claim, Claim):
                raise TypeError(
                    f"{qualname}: pass a Claim(gate, request_id, action) as {grant_name!r}, "
                    f"not {type(claim).__name__}: only a consume makes a grant"
                )
            payload = bound.arguments[payload_name]
            cls = declared_type()
            if cls is None and (
                (dataclasses.is_dataclass(payload) and not isinstance(payload, type))
                or _is_pydantic_model(type(payload))
            ):
                cls = type(payload)
            value = json_form(payload)
            try:
                text, _ = _native.canonicalize(value)
            except ApprovalGateError:
                text = ""  # the consume below refuses it, and records the refusal
            return bound, claim, value, cls, text

        def run(bound: inspect.BoundArguments, claim: Claim, value: Any, cls: Optional[type], text: str,
                finish: Optional[Callable[[Any], Any]]) -> R:
            # Built and checked once; the consume binds the same bytes, so it is the approved
            # payload, and the sealed body checks it is that object's digest once more.
            checked = _checked(claim.gate, claim.id, cls, text) if text else None

            def body(grant: Grant) -> R:
                arguments = bound.arguments.copy()
                arguments[payload_name] = checked
                arguments[grant_name] = grant
                result = sealed.call(inspect.BoundArguments(signature, arguments).args)
                if finish is not None:
                    result = finish(result)
                return _done(qualname, result)  # type: ignore[no-any-return]

            return claim.gate._native.execute_approved(
                claim.id, claim.action, body, operation=operation, payload=value
            )

        if is_async:

            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                bound, claim, value, cls, text = prepare(args, kwargs)
                loop = asyncio.get_running_loop()

                def finish(coro: Any) -> Any:
                    return asyncio.run_coroutine_threadsafe(coro, loop).result()

                return await loop.run_in_executor(None, run, bound, claim, value, cls, text, finish)

            return _dressed(guarded_async, func, signature)  # type: ignore[return-value]

        def guarded(*args: Any, **kwargs: Any) -> R:
            bound, claim, value, cls, text = prepare(args, kwargs)
            return run(bound, claim, value, cls, text, None)

        return _dressed(guarded, func, signature)

    return decorate


def _done(qualname: str, result: Any) -> Any:
    """``result``, unless it is work still to be done (a generator, a coroutine, an awaitable):
    that would run after the grant is closed, with the outcome recorded as ``ok`` before it
    ran. It is closed unstarted, and refused inside the grant: an ``error`` outcome."""
    if inspect.isgenerator(result) or inspect.iscoroutine(result) or inspect.isasyncgen(result) or inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if callable(close):
            close()
        raise TypeError(
            f"{qualname} returned a {type(result).__name__}, whose work has not run: it would run "
            "after the grant is closed; do the work in the body (an async body: async def)"
        )
    return result


def _dressed(guarded: F, func: Callable[..., Any], signature: inspect.Signature) -> F:
    """``guarded`` named, documented and signed as ``func``, as ``functools.wraps`` would, but
    without ``__wrapped__`` (``inspect.unwrap`` and every framework following it would get the
    raw body and call it with no approval) and without copying ``func.__dict__`` (an inner
    decorator's ``__wrapped__`` would be there)."""
    for name in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(guarded, name, getattr(func, name))
        except AttributeError:
            pass
    try:
        guarded.__annotations__ = dict(func.__annotations__)
    except Exception:  # an annotation that cannot be evaluated yet: the signature still tells
        pass
    guarded.__signature__ = signature  # type: ignore[attr-defined]
    return guarded
