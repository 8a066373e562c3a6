#!/usr/bin/env node
// What the Node path costs next to the Rust one: `executeApproved` end to end.
//
// The same measurement as the library's `cargo bench -p approval-gate --bench gate --
// execute_approved_payload`: a request with operation `bench.email` and the payload
// `{to, subject}` filed and approved just before (untimed), then one timed execution (the
// binding's payload to JSON text, consume, `execution_started`, the body on the event loop,
// `execution_finished`) on a directory store. The body calls `ctx.assertActive()` and reads
// `ctx.payload.to`, as the Rust bench's closure does.
//
//     APPROVAL_GATE_NODE_ADDON=target/node/approval-gate.node node bench/execute.mjs [SAMPLES]
//
// Default 50 samples, after 20 untimed executions (V8 compiles the JavaScript path on its first
// runs; the Rust side is compiled ahead). Stores under APPROVAL_GATE_BENCH_DIR (default: the
// system temp dir). Prints median, fastest and slowest in milliseconds. A plain script.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

import { Gate } from "../lib/index.js";

const samples = Number(process.argv[2] ?? 50);
const root = mkdtempSync(join(process.env.APPROVAL_GATE_BENCH_DIR ?? tmpdir(), "ag-node-bench-"));
const gate = await Gate.open({ dir: join(root, "gate") });

const WARM_UP = 20;
const times = [];
for (let n = 1 - WARM_UP; n <= samples; n += 1) {
  const action = `bench ${n}`;
  const payload = { to: "alice@example.com", subject: `n${n}` };
  const { id } = await gate.requestApproval({ action, reason: "bench", operation: "bench.email", payload });
  await gate.approve(id, { by: "bench" });
  const start = performance.now();
  await gate.executeApproved(id, { action, operation: "bench.email", payload: { to: "alice@example.com", subject: `n${n}` } }, (ctx) => {
    ctx.assertActive();
    return ctx.payload.to;
  });
  if (n > 0) times.push(performance.now() - start);
}
times.sort((a, b) => a - b);
const median = times.length % 2 ? times[(times.length - 1) / 2] : (times[times.length / 2 - 1] + times[times.length / 2]) / 2;
const ms = (value) => `${value.toFixed(2)} ms`;
console.log(`node executeApproved, payload: median ${ms(median)}, fastest ${ms(times[0])}, slowest ${ms(times.at(-1))} (${samples} samples)`);
