#!/usr/bin/env node
// Builds the npm packages of a release from the binaries GoReleaser built:
// dsh-acp (the launcher, npm/dsh-acp.js) and one package per platform holding
// that platform's binary, each packed with `npm pack` into DIST/npm.
//
//   node npm/build.js VERSION DIST
//
// Run by scripts/release after GoReleaser; it reads DIST/artifacts.json.
"use strict";

const { execFileSync } = require("child_process");
const fs = require("fs");
const path = require("path");

const [version, dist] = process.argv.slice(2);
if (!version || !dist) {
  process.stderr.write("usage: node npm/build.js VERSION DIST\n");
  process.exit(2);
}

const root = path.resolve(__dirname, "..");
const repository = { type: "git", url: "git+https://github.com/dsh-acp/dsh-acp.git" };
const homepage = "https://github.com/dsh-acp/dsh-acp#readme";
// GoReleaser's GOOS/GOARCH, and npm's names for them (process.platform,
// process.arch): the launcher picks a package by the latter.
const platforms = [
  { goos: "linux", goarch: "amd64", os: "linux", cpu: "x64", label: "Linux x64" },
  { goos: "linux", goarch: "arm64", os: "linux", cpu: "arm64", label: "Linux arm64" },
  { goos: "darwin", goarch: "amd64", os: "darwin", cpu: "x64", label: "macOS x64" },
  { goos: "darwin", goarch: "arm64", os: "darwin", cpu: "arm64", label: "macOS arm64" },
];

const artifacts = JSON.parse(fs.readFileSync(path.join(dist, "artifacts.json"), "utf8"));
const out = path.join(dist, "npm");
fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(out, { recursive: true });

function writePackage(dir, manifest, files) {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify(manifest, null, 2) + "\n");
  for (const [name, from, mode] of files) {
    const to = path.join(dir, name);
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.copyFileSync(from, to);
    fs.chmodSync(to, mode);
  }
  // --ignore-scripts: the packages have none, and a release runs nothing
  // it did not write.
  execFileSync("npm", ["pack", "--ignore-scripts", "--loglevel=warn", "--pack-destination", path.resolve(out)], {
    cwd: dir,
    stdio: ["ignore", "ignore", "inherit"],
  });
}

const optional = {};
for (const p of platforms) {
  const name = `dsh-acp-${p.os}-${p.cpu}`;
  const binary = artifacts.find(
    (a) => a.type === "Binary" && a.goos === p.goos && a.goarch === p.goarch,
  );
  if (!binary) {
    throw new Error(`no ${p.goos}/${p.goarch} binary in ${dist}/artifacts.json`);
  }
  writePackage(
    path.join(out, name),
    {
      name,
      version,
      description: `The dsh-acp binary for ${p.label}, run by the dsh-acp package.`,
      license: "MIT",
      repository,
      homepage,
      os: [p.os],
      cpu: [p.cpu],
      files: ["bin/dsh-acp"],
      preferUnplugged: true,
    },
    [
      ["bin/dsh-acp", path.resolve(root, binary.path), 0o755],
      ["LICENSE", path.join(root, "LICENSE"), 0o644],
    ],
  );
  optional[name] = version;
}

writePackage(
  path.join(out, "dsh-acp"),
  {
    name: "dsh-acp",
    version,
    description:
      "A coding agent for Zed and other Agent Client Protocol editors: many sessions in one process, bash tools, a sandbox.",
    license: "MIT",
    repository,
    homepage,
    keywords: ["acp", "agent-client-protocol", "zed", "coding-agent", "deepseek"],
    bin: { "dsh-acp": "bin/dsh-acp.js" },
    files: ["bin/dsh-acp.js", "CHANGELOG.md"],
    engines: { node: ">=16" },
    optionalDependencies: optional,
  },
  [
    ["bin/dsh-acp.js", path.join(root, "npm", "dsh-acp.js"), 0o755],
    ["README.md", path.join(root, "README.md"), 0o644],
    ["LICENSE", path.join(root, "LICENSE"), 0o644],
    ["CHANGELOG.md", path.join(root, "CHANGELOG.md"), 0o644],
  ],
);
