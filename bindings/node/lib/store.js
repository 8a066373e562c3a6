// The predecessor's import path (`approval-gate-mcp/dist/store.js`): the same API as the
// package's main entry, so `import { executeApproved } from ".../dist/store.js"` keeps working.
export * from "./index.js";
