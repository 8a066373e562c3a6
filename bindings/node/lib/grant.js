// Grants and execution contexts: proof, inside this process, that an approval was consumed.
//
// Each is a class instance whose state lives in `#private` fields, registered at birth in a
// module-private WeakSet. A copy (`{...grant}`, `Object.assign`), a `structuredClone` (which
// drops the prototype and every private field), a JSON round trip, a Proxy or a hand-built
// object is none of them: `assertConsumed` refuses it. The constructor takes a module-private
// token, so no other code can make one.

import { nativeSync } from "./call.js";
import { GrantRefused } from "./errors.js";
import { frozenPayload } from "./payload.js";

/** Only this module and index.js hold it: the constructors refuse anything else. */
export const ISSUE = Symbol("approval-gate issue");

const issuedGrants = new WeakSet();
const issuedContexts = new WeakSet();

/** What a native grant says, frozen: the request, the approved operation and payload. */
function facts(nativeGrant) {
  return Object.freeze({
    id: nativeGrant.id,
    operation: nativeGrant.operation ?? null,
    payloadDigest: nativeGrant.payloadDigest ?? null,
    expiresAt: nativeGrant.expiresAt,
    payload: frozenPayload(nativeGrant.payloadText),
  });
}

/**
 * What a grant and an execution context both tell: the approved request's facts, read from the
 * native grant once and frozen.
 */
class Approved {
  #facts;

  constructor(nativeGrant) {
    this.#facts = facts(nativeGrant);
  }

  /** The request's id. */
  get id() {
    return this.#facts.id;
  }

  /** The approved operation, or `null`. */
  get operation() {
    return this.#facts.operation;
  }

  /** The BLAKE3 digest of the approved canonical payload, or `null`. */
  get payloadDigest() {
    return this.#facts.payloadDigest;
  }

  /** When the approval stops being usable (RFC 3339). */
  get expiresAt() {
    return this.#facts.expiresAt;
  }

  /**
   * A deep-frozen copy of exactly the payload the human approved, parsed from the canonical
   * bytes the library returned (`null` for a request without one).
   */
  get payload() {
    return this.#facts.payload;
  }
}

/** The result of a successful `consume`: check it with `assertConsumed` before acting. */
export class Grant extends Approved {
  #native;
  #action;
  #accepted = false;

  /** @internal made by `consume` only. */
  constructor(token, nativeGrant, action) {
    if (token !== ISSUE) {
      throw new GrantRefused("a grant is made by consume() only; it cannot be built");
    }
    super(nativeGrant);
    this.#native = nativeGrant;
    this.#action = action;
    issuedGrants.add(this);
    Object.freeze(this);
  }

  /**
   * Always `true`: approval-gate-mcp 0.4's `consumeApproval` answered `{ ok }`, and code that
   * checks `ok` keeps working. A refused consume throws here; it never returns.
   */
  get ok() {
    return true;
  }

  /** The approved action text. */
  get action() {
    return this.#action;
  }

  /** Throws `ApprovalExpired` once the gate's clock is past the expiry. */
  assertActive() {
    nativeSync(() => this.#native.assertActive());
  }

  /**
   * Whether `value` is a grant `consume` issued in this process (not a copy, clone or
   * lookalike).
   */
  static isIssued(value) {
    return issuedGrants.has(value) && #native in value;
  }

  /** @internal accepts the grant once; every later call refuses. */
  static accept(grant) {
    if (!Grant.isIssued(grant)) {
      throw new GrantRefused(
        "not a grant issued by consume() in this process (a copy, a structuredClone, a JSON " +
          "round trip or a hand-built object authorizes nothing)",
      );
    }
    if (grant.#accepted) {
      throw new GrantRefused(`the grant of request ${grant.id} was already accepted once`, {
        requestId: grant.id,
      });
    }
    grant.#accepted = true;
    return grant;
  }

  toJSON() {
    throw new GrantRefused("a grant cannot be serialized: it authorizes only in the process that consumed it");
  }
}

/** What `executeApproved` hands its body: live only while the body runs. */
export class ExecutionContext extends Approved {
  #native;
  #live = true;

  /** @internal made by `executeApproved` only. */
  constructor(token, nativeGrant) {
    if (token !== ISSUE) {
      throw new GrantRefused("an execution context is made by executeApproved() only");
    }
    super(nativeGrant);
    this.#native = nativeGrant;
    issuedContexts.add(this);
    Object.freeze(this);
  }

  #check() {
    if (!this.#live) {
      throw new GrantRefused(
        `this execution of request ${this.id} is over: its context authorizes nothing now`,
        { requestId: this.id },
      );
    }
  }

  /** Whether the body is still running. */
  get live() {
    return this.#live;
  }

  /**
   * Re-checks the expiry on the gate's clock: throws `ApprovalExpired` once it is past, and
   * `GrantRefused` after the execution ended. Call it immediately before the side effect.
   */
  assertActive() {
    this.#check();
    nativeSync(() => this.#native.assertActive());
  }

  /** @internal ends the context when the body returns. */
  static end(context) {
    if (issuedContexts.has(context)) {
      context.#live = false;
    }
  }

  toJSON() {
    throw new GrantRefused("an execution context cannot be serialized");
  }
}
