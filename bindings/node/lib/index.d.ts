// Types of approval-gate for Node executors (lib/index.js). Hand-written; the test suite
// checks that it declares exactly what the module exports, and compiles the README's example
// against it with `tsc --strict`.

/** A JSON value, as payloads are: what the human approves, exactly. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A deep-readonly view of a JSON value (payloads handed to executors are deep-frozen). */
export type Frozen<T> = T extends (infer U)[]
  ? readonly Frozen<U>[]
  : T extends object
    ? { readonly [K in keyof T]: Frozen<T[K]> }
    : T;

/** What the executor is about to run: exactly what the human approved. */
export interface Binding<P = JsonValue> {
  /** The exact action text of the request. */
  action: string;
  /** The operation name, if the request had one (such as `smtp.send`). */
  operation?: string | null;
  /** The payload, if the request had one; compared as canonical JSON (RFC 8785). */
  payload?: P | null;
}

/** How to open a gate: the layer of the CLI's flags; the rest from the environment and files. */
export interface OpenOptions {
  /** `--store`: a directory, a `file:` URL or a `postgres://` URL. */
  store?: string;
  /** `--dir`: the store directory. */
  dir?: string;
  /** `--config`: the operator's config file. */
  config?: string;
  /** `--approvers`: an OpenSSH `allowed_signers` file. */
  approvers?: string;
  /** `--quorum`: such as `payments.*=2,*=1`. */
  quorum?: string;
  /** Seconds a request lives unless it asks for less. */
  defaultTtlSeconds?: number;
}

/** Where a request stands, as every front end shows it. Never an authorization. */
export interface StatusReport {
  id: string;
  /** `pending`, `approved_unconsumed`, `approved_expired`, `consumed`, `denied`, `expired` or `revoked`. */
  effectiveStatus: string;
  action: string;
  reason: string;
  operation?: string | null;
  payload?: JsonValue;
  payloadDigest?: string | null;
  expiresAt: string;
  authorizesExecution: false;
  [field: string]: unknown;
}

/** A new request (the agent's side). */
export interface NewRequest {
  action: string;
  reason: string;
  operation?: string | null;
  payload?: JsonValue | null;
  ttlSeconds?: number;
  requestedBy?: string;
}

/** A filed request: its id, whether an identical pending one was returned, where it stands. */
export interface Submitted {
  id: string;
  deduplicated: boolean;
  report: StatusReport;
}

/** One line of the audit log. */
export interface AuditRecord {
  seq: number;
  ts: string;
  event: string;
  id?: string;
  [field: string]: unknown;
}

/** A gate to use instead of the default one. */
export interface GateOption {
  gate?: Gate;
}

/** What `executeApproved` hands its body: live only while the body runs. */
export declare class ExecutionContext<P = JsonValue> {
  private constructor();
  /** The executed request's id. */
  readonly id: string;
  /** The approved operation, or `null`. */
  readonly operation: string | null;
  /** The BLAKE3 digest of the approved canonical payload, or `null`. */
  readonly payloadDigest: string | null;
  /** When the approval stops being usable (RFC 3339). */
  readonly expiresAt: string;
  /** A deep-frozen copy of exactly what the human approved (`null` for none). */
  readonly payload: Frozen<P>;
  /** Whether the body is still running. */
  readonly live: boolean;
  /** Throws `ApprovalExpired` once past the expiry; call it immediately before the side effect. */
  assertActive(): void;
}

/** The result of a successful `consume`: check it with `assertConsumed` before acting. */
export declare class Grant<P = JsonValue> {
  private constructor();
  /** Always `true` (approval-gate-mcp 0.4 answered `{ ok }`); a refused consume throws. */
  readonly ok: true;
  readonly id: string;
  readonly action: string;
  readonly operation: string | null;
  readonly payloadDigest: string | null;
  readonly expiresAt: string;
  readonly payload: Frozen<P>;
  assertActive(): void;
  /** Whether `value` is a grant `consume` issued in this process. */
  static isIssued(value: unknown): value is Grant<unknown>;
}

/** The approval gate over a store. */
export declare class Gate {
  private constructor();
  /** Opens a store with the operator's settings, resolved as the CLI resolves them. */
  static open(options?: OpenOptions): Promise<Gate>;
  /** Where the store is. */
  readonly location: string;
  requestApproval(request: NewRequest): Promise<Submitted>;
  check(id: string): Promise<StatusReport>;
  approve(id: string, decision: { by: string; reason?: string }): Promise<StatusReport>;
  deny(id: string, decision: { by: string; reason?: string }): Promise<StatusReport>;
  revoke(id: string, decision: { by: string; reason?: string }): Promise<StatusReport>;
  consume<P = JsonValue>(id: string, binding: Binding<P>): Promise<Grant<P>>;
  executeApproved<R, P = JsonValue>(
    id: string,
    binding: Binding<P>,
    body: (ctx: ExecutionContext<P>) => R | Promise<R>,
  ): Promise<Awaited<R>>;
  recover(): Promise<string[]>;
  auditRecords(): Promise<AuditRecord[]>;
  verifyAudit(): Promise<number>;
}

/** The gate the module-level functions use: opened once with the resolved settings. */
export declare function defaultGate(): Promise<Gate>;

/**
 * Runs `body(ctx)` exactly once for an approved request, and only then: consume bound to the
 * binding, durable `execution_started`, expiry re-checked, the body, the recorded outcome.
 */
export declare function executeApproved<R, P = JsonValue>(
  id: string,
  binding: Binding<P>,
  body: (ctx: ExecutionContext<P>) => R | Promise<R>,
  options?: GateOption,
): Promise<Awaited<R>>;

/** Consumes the approval of request `id`, bound to exactly this binding: once. */
export declare function consume<P = JsonValue>(id: string, binding: Binding<P>, options?: GateOption): Promise<Grant<P>>;

/** The predecessor's name of `consume`. */
export declare function consumeApproval<P = JsonValue>(
  id: string,
  action: string,
  rest?: Omit<Binding<P>, "action"> & GateOption,
  options?: GateOption,
): Promise<Grant<P>>;
export declare function consumeApproval<P = JsonValue>(id: string, binding: Binding<P>, options?: GateOption): Promise<Grant<P>>;

/** Accepts `grant` once, only if `consume` issued it for request `id` and exactly this binding. */
export declare function assertConsumed<P = JsonValue>(grant: Grant<P>, id: string, binding: Binding<P>): Frozen<P>;
export declare function assertConsumed<P = JsonValue>(
  grant: Grant<P>,
  id: string,
  action: string,
  rest?: Omit<Binding<P>, "action">,
): Frozen<P>;

/** The approval a guarded function is called under. */
export interface Claim {
  id: string;
  action: string;
  gate?: Gate;
}

/** Wraps `fn` to run only inside an approved, single-use execution of `operation`. */
export declare function requiresApproval<P extends JsonValue, R>(
  options: { operation: string },
  fn: (payload: Frozen<P>, ctx: ExecutionContext<P>) => R | Promise<R>,
): (payload: P, claim: Claim) => Promise<Awaited<R>>;

/** The canonical JSON (RFC 8785) of a payload and its BLAKE3 digest, as the library computes them. */
export declare function canonicalize(payload: JsonValue): { text: string; digest: string };

/** Applies the PostgreSQL store's schema to the database at `url` (`approval-gate db init`); its version. */
export declare function postgresInit(url: string): Promise<number>;

/** One row of the library's error table. */
export interface ErrorRow {
  code: string;
  class: string;
  family: string;
}

/** The library's error table. */
export declare function errorTable(): ErrorRow[];

/** Details of a refusal. */
export interface ErrorDetails {
  requestId?: string | null;
  status?: string | null;
  tookEffect?: boolean;
}

/** A refusal or failure of the gate. Nothing it concerns is authorized. */
export declare class ApprovalGateError extends Error {
  constructor(message: string, details?: ErrorDetails);
  static readonly code: string;
  static readonly family: string;
  readonly code: string;
  readonly family: string;
  readonly requestId: string | null;
  readonly status: string | null;
  readonly tookEffect: boolean;
}
export declare class Refused extends ApprovalGateError {}
export declare class Invalid extends ApprovalGateError {}
export declare class Fault extends ApprovalGateError {}
export declare class Incomplete extends ApprovalGateError {}
/** A grant or context used outside its life, or one never issued (JavaScript-side). */
export declare class GrantRefused extends Refused {}
/** Code `invalid_id` (invalid, family `input`). */
export declare class InvalidId extends Invalid {}
/** Code `invalid_input` (invalid, family `input`). */
export declare class InvalidInput extends Invalid {}
/** Code `invalid_payload` (invalid, family `input`). */
export declare class InvalidPayload extends Invalid {}
/** Code `payload_type` (refused, family `binding`). */
export declare class PayloadType extends Refused {}
/** Code `queue_full` (refused, family `capacity`). */
export declare class QueueFull extends Refused {}
/** Code `creation_limit` (refused, family `capacity`). */
export declare class CreationLimit extends Refused {}
/** Code `not_found` (refused, family `missing`). */
export declare class NotFound extends Refused {}
/** Code `archived` (refused, family `missing`). */
export declare class Archived extends Refused {}
/** Code `not_approved` (refused, family `pending`). */
export declare class NotApproved extends Refused {}
/** Code `denied` (refused, family `denied`). */
export declare class Denied extends Refused {}
/** Code `expired` (refused, family `expired`). */
export declare class Expired extends Refused {}
/** Code `revoked` (refused, family `revoked`). */
export declare class Revoked extends Refused {}
/** Code `already_consumed` (refused, family `spent`). */
export declare class AlreadyConsumed extends Refused {}
/** Code `approval_expired` (refused, family `expired`). */
export declare class ApprovalExpired extends Refused {}
/** Code `expired_during_consume` (refused, family `expired`). */
export declare class ExpiredDuringConsume extends Refused {}
/** Code `action_mismatch` (refused, family `binding`). */
export declare class ActionMismatch extends Refused {}
/** Code `operation_mismatch` (refused, family `binding`). */
export declare class OperationMismatch extends Refused {}
/** Code `payload_mismatch` (refused, family `binding`). */
export declare class PayloadMismatch extends Refused {}
/** Code `insufficient_approvals` (refused, family `quorum`). */
export declare class InsufficientApprovals extends Refused {}
/** Code `bad_signature` (refused, family `signature`). */
export declare class BadSignature extends Refused {}
/** Code `untrusted_signer` (refused, family `signature`). */
export declare class UntrustedSigner extends Refused {}
/** Code `allowance_exhausted` (refused, family `spent`). */
export declare class AllowanceExhausted extends Refused {}
/** Code `allowance_not_covering` (refused, family `binding`). */
export declare class AllowanceNotCovering extends Refused {}
/** Code `signature_required` (refused, family `signature`). */
export declare class SignatureRequired extends Refused {}
/** Code `already_signed` (refused, family `state`). */
export declare class AlreadySigned extends Refused {}
/** Code `no_approvers` (fault, family `setup`). */
export declare class NoApprovers extends Fault {}
/** Code `signing` (fault, family `setup`). */
export declare class Signing extends Fault {}
/** Code `predecessor_store` (fault, family `setup`): a store of approval-gate-mcp (Node), not ours yet. */
export declare class PredecessorStore extends Fault {}
/** Code `changed` (refused, family `state`). */
export declare class Changed extends Refused {}
/** Code `wrong_state` (refused, family `state`). */
export declare class WrongState extends Refused {}
/** Code `unsafe_state` (fault, family `damage`). */
export declare class UnsafeState extends Fault {}
/** Code `corrupt` (fault, family `damage`). */
export declare class Corrupt extends Fault {}
/** Code `unreadable` (fault, family `damage`). */
export declare class Unreadable extends Fault {}
/** Code `audit_broken` (fault, family `damage`). */
export declare class AuditBroken extends Fault {}
/** Code `audit_inconsistent` (fault, family `damage`). */
export declare class AuditInconsistent extends Fault {}
/** Code `durability_unknown` (incomplete, family `incomplete`). */
export declare class DurabilityUnknown extends Incomplete {}
/** Code `not_recorded` (incomplete, family `incomplete`). */
export declare class NotRecorded extends Incomplete {}
/** Code `no_state_dir` (fault, family `setup`). */
export declare class NoStateDir extends Fault {}
/** Code `random` (fault, family `setup`). */
export declare class Random extends Fault {}
/** Code `database` (fault, family `store`). */
export declare class Database extends Fault {}
/** Code `not_permitted` (refused, family `permission`). */
export declare class NotPermitted extends Refused {}
/** Code `blocked` (fault, family `store`). */
export declare class Blocked extends Fault {}
/** Code `io` (fault, family `store`). */
export declare class Io extends Fault {}

/** The four bases by the library's class names. */
export declare const BASES: Record<"refused" | "invalid" | "fault" | "incomplete", typeof ApprovalGateError>;
/** Every error class by its code. */
export declare const ERROR_CLASSES: Record<string, typeof ApprovalGateError>;
/** Codes of the native table without a declared class (empty unless this package is out of date). */
export declare const UNDECLARED_CODES: string[];
/** The error class of `code`, made with `message` and `details`. */
export declare function errorOf(code: string, message: string, details?: ErrorDetails): ApprovalGateError;
