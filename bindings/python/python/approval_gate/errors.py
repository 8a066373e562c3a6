"""The exceptions of approval-gate: one class per error code of the Rust library.

Every refusal and failure raised by this package is an :class:`ApprovalGateError`. Its
``code`` is the library's stable error code (``"already_consumed"``, ``"payload_mismatch"``,
...), the same text audit lines, the CLI's ``--json`` and MCP answers carry; each code has a
subclass of its own named after the Rust ``Error`` variant (``AlreadyConsumed``,
``PayloadMismatch``, ...). None of them authorizes anything: on any of them, do not act.

The classes follow the library's error table: each code's class derives from one of four bases,
its *class* there (what to do about it): :class:`Refused` (the gate's rules said no; nothing
changed), :class:`Invalid` (malformed input; nothing changed), :class:`Fault` (the store or the
host failed; a human has to look) and :class:`Incomplete` (it took effect, but its durability is
unknown or it was not recorded). Each also carries its *family* (``"expired"``, ``"binding"``,
...), the finer grouping every front end of the library shares. The test suite checks both
against the library's own table (``_native.error_table()``).
"""

from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
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


class ApprovalGateError(Exception):
    """A refusal or failure of the gate. Nothing it concerns is authorized.

    Attributes:
        code: the library's stable error code, e.g. ``"already_consumed"``.
        message: the library's message (also ``str(error)``).
        request_id: the request the error is about, if any.
        status: where that request stands as far as the refusal tells
            (``"approved_unconsumed"`` after a payload mismatch, say), if it does.
        took_effect: ``True`` only when the operation nevertheless changed the store
            (``durability_unknown``, ``not_recorded``, ``expired_during_consume``): an approval
            reported this way is spent, and authorizes nothing.
    """

    code: str = "unknown"
    #: The code's class in the library's error table (``"refused"``, ``"invalid"``, ``"fault"``,
    #: ``"incomplete"``; ``class`` is a keyword): also which of the four bases this derives from.
    class_: str = "unknown"
    #: The code's family in the library's error table, e.g. ``"binding"``.
    family: str = "unknown"

    def __init__(
        self,
        message: str,
        *,
        request_id: Optional[str] = None,
        status: Optional[str] = None,
        took_effect: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.request_id = request_id
        self.status = status
        self.took_effect = took_effect


class Refused(ApprovalGateError):
    """The gate's rules said no (the request's state, its binding, its signatures, a limit, a
    role): nothing changed; do not proceed."""

    class_ = "refused"


class Invalid(ApprovalGateError):
    """The input is malformed (an id, a field, a payload): nothing changed; fix the input."""

    class_ = "invalid"


class Fault(ApprovalGateError):
    """The store, its state or the host failed: nothing changed, and a human has to look."""

    class_ = "fault"


class Incomplete(ApprovalGateError):
    """It took effect, but not completely (its durability is unknown, or it was not recorded):
    check where the request stands before acting again. An approval reported this way is
    spent, and authorizes nothing."""

    class_ = "incomplete"


class GrantClosed(ApprovalGateError):
    """A grant was used after the call it was made for returned (or after ``close()``, or in a
    process forked from the one that made it).

    Python-side only (the Rust grant cannot outlive its call at all): a grant authorizes
    nothing once its call is over.
    """

    code = "grant_closed"


class InvalidId(Invalid):
    """Code ``invalid_id``: an id that is not 12 lowercase letters and digits."""

    code = "invalid_id"
    family = "input"


class InvalidInput(Invalid):
    """Code ``invalid_input``: a field of a request or decision is unacceptable."""

    code = "invalid_input"
    family = "input"


class InvalidPayload(Invalid):
    """Code ``invalid_payload``: the payload is not acceptable JSON."""

    code = "invalid_payload"
    family = "input"


class PayloadType(Refused):
    """Code ``payload_type``: the approved payload does not round-trip through the executor's type."""

    code = "payload_type"
    family = "binding"


class QueueFull(Refused):
    """Code ``queue_full``: the pending queue is at its cap."""

    code = "queue_full"
    family = "capacity"


class CreationLimit(Refused):
    """Code ``creation_limit``: the live store holds as many requests as allowed."""

    code = "creation_limit"
    family = "capacity"


class NotFound(Refused):
    """Code ``not_found``: no such request."""

    code = "not_found"
    family = "missing"


class Archived(Refused):
    """Code ``archived``: the request was archived."""

    code = "archived"
    family = "missing"


class NotApproved(Refused):
    """Code ``not_approved``: the request is still pending."""

    code = "not_approved"
    family = "pending"


class Denied(Refused):
    """Code ``denied``: a human denied it."""

    code = "denied"
    family = "denied"


class Expired(Refused):
    """Code ``expired``: it expired while pending."""

    code = "expired"
    family = "expired"


class Revoked(Refused):
    """Code ``revoked``: the approval was revoked."""

    code = "revoked"
    family = "revoked"


class AlreadyConsumed(Refused):
    """Code ``already_consumed``: the approval was already used."""

    code = "already_consumed"
    family = "spent"


class ApprovalExpired(Refused):
    """Code ``approval_expired``: the approval expired before it was used."""

    code = "approval_expired"
    family = "expired"


class ExpiredDuringConsume(Refused):
    """Code ``expired_during_consume``: the approval expired while being consumed (it is spent)."""

    code = "expired_during_consume"
    family = "expired"


class ActionMismatch(Refused):
    """Code ``action_mismatch``: the action text differs from the approved one."""

    code = "action_mismatch"
    family = "binding"


class OperationMismatch(Refused):
    """Code ``operation_mismatch``: the operation differs from the approved one."""

    code = "operation_mismatch"
    family = "binding"


class PayloadMismatch(Refused):
    """Code ``payload_mismatch``: the payload differs from the approved one."""

    code = "payload_mismatch"
    family = "binding"


class InsufficientApprovals(Refused):
    """Code ``insufficient_approvals``: fewer valid signed approvals than the policy needs."""

    code = "insufficient_approvals"
    family = "quorum"


class BadSignature(Refused):
    """Code ``bad_signature``: a signature does not verify against the request."""

    code = "bad_signature"
    family = "signature"


class UntrustedSigner(Refused):
    """Code ``untrusted_signer``: a signature by a key the policy does not trust."""

    code = "untrusted_signer"
    family = "signature"


class AllowanceExhausted(Refused):
    """Code ``allowance_exhausted``: the allowance that approved it has no use, budget or rate left."""

    code = "allowance_exhausted"
    family = "spent"


class AllowanceNotCovering(Refused):
    """Code ``allowance_not_covering``: the allowance that approved it does not cover it."""

    code = "allowance_not_covering"
    family = "binding"


class SignatureRequired(Refused):
    """Code ``signature_required``: an unsigned approval where signatures are required."""

    code = "signature_required"
    family = "signature"


class AlreadySigned(Refused):
    """Code ``already_signed``: the approver already approved."""

    code = "already_signed"
    family = "state"


class NoApprovers(Fault):
    """Code ``no_approvers``: a signed approval offered to a gate without trusted approvers."""

    code = "no_approvers"
    family = "setup"


class Signing(Fault):
    """Code ``signing``: signing a decision statement failed."""

    code = "signing"
    family = "setup"


class Changed(Refused):
    """Code ``changed``: the request changed after it was shown."""

    code = "changed"
    family = "state"


class WrongState(Refused):
    """Code ``wrong_state``: the request is not in a state that allows this."""

    code = "wrong_state"
    family = "state"


class UnsafeState(Fault):
    """Code ``unsafe_state``: a state file is unsafe (symlink, foreign owner, open permissions)."""

    code = "unsafe_state"
    family = "damage"


class Corrupt(Fault):
    """Code ``corrupt``: a state file is damaged."""

    code = "corrupt"
    family = "damage"


class PredecessorStore(Fault):
    """Code ``predecessor_store``: the directory holds a store of approval-gate-mcp (Node), not ours yet."""

    code = "predecessor_store"
    family = "setup"


class Unreadable(Fault):
    """Code ``unreadable``: the request's record cannot be read."""

    code = "unreadable"
    family = "damage"


class AuditBroken(Fault):
    """Code ``audit_broken``: the audit log fails verification or refuses appends."""

    code = "audit_broken"
    family = "damage"


class AuditInconsistent(Fault):
    """Code ``audit_inconsistent``: the audit log's events break the state machine."""

    code = "audit_inconsistent"
    family = "damage"


class DurabilityUnknown(Incomplete):
    """Code ``durability_unknown``: it took effect, but may not survive a crash."""

    code = "durability_unknown"
    family = "incomplete"


class NotRecorded(Incomplete):
    """Code ``not_recorded``: it took effect, but its audit line could not be written."""

    code = "not_recorded"
    family = "incomplete"


class NoStateDir(Fault):
    """Code ``no_state_dir``: no state directory to use."""

    code = "no_state_dir"
    family = "setup"


class Random(Fault):
    """Code ``random``: the OS random source failed."""

    code = "random"
    family = "setup"


class Database(Fault):
    """Code ``database``: the database store failed or refused a change."""

    code = "database"
    family = "store"


class NotPermitted(Refused):
    """Code ``not_permitted``: the database refused the session user's role."""

    code = "not_permitted"
    family = "permission"


class Blocked(Fault):
    """Code ``blocked``: a wait of the database store ran out; nothing changed."""

    code = "blocked"
    family = "store"


class Io(Fault):
    """Code ``io``: an I/O error."""

    code = "io"
    family = "store"


#: The four bases, by the class name the library's table gives them.
CLASSES: Dict[str, Type[ApprovalGateError]] = {
    base.class_: base for base in (Refused, Invalid, Fault, Incomplete)
}

_BY_CODE: Dict[str, Type[ApprovalGateError]] = {
    cls.code: cls for base in CLASSES.values() for cls in base.__subclasses__()
}


def error_class(code: str) -> Type[ApprovalGateError]:
    """The exception class of a library error code (:class:`ApprovalGateError` if unknown)."""
    return _BY_CODE.get(code, ApprovalGateError)


def _from_native(
    code: str,
    message: str,
    request_id: Optional[str],
    status: Optional[str],
    took_effect: bool,
) -> ApprovalGateError:
    """Builds the exception for an error of the Rust library (called by the extension)."""
    cls = error_class(code)
    error = cls(message, request_id=request_id, status=status, took_effect=took_effect)
    if cls is ApprovalGateError:
        error.code = code
    return error
