// The PostgreSQL store from Node: the same executeApproved over a `postgres://` URL.
//
// Runs against the server APPROVAL_GATE_TEST_PG names (a superuser URL; .ci/run starts a
// throwaway cluster and exports it), in a database of its own made with psql. Without it the
// test skips, except in CI, where a missing server is a failure.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { spawnSync } from "node:child_process";
import { test } from "node:test";

import { ag, events } from "./support.mjs";

function database(t) {
  const admin = process.env.APPROVAL_GATE_TEST_PG;
  if (!admin) {
    if (process.env.CI) assert.fail("the PostgreSQL tests never skip in CI: .ci/run sets APPROVAL_GATE_TEST_PG");
    t.skip("APPROVAL_GATE_TEST_PG is not set");
    return null;
  }
  const name = `ag_node_${randomBytes(6).toString("hex")}`;
  const made = spawnSync("psql", [admin, "-v", "ON_ERROR_STOP=1", "-qc", `CREATE DATABASE ${name}`], { encoding: "utf8" });
  assert.equal(made.status, 0, made.stderr);
  t.after(() => spawnSync("psql", [admin, "-qc", `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]));
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}

test("a request is approved, executed once and audited in PostgreSQL", { timeout: 120_000 }, async (t) => {
  const url = database(t);
  if (url === null) return;
  assert.ok((await ag.postgresInit(url)) >= 1);
  const gate = await ag.Gate.open({ store: url });
  assert.match(gate.location, /^postgres/);
  const email = { to: "alice@example.com", subject: "Invoice 1042" };
  const binding = { action: "send invoice 1042", operation: "smtp.send", payload: email };
  const { id, report } = await gate.requestApproval({ ...binding, reason: "due" });
  assert.equal(report.payloadDigest, ag.canonicalize(email).digest);
  await assert.rejects(gate.executeApproved(id, binding, () => assert.fail("ran")), ag.NotApproved);
  await gate.approve(id, { by: "alice" });
  await assert.rejects(
    gate.executeApproved(id, { ...binding, payload: { ...email, to: "mallory@example.com" } }, () => assert.fail("ran")),
    ag.PayloadMismatch,
  );
  const sent = [];
  assert.equal(await gate.executeApproved(id, binding, (ctx) => (sent.push(ctx.payload), ctx.payload.to)), "alice@example.com");
  await assert.rejects(gate.executeApproved(id, binding, () => assert.fail("ran")), ag.AlreadyConsumed);
  assert.deepEqual(sent, [email]);
  assert.ok((await events(gate, id)).includes("execution_finished:ok"));
  assert.equal((await gate.check(id)).effectiveStatus, "consumed");
  assert.ok((await gate.verifyAudit()) >= 1);
});
