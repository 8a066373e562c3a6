// The errors of approval-gate: one class per error code of the Rust library.
//
// Every refusal and failure is an `ApprovalGateError`. Its `code` is the library's stable
// error code (`already_consumed`, `payload_mismatch`, ...), the same text audit lines, the
// CLI's `--json` and MCP answers carry; each code has a subclass named after it
// (`AlreadyConsumed`, `PayloadMismatch`, ...), deriving from one of four bases, its class in
// the library's table: `Refused` (the gate's rules said no; nothing changed), `Invalid`
// (malformed input; nothing changed), `Fault` (the store or the host failed; a human has to
// look), `Incomplete` (it took effect, but its durability is unknown or it was not recorded).
// None of them authorizes anything: on any of them, do not act.
//
// The table comes from the native module (`errorTable()`): a code this file has no class for
// still gets one at load time, with the right base, and the test suite fails until it is
// written here.

import { native } from "./native.js";

/** A refusal or failure of the gate. Nothing it concerns is authorized. */
export class ApprovalGateError extends Error {
  /** The library's stable error code. */
  static code = "unknown";
  /** The code's family in the library's error table. */
  static family = "unknown";

  /**
   * @param {string} message
   * @param {{ requestId?: string | null, status?: string | null, tookEffect?: boolean }} [details]
   */
  constructor(message, details = {}) {
    super(message);
    this.name = new.target.name;
    /** The library's stable error code, e.g. `already_consumed`. */
    this.code = new.target.code;
    /** The code's family, e.g. `binding`. */
    this.family = new.target.family;
    /** The request the error is about, if any. */
    this.requestId = details.requestId ?? null;
    /** Where that request stands as far as the refusal tells, if it does. */
    this.status = details.status ?? null;
    /** True only when the operation nevertheless changed the store: the approval is spent. */
    this.tookEffect = details.tookEffect === true;
  }
}

/** The gate's rules said no: nothing changed; do not proceed. */
export class Refused extends ApprovalGateError {}
/** The input is malformed: nothing changed; fix the input. */
export class Invalid extends ApprovalGateError {}
/** The store, its state or the host failed: nothing changed, and a human has to look. */
export class Fault extends ApprovalGateError {}
/** It took effect, but not completely: check the request before acting again; it is spent. */
export class Incomplete extends ApprovalGateError {}

/** The four bases, by the class names of the library's table. */
export const BASES = { refused: Refused, invalid: Invalid, fault: Fault, incomplete: Incomplete };

/**
 * A grant or an execution context was used outside its life: after its execution returned,
 * after `assertConsumed` accepted it once, or it was never issued by this module at all (a
 * copy, a `structuredClone`, a JSON round trip, a hand-built object). JavaScript-side only.
 */
export class GrantRefused extends Refused {
  static code = "grant_refused";
  static family = "grant";
}

/** Code `invalid_id`. */
export class InvalidId extends Invalid {
  static code = "invalid_id";
  static family = "input";
}
/** Code `invalid_input`. */
export class InvalidInput extends Invalid {
  static code = "invalid_input";
  static family = "input";
}
/** Code `invalid_payload`. */
export class InvalidPayload extends Invalid {
  static code = "invalid_payload";
  static family = "input";
}
/** Code `payload_type`. */
export class PayloadType extends Refused {
  static code = "payload_type";
  static family = "binding";
}
/** Code `queue_full`. */
export class QueueFull extends Refused {
  static code = "queue_full";
  static family = "capacity";
}
/** Code `creation_limit`. */
export class CreationLimit extends Refused {
  static code = "creation_limit";
  static family = "capacity";
}
/** Code `not_found`. */
export class NotFound extends Refused {
  static code = "not_found";
  static family = "missing";
}
/** Code `archived`. */
export class Archived extends Refused {
  static code = "archived";
  static family = "missing";
}
/** Code `not_approved`. */
export class NotApproved extends Refused {
  static code = "not_approved";
  static family = "pending";
}
/** Code `denied`. */
export class Denied extends Refused {
  static code = "denied";
  static family = "denied";
}
/** Code `expired`. */
export class Expired extends Refused {
  static code = "expired";
  static family = "expired";
}
/** Code `revoked`. */
export class Revoked extends Refused {
  static code = "revoked";
  static family = "revoked";
}
/** Code `already_consumed`. */
export class AlreadyConsumed extends Refused {
  static code = "already_consumed";
  static family = "spent";
}
/** Code `approval_expired`. */
export class ApprovalExpired extends Refused {
  static code = "approval_expired";
  static family = "expired";
}
/** Code `expired_during_consume`. */
export class ExpiredDuringConsume extends Refused {
  static code = "expired_during_consume";
  static family = "expired";
}
/** Code `action_mismatch`. */
export class ActionMismatch extends Refused {
  static code = "action_mismatch";
  static family = "binding";
}
/** Code `operation_mismatch`. */
export class OperationMismatch extends Refused {
  static code = "operation_mismatch";
  static family = "binding";
}
/** Code `payload_mismatch`. */
export class PayloadMismatch extends Refused {
  static code = "payload_mismatch";
  static family = "binding";
}
/** Code `insufficient_approvals`. */
export class InsufficientApprovals extends Refused {
  static code = "insufficient_approvals";
  static family = "quorum";
}
/** Code `bad_signature`. */
export class BadSignature extends Refused {
  static code = "bad_signature";
  static family = "signature";
}
/** Code `untrusted_signer`. */
export class UntrustedSigner extends Refused {
  static code = "untrusted_signer";
  static family = "signature";
}
/** Code `allowance_exhausted`. */
export class AllowanceExhausted extends Refused {
  static code = "allowance_exhausted";
  static family = "spent";
}
/** Code `allowance_not_covering`. */
export class AllowanceNotCovering extends Refused {
  static code = "allowance_not_covering";
  static family = "binding";
}
/** Code `signature_required`. */
export class SignatureRequired extends Refused {
  static code = "signature_required";
  static family = "signature";
}
/** Code `already_signed`. */
export class AlreadySigned extends Refused {
  static code = "already_signed";
  static family = "state";
}
/** Code `no_approvers`. */
export class NoApprovers extends Fault {
  static code = "no_approvers";
  static family = "setup";
}
/** Code `signing`. */
export class Signing extends Fault {
  static code = "signing";
  static family = "setup";
}
/** Code `changed`. */
export class Changed extends Refused {
  static code = "changed";
  static family = "state";
}
/** Code `wrong_state`. */
export class WrongState extends Refused {
  static code = "wrong_state";
  static family = "state";
}
/** Code `unsafe_state`. */
export class UnsafeState extends Fault {
  static code = "unsafe_state";
  static family = "damage";
}
/** Code `corrupt`. */
export class Corrupt extends Fault {
  static code = "corrupt";
  static family = "damage";
}
/** Code `predecessor_store`: the directory holds a store of approval-gate-mcp (Node), not ours yet (`approval-gate migrate`). */
export class PredecessorStore extends Fault {
  static code = "predecessor_store";
  static family = "setup";
}
/** Code `unreadable`. */
export class Unreadable extends Fault {
  static code = "unreadable";
  static family = "damage";
}
/** Code `audit_broken`. */
export class AuditBroken extends Fault {
  static code = "audit_broken";
  static family = "damage";
}
/** Code `audit_inconsistent`. */
export class AuditInconsistent extends Fault {
  static code = "audit_inconsistent";
  static family = "damage";
}
/** Code `durability_unknown`. */
export class DurabilityUnknown extends Incomplete {
  static code = "durability_unknown";
  static family = "incomplete";
}
/** Code `not_recorded`. */
export class NotRecorded extends Incomplete {
  static code = "not_recorded";
  static family = "incomplete";
}
/** Code `no_state_dir`. */
export class NoStateDir extends Fault {
  static code = "no_state_dir";
  static family = "setup";
}
/** Code `random`. */
export class Random extends Fault {
  static code = "random";
  static family = "setup";
}
/** Code `database`. */
export class Database extends Fault {
  static code = "database";
  static family = "store";
}
/** Code `not_permitted`. */
export class NotPermitted extends Refused {
  static code = "not_permitted";
  static family = "permission";
}
/** Code `blocked`. */
export class Blocked extends Fault {
  static code = "blocked";
  static family = "store";
}
/** Code `io`. */
export class Io extends Fault {
  static code = "io";
  static family = "store";
}

/** Every class of this file by its code, the library's table's codes first. */
export const ERROR_CLASSES = {};
for (const [, value] of Object.entries({
  InvalidId, InvalidInput, InvalidPayload, PayloadType, QueueFull, CreationLimit, NotFound,
  Archived, NotApproved, Denied, Expired, Revoked, AlreadyConsumed, ApprovalExpired,
  ExpiredDuringConsume, ActionMismatch, OperationMismatch, PayloadMismatch, InsufficientApprovals,
  BadSignature, UntrustedSigner, AllowanceExhausted, AllowanceNotCovering, SignatureRequired,
  AlreadySigned, NoApprovers, Signing, Changed,
  WrongState, UnsafeState, Corrupt, PredecessorStore, Unreadable, AuditBroken, AuditInconsistent,
  DurabilityUnknown, NotRecorded, NoStateDir, Random, Database, NotPermitted, Blocked, Io,
  GrantRefused,
})) {
  ERROR_CLASSES[value.code] = value;
}

/** The codes of the native module's table that this file had no class for (the tests check it is empty). */
export const UNDECLARED_CODES = [];
for (const row of native.errorTable()) {
  if (!(row.code in ERROR_CLASSES)) {
    // Never missed at run time: a class with the table's base, code and family.
    const Base = BASES[row.class] ?? Fault;
    const made = { [row.code]: class extends Base {} }[row.code];
    made.code = row.code;
    made.family = row.family;
    ERROR_CLASSES[row.code] = made;
    UNDECLARED_CODES.push(row.code);
  }
}

/**
 * The error of the class of `code` (an unknown code is a `Fault`: never a success).
 * @param {string} code
 */
export function errorOf(code, message, details) {
  const Class = ERROR_CLASSES[code] ?? Fault;
  return new Class(message, details);
}
