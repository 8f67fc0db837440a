#!/usr/bin/env node
// The dsh-acp command of the npm package dsh-acp: it runs the dsh-acp binary
// of this platform, which npm installed with it as one of its optional
// dependencies (dsh-acp-<os>-<cpu>, chosen by their "os" and "cpu" fields).
// Nothing is downloaded, at install or here.
"use strict";

const { spawn } = require("child_process");
const os = require("os");
const path = require("path");

const packages = {
  "linux x64": "dsh-acp-linux-x64",
  "linux arm64": "dsh-acp-linux-arm64",
  "darwin x64": "dsh-acp-darwin-x64",
  "darwin arm64": "dsh-acp-darwin-arm64",
};

function fail(message) {
  process.stderr.write("dsh-acp: " + message + "\n");
  process.exit(1);
}

if (process.platform === "win32") {
  fail(
    "dsh-acp runs on Linux and macOS only: it runs the agent's commands with bash. " +
      "On Windows, use it inside WSL (Windows Subsystem for Linux): install Node.js in your WSL " +
      "distribution and run `npx dsh-acp` there.",
  );
}

const name = packages[process.platform + " " + process.arch];
if (!name) {
  fail(
    `there is no dsh-acp binary for ${process.platform}/${process.arch}; ` +
      "there are binaries for Linux and macOS on x64 and arm64.",
  );
}

let binary;
try {
  binary = path.join(path.dirname(require.resolve(name + "/package.json")), "bin", "dsh-acp");
} catch {
  fail(
    `the package ${name}, which holds the binary for this machine, is not installed ` +
      "(optional dependencies left out: --omit=optional or --no-optional?). " +
      "Install dsh-acp again with its optional dependencies.",
  );
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });

// What this process is asked to end with, the agent is asked too: an
// editor that stops the agent signals the process it started, this one.
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
const forward = (signal) => {
  if (child.pid !== undefined && child.exitCode === null) {
    child.kill(signal);
  }
};
for (const signal of forwarded) {
  process.on(signal, forward);
}

child.on("error", (err) => fail(`cannot run ${binary}: ${err.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // End the same way, so the caller sees the signal, not an exit code.
    for (const s of forwarded) {
      process.removeListener(s, forward);
    }
    // A signal Node ignores (SIGPIPE) ends nothing: exit as a shell reports it.
    process.exitCode = 128 + (os.constants.signals[signal] || 0);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code === null ? 1 : code);
});
