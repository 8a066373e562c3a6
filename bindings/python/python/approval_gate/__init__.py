"""Human approval for an AI agent's consequential actions, from Python.

An agent (possibly prompt-injected) may *ask*. Only a human, out of band, may *decide*. Only
trusted executor code may *act*, and it acts only through a successful consume of an approved
request, bound to the exact action text, operation and canonical payload the human saw.
Pending, approved-but-not-consumed, denied, expired, revoked, timed out, any error: all of them
mean **no**.

This package is a binding of the Rust library ``approval-gate``: every check, every consume,
every audit line and every payload's canonical bytes (RFC 8785) and digest (BLAKE3) are the
library's own, so a Python executor and a Rust one agree on every request in a shared store.

    >>> gate = Gate.open("/tmp/approvals")                       # doctest: +SKIP
    >>> @requires_approval(operation="smtp.send")                 # doctest: +SKIP
    ... def send(email: Email, grant: Grant) -> str:
    ...     grant.assert_active()          # immediately before the side effect
    ...     return smtp.send(email)        # `email` is rebuilt from the approved bytes
    >>> send(email, Claim(gate, request_id, action))             # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, TypeVar, Union

from . import _native
from ._decorator import Claim, requires_approval
from ._native import Grant
from ._payload import canonicalize, json_form
from .errors import *  # noqa: F401,F403  (every exception class, as `approval_gate.Denied`)

__all__ = [
    "Claim",
    "Gate",
    "Grant",
    "Status",
    "Submitted",
    "canonicalize",
    "json_form",
    "postgres_init",
    "requires_approval",
    # Every exception class of `errors`, spelled out: a type checker reads only a literal list
    # (``mypy --strict`` refused `approval_gate.PayloadType` when this was `*errors.__all__`).
    "ApprovalGateError",
    "Refused",
    "Invalid",
    "Fault",
    "Incomplete",
    "GrantClosed",
    "InvalidId",
    "InvalidInput",
    "InvalidPayload",
    "PayloadType",
    "QueueFull",
    "CreationLimit",
    "NotFound",
    "Archived",
    "NotApproved",
    "Denied",
    "Expired",
    "Revoked",
    "AlreadyConsumed",
    "ApprovalExpired",
    "ExpiredDuringConsume",
    "ActionMismatch",
    "OperationMismatch",
    "PayloadMismatch",
    "InsufficientApprovals",
    "BadSignature",
    "UntrustedSigner",
    "AllowanceExhausted",
    "AllowanceNotCovering",
    "SignatureRequired",
    "AlreadySigned",
    "NoApprovers",
    "Signing",
    "Changed",
    "WrongState",
    "UnsafeState",
    "Corrupt",
    "PredecessorStore",
    "Unreadable",
    "AuditBroken",
    "AuditInconsistent",
    "DurabilityUnknown",
    "NotRecorded",
    "NoStateDir",
    "Random",
    "Database",
    "NotPermitted",
    "Blocked",
    "Io",
]

R = TypeVar("R")




def postgres_init(url: str) -> int:
    """Applies the PostgreSQL store's schema to the database at ``url`` (what
    ``approval-gate db init`` does) and returns its version. An operator's step."""
    return _native.postgres_init(url)


@dataclasses.dataclass(frozen=True)
class Status:
    """Where a request stands: a report, never an authorization.

    ``status`` is the effective status: ``pending``, ``approved_unconsumed``,
    ``approved_expired``, ``consumed``, ``denied``, ``expired`` or ``revoked``. Only a consume
    authorizes anything, never a status. ``report`` is the whole report as every front end
    shows it (the CLI's ``--json``, the MCP answers).
    """

    id: str
    status: str
    action: str
    reason: str
    operation: Optional[str]
    payload: Any
    payload_digest: Optional[str]
    expires_at: str
    decided_by: Optional[str]
    decision_reason: Optional[str]
    required_approvals: int
    report: Dict[str, Any] = dataclasses.field(repr=False, compare=False)

    authorizes_execution: bool = dataclasses.field(default=False, init=False)

    @classmethod
    def _of(cls, report: Dict[str, Any]) -> "Status":
        return cls(
            id=report["id"],
            status=report["effectiveStatus"],
            action=report["action"],
            reason=report["reason"],
            operation=report.get("operation"),
            payload=report.get("payload"),
            payload_digest=report.get("payloadDigest"),
            expires_at=report["expiresAt"],
            decided_by=report.get("decidedBy"),
            decision_reason=report.get("decisionReason"),
            required_approvals=report.get("requiredApprovals", 1),
            report=report,
        )

    @property
    def pending(self) -> bool:
        """Whether the request still waits for a human."""
        return self.status == "pending"


@dataclasses.dataclass(frozen=True)
class Submitted:
    """The answer to :meth:`Gate.request_approval`: the request now pending, and whether an
    identical pending request already existed and is returned instead."""

    id: str
    deduplicated: bool
    status: Status


def _quorum(quorum: Union[None, str, Mapping[str, int], Iterable[Tuple[str, int]]]) -> Optional[str]:
    """The quorum as the binaries' text (``payments.*=2,*=1``), which the library's settings
    read as they read ``--quorum``."""
    if quorum is None or isinstance(quorum, str):
        return quorum
    pairs = quorum.items() if isinstance(quorum, Mapping) else quorum
    items = []
    for pattern, number in pairs:
        pattern = str(pattern)
        if "," in pattern or "=" in pattern:
            raise InvalidInput(f"invalid quorum: {pattern!r}: an operation pattern has no ',' or '='")
        items.append(f"{pattern}={int(number)}")
    return ",".join(items)


class Gate:
    """The approval gate over a store: requests, decisions, single-use consumes.

    Open it with :meth:`Gate.open`. Safe to share between threads; every call releases the
    GIL while the library works (file locks, fsyncs, database calls, waits).
    """

    __slots__ = ("_native",)

    def __init__(self, native: "_native.Gate") -> None:
        if not isinstance(native, _native.Gate):
            raise TypeError("use Gate.open(...) to open a gate")
        self._native = native

    @classmethod
    def open(
        cls,
        store: Union[None, str, "os.PathLike[str]"] = None,
        *,
        approvers: Union[None, str, "os.PathLike[str]"] = None,
        quorum: Union[None, str, Mapping[str, int], Iterable[Tuple[str, int]]] = None,
        default_ttl: Optional[float] = None,
        max_pending: Optional[int] = None,
        max_requests: Optional[int] = None,
    ) -> "Gate":
        """Opens a store with the operator's settings and recovers it after any crash.

        The settings are resolved by the Rust library exactly as the binaries resolve them
        (``approval-gate``, ``exec``, the MCP server): each from the first of these that gives
        it: the arguments here (as the CLI's flags), the environment (``APPROVAL_GATE_STORE``,
        ``APPROVAL_GATE_DIR``, ``APPROVAL_GATE_APPROVERS``, ``APPROVAL_GATE_QUORUM``, ...), the
        config file (``APPROVAL_GATE_CONFIG``, else ``~/.config/approval-gate/config.toml``),
        else the defaults. A system policy (``/etc/approval-gate/policy.toml``) holds whatever
        they say: its approvers cannot be replaced, its quorum only raised. So a Python executor
        enforces the policy ``approval-gate exec`` enforces. A setting that cannot be used
        raises :class:`InvalidInput` and opens nothing.

        Args:
            store: a directory (a path, or a ``file:`` URL), or a ``postgres://`` URL (the
                CLI's ``--store``; a path object is ``--dir``). By default the settings' store
                (``~/.approval-gate`` when nothing names one).
            approvers: an OpenSSH ``allowed_signers`` file (``--approvers``). With approvers
                the gate holds a policy: an approval counts only with signatures by these
                keys, verified in this process at every consume.
            quorum: how many distinct approvers operations need (``--quorum``), as
                ``{"payments.*": 2, "*": 1}``, pairs, or the binaries' text
                ``"payments.*=2,*=1"``. A table must say what every other operation needs
                with a ``*`` entry (refused otherwise). Needs approvers.
            default_ttl: seconds a request lives unless it asks for less (10 s to 7 days),
                instead of the settings'.
            max_pending: the cap of the pending queue, instead of the settings'.
            max_requests: the cap of the requests kept in the live store, instead of the
                settings'.
        """
        return cls(
            _native.Gate.open(
                store,
                approvers=None if approvers is None else os.fspath(approvers),
                quorum=_quorum(quorum),
                default_ttl=default_ttl,
                max_pending=max_pending,
                max_requests=max_requests,
            )
        )

    @property
    def location(self) -> str:
        """Where the store is (a PostgreSQL URL without its password)."""
        return self._native.location

    def request_approval(
        self,
        action: str,
        reason: str,
        *,
        operation: Optional[str] = None,
        payload: Any = None,
        ttl: Optional[float] = None,
        requested_by: Optional[str] = None,
    ) -> Submitted:
        """Files a request for a human decision (the agent's side).

        ``payload`` (JSON values, a dataclass or a pydantic model; ``None`` for none) is stored
        as its canonical JSON: what the human approves is exactly what the executor must
        present. An identical pending request is returned instead of filing a second one.
        """
        json_payload = None if payload is None else json_form(payload)
        id_, deduplicated, report = self._native.request_approval(
            action,
            reason,
            operation=operation,
            payload=json_payload,
            ttl=ttl,
            requested_by=requested_by,
        )
        return Submitted(id=id_, deduplicated=deduplicated, status=Status._of(report))

    def check(self, id: str) -> Status:
        """Where request ``id`` stands. Never an authorization."""
        return Status._of(self._native.check(id))

    def wait(self, id: str, timeout: float) -> Status:
        """Waits until request ``id`` is no longer pending or ``timeout`` seconds pass, woken
        by the store's events, without holding the GIL. Returns the last read: still
        ``pending`` if the time ran out. Neither answer authorizes anything."""
        _, report = self._native.wait(id, float(timeout))
        return Status._of(report)

    async def wait_async(self, id: str, timeout: float) -> Status:
        """:meth:`wait` for asyncio, never blocking the event loop: the library's own wait
        thread follows the store's events and wakes the loop when the answer is there (the
        Rust ``Watch::wait_for_decision_async``). Cancelling the awaiting task ends the wait
        and its thread at once."""
        loop = asyncio.get_running_loop()
        # Starting the watch may connect to a database: off the loop.
        waiter = await loop.run_in_executor(None, self._native.wait_async, id, float(timeout))
        woken = asyncio.Event()
        fd = waiter.fileno()
        loop.add_reader(fd, woken.set)
        try:
            while True:
                woken.clear()
                answer = waiter.poll()
                if answer is not None:
                    return Status._of(answer[1])
                await woken.wait()
        finally:
            loop.remove_reader(fd)
            waiter.close()

    def approve(
        self,
        id: str,
        *,
        by: str,
        reason: Optional[str] = None,
        signed: Optional[Tuple[str, str]] = None,
    ) -> Status:
        """**The human's side**, as the Rust library's public ``Gate::approve``: approves
        request ``id`` as ``by``. Under a policy, ``signed`` is ``(principal, signature)``: the
        armored SSHSIG of :meth:`decision_statement`, or a passkey assertion over its SHA-256 in
        the ``APPROVAL-GATE WEBAUTHN`` envelope (as ``approval-gate serve`` makes). Trusted
        operator code only: never hand
        this to an agent (the MCP server, for one, exposes no approval)."""
        return Status._of(self._native.approve(id, by=by, reason=reason, signed=signed))

    def deny(self, id: str, *, by: str, reason: Optional[str] = None) -> Status:
        """**The human's side**: denies request ``id`` as ``by``."""
        return Status._of(self._native.deny(id, by=by, reason=reason))

    def revoke(self, id: str, *, by: str, reason: Optional[str] = None) -> Status:
        """**The human's side**: withdraws the approval of request ``id`` before it is used."""
        return Status._of(self._native.revoke(id, by=by, reason=reason))

    def decision_statement(self, id: str, principal: str) -> bytes:
        """The bytes an approver signs (``ssh-keygen -Y sign -n approval-gate``) to approve
        request ``id`` as ``principal`` under a policy."""
        return self._native.decision_statement(id, principal)

    def consume(
        self,
        id: str,
        action: str,
        *,
        operation: Optional[str] = None,
        payload: Any = None,
    ) -> Grant:
        """Consumes the approval of request ``id``: the only thing that authorizes acting.

        Succeeds once, and only if the request is approved, unconsumed, unexpired, not revoked,
        and ``action``, ``operation`` and the canonical ``payload`` are exactly the approved
        ones. Every refusal raises its exception and is audited. The returned grant is live
        until closed (use it as a context manager). :meth:`execute_approved` and
        :func:`requires_approval` also record the execution's start and outcome: prefer them.
        """
        json_payload = None if payload is None else json_form(payload)
        return self._native.consume(id, action, operation=operation, payload=json_payload)

    def execute_approved(
        self,
        id: str,
        action: str,
        body: Callable[[Grant], R],
        *,
        operation: Optional[str] = None,
        payload: Any = None,
    ) -> R:
        """Runs ``body(grant)`` exactly once for an approved request, and only then.

        In order (the Rust library's ``Gate::execute_approved``): consume, bound to ``action``,
        ``operation`` and the canonical ``payload``; write ``execution_started`` and fsync it;
        check the expiry again; call ``body`` with the grant, whose ``payload`` is rebuilt from
        the approved bytes; write ``execution_finished`` with the outcome (``ok``, or ``error``
        with the exception's text, which is then raised again). The grant is closed when
        ``body`` returns. Any refusal raises and ``body`` never runs.
        """
        json_payload = None if payload is None else json_form(payload)
        return self._native.execute_approved(
            id, action, body, operation=operation, payload=json_payload
        )

    def recover(self) -> List[str]:
        """Makes the audit log agree with the claims after a crash (every open does it too);
        returns the ids whose execution outcome it recorded as unknown."""
        return self._native.recover()

    def audit_records(self) -> List[Dict[str, Any]]:
        """Every line of the audit log, oldest first, as dicts (``seq``, ``ts``, ``event``,
        ``id`` and the event's details)."""
        return self._native.audit_records()

    def verify_audit(self) -> int:
        """Verifies the audit log's hash chain; returns its number of lines, or raises
        :class:`AuditBroken` / :class:`AuditInconsistent`."""
        return self._native.verify_audit()

    def __repr__(self) -> str:
        return f"<Gate {self.location}>"
