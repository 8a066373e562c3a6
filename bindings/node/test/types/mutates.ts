// Must NOT compile: the approved payload is deep-readonly.
import { executeApproved } from "@approval-gate/approval-gate-mcp";

declare const id: string;

export async function tamper(): Promise<void> {
  await executeApproved(id, { action: "a", payload: { to: "alice", lines: [{ n: 1 }] } }, (ctx) => {
    ctx.payload.to = "mallory";
  });
}
