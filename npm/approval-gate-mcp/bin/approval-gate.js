#!/usr/bin/env node
// `approval-gate`: the human's CLI, the prebuilt binary of this platform's package.
import { run } from "./run.js";

run("approval-gate");
