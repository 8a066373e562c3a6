// The README's example, compiled by the test suite with `tsc --strict` against lib/index.d.ts
// (through the package names a user imports: tsconfig.json maps them).

import { executeApproved } from "@approval-gate/approval-gate-mcp/dist/store.js";
import { AlreadyConsumed, Gate, assertConsumed, consumeApproval, requiresApproval } from "@approval-gate/approval-gate-mcp";

interface Email {
  to: string;
  subject: string;
  body: string;
}

declare const smtp: { send(email: { readonly to: string; readonly subject: string; readonly body: string }): Promise<void> };
declare const id: string;
declare const email: Email;

export async function send(): Promise<void> {
  await executeApproved(id, { action: `send email to ${email.to}`, operation: "smtp.send", payload: email }, async (ctx) => {
    ctx.assertActive(); // re-check expiry immediately before the side effect
    await smtp.send(ctx.payload); // a deep-frozen copy of what the human approved
  });
}

export async function predecessorStyle(action: string): Promise<string> {
  const grant = await consumeApproval<Email>(id, action, { operation: "smtp.send", payload: email });
  const approved = assertConsumed(grant, id, action, { operation: "smtp.send", payload: email });
  await smtp.send(approved);
  return approved.subject;
}

export const guarded = requiresApproval({ operation: "smtp.send" }, async (payload: { readonly to: string }, ctx) => {
  ctx.assertActive();
  return payload.to.length;
});

export async function withGate(): Promise<number | undefined> {
  const gate = await Gate.open({ dir: "/tmp/approvals" });
  try {
    return await guarded({ to: "alice@example.com" }, { id, action: "mail alice", gate });
  } catch (error) {
    if (error instanceof AlreadyConsumed) {
      return error.requestId === null ? undefined : 0;
    }
    throw error;
  }
}
