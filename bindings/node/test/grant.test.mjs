// consume and assertConsumed: the grant is the object consume issued, nothing else.

import assert from "node:assert/strict";
import { test } from "node:test";

import { ag, approved, freshGate } from "./support.mjs";

const BINDING = { action: "pay 5 EUR", operation: "payments.transfer", payload: { amount_cents: 500, to: "DE02" } };

async function granted() {
  const { gate } = await freshGate();
  const id = await approved(gate, BINDING);
  const grant = await gate.consume(id, BINDING);
  return { gate, id, grant };
}

test("a grant consume issued is accepted once, for its own binding, with the frozen approved payload", async () => {
  const { gate, id, grant } = await granted();
  assert.ok(grant instanceof ag.Grant);
  assert.equal(grant.ok, true);
  assert.equal(grant.id, id);
  const payload = ag.assertConsumed(grant, id, BINDING);
  assert.deepEqual(payload, BINDING.payload);
  assert.ok(Object.isFrozen(payload));
  assert.throws(() => ag.assertConsumed(grant, id, BINDING), ag.GrantRefused);
  assert.equal((await gate.check(id)).effectiveStatus, "consumed");
  await assert.rejects(gate.consume(id, BINDING), ag.AlreadyConsumed);
});

test("the predecessor's forms: consumeApproval(id, action, {operation, payload}) and assertConsumed(grant, id, action, ...)", async () => {
  const { gate } = await freshGate();
  const id = await approved(gate, BINDING);
  const { action, ...rest } = BINDING;
  const grant = await ag.consumeApproval(id, action, { ...rest, gate });
  ag.assertConsumed(grant, id, action, rest);
});

test("a copy, structuredClone, JSON round trip, Proxy or hand-built grant is refused", async () => {
  const { id, grant } = await granted();
  const lookalike = {
    id,
    action: BINDING.action,
    operation: BINDING.operation,
    payloadDigest: grant.payloadDigest,
    expiresAt: grant.expiresAt,
    payload: BINDING.payload,
    assertActive() {},
  };
  let cloned;
  try {
    cloned = structuredClone(grant);
  } catch (error) {
    cloned = error; // refusing to clone is fine too: it is not a grant either way
  }
  const forgeries = {
    spread: { ...grant },
    assign: Object.assign({}, grant),
    structuredClone: cloned,
    json: JSON.parse(JSON.stringify(lookalike)),
    proxy: new Proxy(grant, {}),
    prototype: Object.create(ag.Grant.prototype),
    prototypeWithFields: Object.setPrototypeOf({ ...lookalike }, ag.Grant.prototype),
    handBuilt: lookalike,
  };
  for (const [name, forged] of Object.entries(forgeries)) {
    assert.throws(() => ag.assertConsumed(forged, id, BINDING), ag.GrantRefused, name);
  }
  // Nothing forged spent the real one: it is still accepted, once.
  ag.assertConsumed(grant, id, BINDING);
});

test("a grant cannot be made, serialized or changed", async () => {
  const { grant } = await granted();
  assert.throws(() => new ag.Grant(), ag.GrantRefused);
  assert.throws(() => new ag.Grant(Symbol("approval-gate issue"), {}, "x"), ag.GrantRefused);
  assert.throws(() => JSON.stringify(grant), ag.GrantRefused);
  assert.ok(Object.isFrozen(grant));
  assert.throws(() => {
    grant.id = "000000000000";
  }, TypeError);
});

test("assertConsumed refuses another request, action, operation or payload, and the grant is spent by the try", async () => {
  const cases = [
    ["000000000000", BINDING, ag.GrantRefused],
    [null, { ...BINDING, action: "pay 50 EUR" }, ag.ActionMismatch],
    [null, { ...BINDING, operation: "payments.refund" }, ag.OperationMismatch],
    [null, { ...BINDING, payload: { amount_cents: 5000, to: "DE02" } }, ag.PayloadMismatch],
    [null, { action: BINDING.action, operation: BINDING.operation }, ag.PayloadMismatch],
  ];
  for (const [otherId, binding, Class] of cases) {
    const { id, grant } = await granted();
    assert.throws(() => ag.assertConsumed(grant, otherId ?? id, binding), Class);
    assert.throws(() => ag.assertConsumed(grant, id, BINDING), ag.GrantRefused);
  }
});

test("a consume with the wrong binding is refused and spends nothing", async () => {
  const { gate } = await freshGate();
  const id = await approved(gate, BINDING);
  await assert.rejects(gate.consume(id, { ...BINDING, payload: { amount_cents: 501, to: "DE02" } }), ag.PayloadMismatch);
  assert.equal((await gate.check(id)).effectiveStatus, "approved_unconsumed");
  ag.assertConsumed(await gate.consume(id, BINDING), id, BINDING);
});
