// Evaluates JSONata expressions with the reference implementation (npm jsonata, pinned in
// package.json) for tests/conformance/jsonata_node: one JSON request per stdin line,
// {"expr": "...", "bindings": {...}}, one JSON answer per stdout line, in order:
// {"value": <JSON>} | {"undefined": true} | {"error": "<code>: <message>"}.
"use strict";
const path = require("path");
const readline = require("readline");
const jsonata = require(path.join(process.argv[2] || process.cwd(), "node_modules", "jsonata"));

async function answer(request) {
  let compiled;
  try {
    compiled = jsonata(request.expr);
  } catch (err) {
    return { error: `${err.code || "parse"}: ${err.message}` };
  }
  try {
    const value = await compiled.evaluate(null, request.bindings || {});
    if (value === undefined) return { undefined: true };
    if (typeof value === "function") return { error: "function: returned a function" };
    // JSON.stringify turns a sequence into an array and drops undefined members, as
    // Step Functions' JSON output does; non-finite numbers have no JSON form
    const text = JSON.stringify(value, (key, v) => {
      if (typeof v === "number" && !Number.isFinite(v)) throw new Error("non-finite number");
      return v;
    });
    return text === undefined ? { undefined: true } : { value: JSON.parse(text) };
  } catch (err) {
    return { error: `${err.code || "eval"}: ${err.message}` };
  }
}

const lines = readline.createInterface({ input: process.stdin });
let busy = Promise.resolve();
lines.on("line", (line) => {
  busy = busy.then(async () => {
    let reply;
    try {
      reply = await answer(JSON.parse(line));
    } catch (err) {
      reply = { error: `request: ${err.message}` };
    }
    process.stdout.write(JSON.stringify(reply) + "\n");
  });
});
