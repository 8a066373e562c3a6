#!/usr/bin/env node
// `approval-gate-mcp`: the agent's MCP server over stdio, the prebuilt binary of this
// platform's package. `npx -y @approval-gate/approval-gate-mcp` runs this one: npx picks the
// bin named like the package.
import { run } from "./run.js";

run("approval-gate-mcp");
