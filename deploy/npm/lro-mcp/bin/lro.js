#!/usr/bin/env node
// The `lro` launcher: runs the native binary of this platform's package
// (lro-mcp-<os>-<cpu>, an optional dependency npm installs only where its
// `os` and `cpu` match), with this process's arguments and stdio, and exits
// as it exits. Nothing is downloaded at install time.
"use strict";

const { spawn } = require("node:child_process");

const PACKAGES = {
  "linux-x64": "lro-mcp-linux-x64",
  "linux-arm64": "lro-mcp-linux-arm64",
  "darwin-x64": "lro-mcp-darwin-x64",
  "darwin-arm64": "lro-mcp-darwin-arm64",
};

function fail(message) {
  process.stderr.write(`lro-mcp: ${message}\n`);
  process.exit(1);
}

const platform = `${process.platform}-${process.arch}`;
const pkg = PACKAGES[platform];
if (!pkg) {
  fail(`no lro binary for ${platform}; there are: ${Object.keys(PACKAGES).join(", ")}`);
}
let binary;
try {
  binary = require.resolve(`${pkg}/bin/lro`);
} catch {
  fail(`${pkg}, the package holding the lro binary, is not installed: install lro-mcp without --omit=optional or --no-optional`);
}

// stdio is inherited: an MCP client speaks to `lro proxy` on these pipes.
const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (err) => fail(`cannot run ${binary}: ${err.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so the caller sees how lro ended.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
