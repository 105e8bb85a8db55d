// The sandbox Worker's per-call cost at its runner, in Node's V8: each call
// runs in the spare instance, then the next spare is made, as the Worker
// does between back-to-back calls (worker.mjs). Prints medians in ms: `run`
// (the call alone) and `b2b` (the call and the making of the next
// instance: what a client sending calls back to back waits per call when
// nothing else overlaps).
//
//   scripts/build-worker sandbox
//   node bench/worker/runner.mjs [N] [RUNNER.mjs SANDBOX.wasm]
//
// RUNNER and SANDBOX default to this checkout's; pass another build's to
// compare two in one run.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const n = Number(process.argv[2] ?? 60);
const runnerPath = process.argv[3] ?? `${root}functions/worker/sandbox/js/runner.mjs`;
const wasmPath = process.argv[4] ?? `${root}functions/worker/build/sandbox.wasm`;
const { Runner } = await import(runnerPath);
const runner = new Runner(new WebAssembly.Module(readFileSync(wasmPath)));
runner.refill();
const median = (v) => v.slice().sort((a, b) => a - b)[v.length >> 1];
const out = {};
for (const code of ["print(1)", "import json\nprint(json.dumps({'a': [1, 2]}))"]) {
  const request = JSON.stringify({ code, timeout_secs: 20, memory_mb: 64 });
  const run = [];
  const b2b = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    runner.run(request);
    const t1 = performance.now();
    runner.refill();
    run.push(t1 - t0);
    b2b.push(performance.now() - t0);
  }
  out[code.split("\n")[0]] = { run: +median(run).toFixed(2), b2b: +median(b2b).toFixed(2) };
}
console.log(JSON.stringify(out));
