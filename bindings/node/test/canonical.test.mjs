// RFC 8785 bytes and BLAKE3 digests: the same from Node, from Rust and from Python, over
// generated JSON values (a seeded generator: APPROVAL_GATE_PROPERTY_SEED to replay one).
//
// Node: the module's `canonicalize`, and an independent reference: RFC 8785 is ECMAScript's own
// number and string serialization with keys sorted by UTF-16 code units, so JavaScript can
// write it itself. Rust: the MCP server binary (`APPROVAL_GATE_CARGO_PROFILE`, else target/debug)
// files each value as a payload from its own JSON-RPC parse and answers its digest. Python: the
// binding's `approval_gate.canonicalize`, run by `APPROVAL_GATE_PYTHON` (CI's venv). Without a
// binary or that interpreter the leg is skipped, except in CI, where it fails.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

import { ag, freshDir } from "./support.mjs";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PROFILE = resolve(process.env.APPROVAL_GATE_CARGO_PROFILE ?? join(ROOT, "target", "debug"));
const SEED = Number(process.env.APPROVAL_GATE_PROPERTY_SEED ?? 20261206);
const COUNT = 150;

/** mulberry32: a small seeded generator, so a failure replays. */
function generator(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  const pick = (items) => items[int(items.length)];
  const buffer = new DataView(new ArrayBuffer(8));
  const NUMBERS = [0, -0, 1, -1, 0.1, 1e-7, 1e-6, 1e20, 1e21 / 10, 5e-324, 2 ** 53 - 1, -(2 ** 53 - 1), 1.7976931348623157e308, 123.456, 4.35, 0.000001234];
  const number = () => {
    switch (int(4)) {
      case 0:
        return pick(NUMBERS);
      case 1:
        return int(2 ** 31) - 2 ** 30;
      case 2: {
        // Any finite double: random bits.
        for (;;) {
          buffer.setUint32(0, int(2 ** 32));
          buffer.setUint32(4, int(2 ** 32));
          const value = buffer.getFloat64(0);
          if (Number.isFinite(value) && (!Number.isInteger(value) || Number.isSafeInteger(value))) return value;
        }
      }
      default:
        return (next() - 0.5) * 10 ** (int(40) - 20);
    }
  };
  const CHARS = ["a", "Z", "é", "€", "\u00ff", "\u2028", "\u{1F600}", "\u{10FFFF}", '"', "\\", "/", "\n", "\t", "\u0001", "\u001f", "\u007f", "ß", "ǅ", "\ufeff"];
  const string = () => Array.from({ length: int(6) }, () => pick(CHARS)).join("");
  const value = (depth) => {
    const kind = depth > 3 ? int(4) : int(6);
    switch (kind) {
      case 0:
        return pick([null, true, false]);
      case 1:
        return number();
      case 2:
      case 3:
        return string();
      case 4:
        return Array.from({ length: int(4) }, () => value(depth + 1));
      default:
        return object(depth + 1);
    }
  };
  const object = (depth) => {
    const made = {};
    for (let i = int(5); i > 0; i -= 1) made[string()] = value(depth);
    return made;
  };
  return () => object(0);
}

/** RFC 8785 written in JavaScript: ES serialization of numbers and strings, keys by UTF-16 order. */
function jcs(value) {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(jcs).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${jcs(value[k])}`).join(",")}}`;
}

const values = (() => {
  const make = generator(SEED);
  return Array.from({ length: COUNT }, make);
})();

/** Node's answer for each value: `{ text, digest }` or `{ error: code }`. */
const node = values.map((value) => {
  try {
    return ag.canonicalize(value);
  } catch (error) {
    assert.ok(error instanceof ag.ApprovalGateError, String(error));
    return { error: error.code };
  }
});

function missing(what) {
  if (process.env.CI) assert.fail(`${what}; the cross-language property cannot run`);
  return `${what} (outside CI: skipped)`;
}

test(`the module's canonical text is RFC 8785 as JavaScript writes it (seed ${SEED})`, () => {
  const accepted = node.filter((answer) => !answer.error).length;
  assert.ok(accepted > COUNT * 0.9, `only ${accepted} of ${COUNT} accepted: ${JSON.stringify(node.filter((a) => a.error))}`);
  values.forEach((value, i) => {
    if (node[i].error) return;
    assert.equal(node[i].text, jcs(value), `value ${i}`);
    assert.match(node[i].digest, /^[0-9a-f]{64}$/);
    // And the text is a fixed point.
    assert.deepEqual(ag.canonicalize(JSON.parse(node[i].text)), node[i]);
  });
});

test(`Rust's MCP server answers the same digest for every payload (seed ${SEED})`, { timeout: 300_000 }, async (t) => {
  const binary = join(PROFILE, "approval-gate-mcp");
  if (!existsSync(binary)) return t.skip(missing(`no ${binary}`));
  const env = { ...process.env, APPROVAL_GATE_DIR: join(freshDir(), "store"), APPROVAL_GATE_MAX_PENDING: "10000", APPROVAL_GATE_MAX_REQUESTS: "10000" };
  const client = new Client({ name: "property", version: "1" });
  await client.connect(new StdioClientTransport({ command: binary, env, stderr: "ignore" }));
  try {
    for (let i = 0; i < values.length; i += 1) {
      const answer = await client.callTool({
        name: "request_approval",
        arguments: { action: `value ${i}`, reason: "property", operation: "prop.value", payload: values[i] },
      });
      const body = answer.structuredContent;
      if (node[i].error) {
        assert.equal(answer.isError, true, `value ${i}: Node refused it (${node[i].error}), Rust filed it`);
        assert.equal(body.code, node[i].error, `value ${i}`);
      } else {
        assert.notEqual(answer.isError, true, `value ${i}: ${JSON.stringify(body)}`);
        assert.equal(body.payloadDigest, node[i].digest, `value ${i}: ${node[i].text}`);
      }
    }
  } finally {
    await client.close();
  }
});

test(`Python's binding answers the same text and digest for every value (seed ${SEED})`, { timeout: 120_000 }, (t) => {
  const python = process.env.APPROVAL_GATE_PYTHON;
  if (!python) return t.skip(missing("APPROVAL_GATE_PYTHON is not set"));
  const script = [
    "import json, sys",
    "import approval_gate as ag",
    "for line in sys.stdin:",
    "    try:",
    "        text, digest = ag.canonicalize(json.loads(line))",
    "        print(json.dumps({'text': text, 'digest': digest}))",
    "    except ag.ApprovalGateError as e:",
    "        print(json.dumps({'error': e.code}))",
  ].join("\n");
  const run = spawnSync(python, ["-c", script], { input: values.map((v) => `${JSON.stringify(v)}\n`).join(""), encoding: "utf8" });
  assert.equal(run.status, 0, run.stderr);
  const answers = run.stdout.trim().split("\n").map((line) => JSON.parse(line));
  assert.equal(answers.length, values.length);
  answers.forEach((answer, i) => assert.deepEqual(answer, node[i], `value ${i}: ${JSON.stringify(values[i])}`));
});
