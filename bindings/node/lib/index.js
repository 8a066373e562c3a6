// approval-gate for Node executors: human approval for an AI agent's consequential actions.
//
// An agent (possibly prompt-injected) may *ask*. Only a human, out of band, may *decide*. Only
// trusted executor code may *act*, and it acts only through a successful consume of an approved
// request, bound to the exact action text, operation and canonical payload the human saw.
// Pending, approved-but-not-consumed, denied, expired, revoked, any error: all mean **no**.
//
// This package is a binding of the Rust library `approval-gate` (N-API, in process): every
// check, consume, audit line and every payload's canonical bytes (RFC 8785) and digest (BLAKE3)
// are the library's own, so a Node executor, a Python one and a Rust one agree on every request
// in a shared store. The store's work runs on libuv's thread pool or a thread of the module,
// never on the event loop; every call that touches the store returns a Promise.
//
//     import { executeApproved } from "@approval-gate/approval-gate-mcp";
//     await executeApproved(id, { action, operation: "smtp.send", payload }, async (ctx) => {
//       ctx.assertActive();            // immediately before the side effect
//       await smtp.send(ctx.payload);  // deep-frozen: exactly what the human approved
//     });

import {
  ActionMismatch,
  GrantRefused,
  InvalidInput,
  OperationMismatch,
  PayloadMismatch,
} from "./errors.js";
import { nativeCall, nativeSync } from "./call.js";
import { ExecutionContext, Grant, ISSUE } from "./grant.js";
import { native } from "./native.js";
import { jsonText } from "./payload.js";

export * from "./errors.js";
export { ExecutionContext, Grant } from "./grant.js";

/** The text of what a body threw, for the audit log's `execution_finished` line. */
function describe(error) {
  if (error instanceof Error) {
    return error.message ? `${error.name}: ${error.message}` : error.name;
  }
  try {
    return `thrown: ${String(error)}`;
  } catch {
    return "thrown: a value without text";
  }
}

/**
 * A binding as given: `{ action, operation?, payload? }`, or the predecessor's
 * `(action, { operation?, payload? })`.
 */
function bindingOf(actionOrBinding, rest) {
  const given = typeof actionOrBinding === "string" ? { ...(rest ?? {}), action: actionOrBinding } : actionOrBinding;
  if (given === null || typeof given !== "object" || typeof given.action !== "string") {
    throw new InvalidInput("invalid binding: give { action, operation?, payload? } with action the exact approved text");
  }
  if (given.operation !== undefined && given.operation !== null && typeof given.operation !== "string") {
    throw new InvalidInput("invalid binding: operation must be a string");
  }
  return given;
}

/** A binding for the native module: the payload as JSON text (none for `undefined`/`null`). */
function nativeBinding(binding) {
  return {
    action: binding.action,
    operation: binding.operation ?? undefined,
    payload: binding.payload === undefined || binding.payload === null ? undefined : jsonText(binding.payload),
  };
}

/** The approval gate over a store. Open it with `Gate.open()`. */
export class Gate {
  #native;

  /** @internal use `Gate.open()`. */
  constructor(token, nativeGate) {
    if (token !== ISSUE) {
      throw new TypeError("use Gate.open(...) to open a gate");
    }
    this.#native = nativeGate;
    Object.freeze(this);
  }

  /**
   * Opens a store with the operator's settings, resolved by the Rust library exactly as the
   * CLI resolves them: each setting from the first of these that gives it: `options` (as the
   * CLI's `--store`, `--dir`, `--config`, `--approvers`, `--quorum`), the environment
   * (`APPROVAL_GATE_STORE`, `APPROVAL_GATE_DIR`, ...), the config file, else the defaults
   * (`~/.approval-gate`); the system policy holds whatever they say. Recovers the store after
   * any crash.
   */
  static async open(options = {}) {
    const nativeGate = await nativeCall(() => native.openGate(options));
    return new Gate(ISSUE, nativeGate);
  }

  /** Where the store is (a PostgreSQL URL without its password). */
  get location() {
    return this.#native.location;
  }

  /**
   * Files a request for a human decision (the agent's side); an identical pending request is
   * returned instead of a second one. Resolves to `{ id, deduplicated, report }`.
   */
  async requestApproval({ action, reason, operation, payload, ttlSeconds, requestedBy }) {
    const input = {
      action,
      reason,
      operation: operation ?? undefined,
      payload: payload === undefined || payload === null ? undefined : jsonText(payload),
      ttlSeconds,
      requestedBy,
    };
    return JSON.parse(await nativeCall(() => this.#native.requestApproval(input)));
  }

  /** Where request `id` stands, as the report every front end shows. Never an authorization. */
  async check(id) {
    return JSON.parse(await nativeCall(() => this.#native.check(id)));
  }

  /** **The human's side** (trusted operator code only): approves request `id` as `by`. */
  async approve(id, { by, reason } = {}) {
    return JSON.parse(await nativeCall(() => this.#native.approve(id, by, reason)));
  }

  /** **The human's side**: denies request `id` as `by`. */
  async deny(id, { by, reason } = {}) {
    return JSON.parse(await nativeCall(() => this.#native.deny(id, by, reason)));
  }

  /** **The human's side**: withdraws the approval of request `id` before it is used. */
  async revoke(id, { by, reason } = {}) {
    return JSON.parse(await nativeCall(() => this.#native.revoke(id, by, reason)));
  }

  /**
   * Consumes the approval of request `id`, bound to exactly this action, operation and
   * payload: succeeds once. Resolves to a `Grant` for `assertConsumed`. `executeApproved`
   * also records the execution's start and outcome: prefer it.
   */
  async consume(id, binding) {
    const given = bindingOf(binding);
    const input = nativeBinding(given);
    const nativeGrant = await nativeCall(() => this.#native.consume(id, input));
    return new Grant(ISSUE, nativeGrant, given.action);
  }

  /**
   * Runs `body(ctx)` exactly once for an approved request, and only then. In order (the Rust
   * library's `Gate::execute_approved`, on a thread of the native module): consume, bound to
   * the action, operation and canonical payload; write `execution_started` and fsync it; check
   * the expiry again; call `body` on the event loop with `ctx` (`ctx.payload` deep-frozen,
   * `ctx.assertActive()`); write `execution_finished` with the outcome (`ok`, or `error` with
   * the text of what it threw, which is then thrown again). A crash while `body` runs leaves
   * the outcome `unknown`; nothing is ever retried. Any refusal throws and `body` never runs.
   */
  async executeApproved(id, binding, body) {
    if (typeof body !== "function") {
      throw new InvalidInput("executeApproved needs the body to run: a function (ctx) => ...");
    }
    const input = nativeBinding(bindingOf(binding));
    const execution = await nativeCall(() => this.#native.beginExecution(id, input));
    const ctx = new ExecutionContext(ISSUE, execution.grant);
    let result;
    try {
      result = await body(ctx);
    } catch (error) {
      ExecutionContext.end(ctx);
      await nativeCall(() => execution.finish(describe(error)));
      throw error;
    }
    ExecutionContext.end(ctx);
    await nativeCall(() => execution.finish(null));
    return result;
  }

  /** Makes the audit log agree with the claims after a crash; the ids now recorded unknown. */
  async recover() {
    return nativeCall(() => this.#native.recover());
  }

  /** Every line of the audit log, oldest first. */
  async auditRecords() {
    return JSON.parse(await nativeCall(() => this.#native.auditRecords()));
  }

  /** Verifies the audit log's hash chain; resolves to its number of lines. */
  async verifyAudit() {
    return nativeCall(() => this.#native.verifyAudit());
  }
}

let opened = null;

/**
 * The gate the module-level functions use unless given one: opened once, with the settings
 * resolved from the environment and the config file as the CLI resolves them.
 */
export function defaultGate() {
  if (opened === null) {
    opened = Gate.open().catch((error) => {
      opened = null;
      throw error;
    });
  }
  return opened;
}

function gateOf(options) {
  return options?.gate ?? defaultGate();
}

/** `Gate#executeApproved` on `options.gate`, else the default gate. */
export async function executeApproved(id, binding, body, options) {
  return (await gateOf(options)).executeApproved(id, binding, body);
}

/** `Gate#consume` on `options.gate`, else the default gate. */
export async function consume(id, binding, options) {
  return (await gateOf(options)).consume(id, binding);
}

/**
 * The predecessor's name: `consumeApproval(id, action, { operation, payload }?, options?)` or
 * `consumeApproval(id, { action, operation, payload }, options?)`.
 */
export async function consumeApproval(id, actionOrBinding, bindingOrOptions, options) {
  if (typeof actionOrBinding === "string") {
    const { gate, ...rest } = bindingOrOptions ?? {};
    return consume(id, bindingOf(actionOrBinding, rest), options ?? { gate });
  }
  return consume(id, actionOrBinding, bindingOrOptions);
}

/**
 * Accepts `grant` once, and only if `consume` issued it in this process for request `id` and
 * exactly this binding (`{ action, operation?, payload? }`, or `action, { operation?, payload? }`),
 * before its expiry. Throws otherwise (`GrantRefused`, `ActionMismatch`, `OperationMismatch`,
 * `PayloadMismatch`, `ApprovalExpired`): after any throw, do not act. Returns the deep-frozen
 * approved payload.
 */
export function assertConsumed(grant, id, actionOrBinding, rest) {
  const accepted = Grant.accept(grant);
  const binding = bindingOf(actionOrBinding, rest);
  if (accepted.id !== id) {
    throw new GrantRefused(`this grant is for request ${accepted.id}, not ${String(id)}`, { requestId: accepted.id });
  }
  const details = { requestId: accepted.id, status: "consumed" };
  if (accepted.action !== binding.action) {
    throw new ActionMismatch(`the grant of request ${id} is for another action text`, details);
  }
  if ((binding.operation ?? null) !== accepted.operation) {
    throw new OperationMismatch(`the grant of request ${id} is for another operation`, details);
  }
  const digest =
    binding.payload === undefined || binding.payload === null
      ? null
      : nativeSync(() => native.canonicalize(jsonText(binding.payload))).digest;
  if (digest !== accepted.payloadDigest) {
    throw new PayloadMismatch(`the grant of request ${id} is for another payload`, details);
  }
  accepted.assertActive();
  return accepted.payload;
}

/**
 * Wraps `fn(payload, ctx)` so that it runs only inside an approved, single-use execution of
 * `operation` (the Python binding's `@requires_approval`): the wrapper takes
 * `(payload, { id, action, gate? })`, executes the approval bound to the operation and that
 * payload, and calls `fn` with the deep-frozen approved payload and the execution context.
 */
export function requiresApproval({ operation }, fn) {
  nativeSync(() => native.checkOperationName(operation));
  if (typeof fn !== "function") {
    throw new InvalidInput("requiresApproval needs the function to guard");
  }
  const guarded = async (payload, claim) => {
    if (claim === null || typeof claim !== "object" || typeof claim.id !== "string") {
      throw new InvalidInput("call it with (payload, { id, action }): the approval it runs under");
    }
    return executeApproved(claim.id, { action: claim.action, operation, payload }, (ctx) => fn(ctx.payload, ctx), {
      gate: claim.gate,
    });
  };
  Object.defineProperty(guarded, "name", { value: fn.name || "guarded" });
  return guarded;
}

/**
 * The canonical JSON text (RFC 8785) of a payload and its BLAKE3 digest, as the library
 * computes them (what an approval binds to).
 */
export function canonicalize(payload) {
  return nativeSync(() => native.canonicalize(jsonText(payload)));
}

/**
 * Applies the PostgreSQL store's schema to the database at `url` (what `approval-gate db init`
 * does); resolves to its version. An operator's step, run once per database.
 */
export async function postgresInit(url) {
  return nativeCall(() => native.postgresInit(url));
}

/** The library's error table: every code with its class and family. */
export function errorTable() {
  return native.errorTable();
}
