// requiresApproval: the function runs only inside an approved, single-use execution.

import assert from "node:assert/strict";
import { test } from "node:test";

import { ag, approved, events, freshGate } from "./support.mjs";

test("a guarded function runs once with the approved payload, bound to its operation", async () => {
  const { gate } = await freshGate();
  const calls = [];
  const send = ag.requiresApproval({ operation: "smtp.send" }, async (payload, ctx) => {
    ctx.assertActive();
    calls.push(payload);
    return payload.to;
  });
  const id = await approved(gate, { action: "mail", operation: "smtp.send", payload: { to: "alice" } });
  assert.equal(await send({ to: "alice" }, { id, action: "mail", gate }), "alice");
  await assert.rejects(send({ to: "alice" }, { id, action: "mail", gate }), ag.AlreadyConsumed);
  assert.equal(calls.length, 1);
  assert.ok(Object.isFrozen(calls[0]));
  assert.deepEqual((await events(gate, id)).slice(-2), ["execution_finished:ok", "consume_replayed"]);
});

test("a guarded function refuses another operation's approval, another payload, and no claim", async () => {
  const { gate } = await freshGate();
  const send = ag.requiresApproval({ operation: "smtp.send" }, () => assert.fail("ran"));
  const other = await approved(gate, { action: "pay", operation: "payments.transfer", payload: { to: "alice" } });
  await assert.rejects(send({ to: "alice" }, { id: other, action: "pay", gate }), ag.OperationMismatch);
  const mail = await approved(gate, { action: "mail", operation: "smtp.send", payload: { to: "alice" } });
  await assert.rejects(send({ to: "mallory" }, { id: mail, action: "mail", gate }), ag.PayloadMismatch);
  await assert.rejects(send({ to: "alice" }), ag.InvalidInput);
  assert.equal((await gate.check(mail)).effectiveStatus, "approved_unconsumed");
});

test("an invalid operation name is refused when wrapping", () => {
  assert.throws(() => ag.requiresApproval({ operation: "Not An Op" }, () => {}), ag.InvalidInput);
});
