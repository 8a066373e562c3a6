// executeApproved: consume bound to the binding, the durable start, the body, the outcome.

import assert from "node:assert/strict";
import { test } from "node:test";

import { ag, approved, events, freshGate } from "./support.mjs";

const PAYLOAD = { to: "alice@example.com", amount_cents: 125000, memo: "Rechnung €1042 ✓", lines: [{ n: 1 }] };
const BINDING = { action: "send the invoice", operation: "smtp.send", payload: PAYLOAD };

test("the body runs once with the approved payload, and the outcome is recorded ok", async () => {
  const { gate } = await freshGate();
  const id = await approved(gate, BINDING);
  // The keys in another order: the same canonical payload.
  const presented = { lines: [{ n: 1 }], memo: PAYLOAD.memo, amount_cents: 125000, to: PAYLOAD.to };
  const seen = [];
  const result = await gate.executeApproved(id, { ...BINDING, payload: presented }, async (ctx) => {
    ctx.assertActive();
    seen.push(ctx.payload);
    assert.equal(ctx.id, id);
    assert.equal(ctx.operation, "smtp.send");
    assert.match(ctx.payloadDigest, /^[0-9a-f]{64}$/);
    return "sent";
  });
  assert.equal(result, "sent");
  assert.deepEqual(seen, [PAYLOAD]);
  assert.deepEqual(await events(gate, id), ["requested", "approved", "consumed", "execution_started", "execution_finished:ok"]);
  assert.equal((await gate.check(id)).effectiveStatus, "consumed");
});

test("a second executeApproved of the same approval refuses and never runs the body", async () => {
  const { gate } = await freshGate();
  const id = await approved(gate, BINDING);
  let runs = 0;
  const body = async () => {
    runs += 1;
  };
  await gate.executeApproved(id, BINDING, body);
  await assert.rejects(gate.executeApproved(id, BINDING, body), (e) => e instanceof ag.AlreadyConsumed && e.requestId === id);
  // Also concurrently: of many racing executions of one approval, exactly one runs.
  const id2 = await approved(gate, { ...BINDING, action: "race" });
  const results = await Promise.allSettled(
    Array.from({ length: 8 }, () => gate.executeApproved(id2, { ...BINDING, action: "race" }, body)),
  );
  assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
  assert.ok(results.filter((r) => r.status === "rejected").every((r) => r.reason instanceof ag.AlreadyConsumed));
  assert.equal(runs, 2);
});

test("a binding that differs in action, operation or payload is refused, runs nothing, spends nothing", async () => {
  const { gate } = await freshGate();
  const id = await approved(gate, BINDING);
  let runs = 0;
  const body = () => {
    runs += 1;
  };
  const cases = [
    [{ ...BINDING, action: "send the invoice " }, ag.ActionMismatch],
    [{ ...BINDING, operation: "smtp.sendmail" }, ag.OperationMismatch],
    [{ ...BINDING, payload: { ...PAYLOAD, amount_cents: 125001 } }, ag.PayloadMismatch],
    [{ ...BINDING, payload: undefined }, ag.PayloadMismatch],
  ];
  for (const [binding, Class] of cases) {
    await assert.rejects(gate.executeApproved(id, binding, body), Class);
  }
  assert.equal(runs, 0);
  assert.equal((await gate.check(id)).effectiveStatus, "approved_unconsumed");
  await gate.executeApproved(id, BINDING, body);
  assert.equal(runs, 1);
});

test("ctx.payload is deep-frozen, and a copy: changing what was presented changes nothing", async () => {
  const { gate } = await freshGate();
  const id = await approved(gate, BINDING);
  const presented = structuredClone(PAYLOAD);
  await gate.executeApproved(id, { ...BINDING, payload: presented }, (ctx) => {
    assert.ok(Object.isFrozen(ctx.payload));
    assert.ok(Object.isFrozen(ctx.payload.lines));
    assert.ok(Object.isFrozen(ctx.payload.lines[0]));
    assert.throws(() => {
      ctx.payload.to = "mallory@example.com";
    }, TypeError);
    assert.throws(() => {
      ctx.payload.lines[0].n = 2;
    }, TypeError);
    assert.throws(() => {
      ctx.payload.lines.push({});
    }, TypeError);
    presented.to = "mallory@example.com";
    assert.equal(ctx.payload.to, "alice@example.com");
    assert.notEqual(ctx.payload, presented);
  });
});

test("a body that throws is recorded as an error outcome and its error thrown again; the approval is spent", async () => {
  const { gate } = await freshGate();
  const id = await approved(gate, BINDING);
  const failure = new RangeError("smtp said no");
  await assert.rejects(
    gate.executeApproved(id, BINDING, async () => {
      throw failure;
    }),
    (e) => e === failure,
  );
  assert.deepEqual((await events(gate, id)).slice(-1), ["execution_finished:error"]);
  const finished = (await gate.auditRecords()).filter((r) => r.event === "execution_finished").at(-1);
  assert.match(JSON.stringify(finished), /RangeError: smtp said no/);
  await assert.rejects(gate.executeApproved(id, BINDING, () => {}), ag.AlreadyConsumed);
});

test("the context authorizes nothing once its body returned", async () => {
  const { gate } = await freshGate();
  const id = await approved(gate, BINDING);
  let kept;
  await gate.executeApproved(id, BINDING, (ctx) => {
    kept = ctx;
  });
  assert.equal(kept.live, false);
  assert.throws(() => kept.assertActive(), ag.GrantRefused);
});

test("an expired approval is refused before the body; refusals of state each have their class", async () => {
  const { gate } = await freshGate();
  const { id: pending } = await gate.requestApproval({ action: "a", reason: "r" });
  await assert.rejects(gate.executeApproved(pending, { action: "a" }, () => assert.fail("ran")), ag.NotApproved);
  await gate.deny(pending, { by: "bob" });
  await assert.rejects(gate.executeApproved(pending, { action: "a" }, () => assert.fail("ran")), ag.Denied);
  const revoked = await approved(gate, { action: "b" });
  await gate.revoke(revoked, { by: "alice" });
  await assert.rejects(gate.executeApproved(revoked, { action: "b" }, () => assert.fail("ran")), ag.Revoked);
  await assert.rejects(gate.executeApproved("nope", { action: "b" }, () => assert.fail("ran")), ag.InvalidId);
  await assert.rejects(gate.executeApproved("0123456789ab", { action: "b" }, () => assert.fail("ran")), ag.NotFound);
});

test("payloads JSON cannot carry exactly are refused before anything is consumed", async () => {
  const { gate } = await freshGate();
  const id = await approved(gate, BINDING);
  for (const bad of [
    { ...PAYLOAD, extra: undefined },
    { ...PAYLOAD, n: Number.NaN },
    { ...PAYLOAD, n: 2 ** 53 },
    { ...PAYLOAD, d: new Date(0) },
    { ...PAYLOAD, f: () => 1 },
    { ...PAYLOAD, b: 1n },
    [1, , 3],
  ]) {
    await assert.rejects(gate.executeApproved(id, { ...BINDING, payload: bad }, () => assert.fail("ran")), ag.InvalidPayload);
  }
  assert.equal((await gate.check(id)).effectiveStatus, "approved_unconsumed");
});

test("the module-level executeApproved opens the store the settings name, as the CLI resolves them", async () => {
  const { dir, gate } = await freshGate();
  const id = await approved(gate, { action: "default" });
  const before = process.env.APPROVAL_GATE_DIR;
  process.env.APPROVAL_GATE_DIR = dir;
  try {
    assert.equal((await ag.defaultGate()).location, dir);
    // A flag beats the environment.
    const other = `${dir}-flag`;
    assert.equal((await ag.Gate.open({ dir: other })).location, other);
    let ran = false;
    await ag.executeApproved(id, { action: "default" }, () => {
      ran = true;
    });
    assert.ok(ran);
  } finally {
    if (before === undefined) delete process.env.APPROVAL_GATE_DIR;
    else process.env.APPROVAL_GATE_DIR = before;
  }
});

test("a body awaits on the event loop while other executions go through the store", { timeout: 60_000 }, async () => {
  // A waits, inside its body, for B's body to run: had the gate's work or A's body held the
  // event loop (or the store) while A ran, B could never start and this would never end.
  const { gate } = await freshGate();
  const a = await approved(gate, { action: "a" });
  const b = await approved(gate, { action: "b" });
  let release;
  const bRan = new Promise((resolve) => {
    release = resolve;
  });
  const order = [];
  const first = gate.executeApproved(a, { action: "a" }, async () => {
    order.push("a starts");
    await bRan;
    order.push("a ends");
  });
  const second = gate.executeApproved(b, { action: "b" }, () => {
    order.push("b runs");
    release();
  });
  await Promise.all([first, second]);
  assert.deepEqual(order.slice(-1), ["a ends"]);
  assert.ok(order.indexOf("b runs") < order.indexOf("a ends"));
  assert.deepEqual((await events(gate, a)).slice(-1), ["execution_finished:ok"]);
});
