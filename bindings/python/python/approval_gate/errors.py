"""The exceptions of approval-gate: one class per error code of the Rust library.

Every refusal and failure raised by this package is an :class:`ApprovalGateError`. Its
``code`` is the library's stable error code (``"already_consumed"``, ``"payload_mismatch"``,
...), the same text audit lines, the CLI's ``--json`` and MCP answers carry; each code has a
subclass of its own named after the Rust ``Error`` variant (``AlreadyConsumed``,
``PayloadMismatch``, ...). None of them authorizes anything: on any of them, do not act.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
    "ApprovalGateError",
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
    "SignatureRequired",
    "AlreadySigned",
    "NoApprovers",
    "Signing",
    "Changed",
    "WrongState",
    "UnsafeState",
    "Corrupt",
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


class GrantClosed(ApprovalGateError):
    """A grant was used after the call it was made for returned (or after ``close()``, or in a
    process forked from the one that made it).

    Python-side only (the Rust grant cannot outlive its call at all): a grant authorizes
    nothing once its call is over.
    """

    code = "grant_closed"


class InvalidId(ApprovalGateError):
    """Code ``invalid_id``: an id that is not 12 lowercase letters and digits."""

    code = "invalid_id"


class InvalidInput(ApprovalGateError):
    """Code ``invalid_input``: a field of a request or decision is unacceptable."""

    code = "invalid_input"


class InvalidPayload(ApprovalGateError):
    """Code ``invalid_payload``: the payload is not acceptable JSON."""

    code = "invalid_payload"


class PayloadType(ApprovalGateError):
    """Code ``payload_type``: the approved payload does not round-trip through the executor's type."""

    code = "payload_type"


class QueueFull(ApprovalGateError):
    """Code ``queue_full``: the pending queue is at its cap."""

    code = "queue_full"


class CreationLimit(ApprovalGateError):
    """Code ``creation_limit``: the live store holds as many requests as allowed."""

    code = "creation_limit"


class NotFound(ApprovalGateError):
    """Code ``not_found``: no such request."""

    code = "not_found"


class Archived(ApprovalGateError):
    """Code ``archived``: the request was archived."""

    code = "archived"


class NotApproved(ApprovalGateError):
    """Code ``not_approved``: the request is still pending."""

    code = "not_approved"


class Denied(ApprovalGateError):
    """Code ``denied``: a human denied it."""

    code = "denied"


class Expired(ApprovalGateError):
    """Code ``expired``: it expired while pending."""

    code = "expired"


class Revoked(ApprovalGateError):
    """Code ``revoked``: the approval was revoked."""

    code = "revoked"


class AlreadyConsumed(ApprovalGateError):
    """Code ``already_consumed``: the approval was already used."""

    code = "already_consumed"


class ApprovalExpired(ApprovalGateError):
    """Code ``approval_expired``: the approval expired before it was used."""

    code = "approval_expired"


class ExpiredDuringConsume(ApprovalGateError):
    """Code ``expired_during_consume``: the approval expired while being consumed (it is spent)."""

    code = "expired_during_consume"


class ActionMismatch(ApprovalGateError):
    """Code ``action_mismatch``: the action text differs from the approved one."""

    code = "action_mismatch"


class OperationMismatch(ApprovalGateError):
    """Code ``operation_mismatch``: the operation differs from the approved one."""

    code = "operation_mismatch"


class PayloadMismatch(ApprovalGateError):
    """Code ``payload_mismatch``: the payload differs from the approved one."""

    code = "payload_mismatch"


class InsufficientApprovals(ApprovalGateError):
    """Code ``insufficient_approvals``: fewer valid signed approvals than the policy needs."""

    code = "insufficient_approvals"


class BadSignature(ApprovalGateError):
    """Code ``bad_signature``: a signature does not verify against the request."""

    code = "bad_signature"


class UntrustedSigner(ApprovalGateError):
    """Code ``untrusted_signer``: a signature by a key the policy does not trust."""

    code = "untrusted_signer"


class SignatureRequired(ApprovalGateError):
    """Code ``signature_required``: an unsigned approval where signatures are required."""

    code = "signature_required"


class AlreadySigned(ApprovalGateError):
    """Code ``already_signed``: the approver already approved."""

    code = "already_signed"


class NoApprovers(ApprovalGateError):
    """Code ``no_approvers``: a signed approval offered to a gate without trusted approvers."""

    code = "no_approvers"


class Signing(ApprovalGateError):
    """Code ``signing``: signing a decision statement failed."""

    code = "signing"


class Changed(ApprovalGateError):
    """Code ``changed``: the request changed after it was shown."""

    code = "changed"


class WrongState(ApprovalGateError):
    """Code ``wrong_state``: the request is not in a state that allows this."""

    code = "wrong_state"


class UnsafeState(ApprovalGateError):
    """Code ``unsafe_state``: a state file is unsafe (symlink, foreign owner, open permissions)."""

    code = "unsafe_state"


class Corrupt(ApprovalGateError):
    """Code ``corrupt``: a state file is damaged."""

    code = "corrupt"


class Unreadable(ApprovalGateError):
    """Code ``unreadable``: the request's record cannot be read."""

    code = "unreadable"


class AuditBroken(ApprovalGateError):
    """Code ``audit_broken``: the audit log fails verification or refuses appends."""

    code = "audit_broken"


class AuditInconsistent(ApprovalGateError):
    """Code ``audit_inconsistent``: the audit log's events break the state machine."""

    code = "audit_inconsistent"


class DurabilityUnknown(ApprovalGateError):
    """Code ``durability_unknown``: it took effect, but may not survive a crash."""

    code = "durability_unknown"


class NotRecorded(ApprovalGateError):
    """Code ``not_recorded``: it took effect, but its audit line could not be written."""

    code = "not_recorded"


class NoStateDir(ApprovalGateError):
    """Code ``no_state_dir``: no state directory to use."""

    code = "no_state_dir"


class Random(ApprovalGateError):
    """Code ``random``: the OS random source failed."""

    code = "random"


class Database(ApprovalGateError):
    """Code ``database``: the database store failed or refused a change."""

    code = "database"


class NotPermitted(ApprovalGateError):
    """Code ``not_permitted``: the database refused the session user's role."""

    code = "not_permitted"


class Blocked(ApprovalGateError):
    """Code ``blocked``: a wait of the database store ran out; nothing changed."""

    code = "blocked"


class Io(ApprovalGateError):
    """Code ``io``: an I/O error."""

    code = "io"


_BY_CODE: Dict[str, Type[ApprovalGateError]] = {
    cls.code: cls for cls in ApprovalGateError.__subclasses__() if cls is not GrantClosed
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
