// The sandbox Worker's runner hands each new instance the last call's
// memory, wiped (runner.mjs). This checks the wipe from outside, in Node's
// V8 with the built module: after calls that wrote to memory, trapped, or
// grew it, the next instance's memory is byte for byte a fresh instance's.
// Prints one JSON object; tests/tests/worker.rs asserts on it.
import { readFileSync } from "node:fs";

const root = process.argv[2];
const { Runner } = await import(`${root}/functions/worker/sandbox/js/runner.mjs`);
const { MEMORY } = await import(`${root}/functions/worker/build/sandbox-memory.mjs`);
const module = new WebAssembly.Module(readFileSync(`${root}/functions/worker/build/sandbox.wasm`));

// A fresh instance's memory, before any call: the reference.
const pristine = (() => {
  const fresh = new Runner(module);
  fresh.refill();
  return new Uint8Array(fresh.spare.exports.memory.buffer).slice();
})();

function sameAsFresh(memory) {
  const bytes = new Uint8Array(memory.buffer);
  if (bytes.length !== pristine.length) return `length ${bytes.length}, fresh ${pristine.length}`;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] !== pristine[i]) return `differs at byte ${i}`;
  }
  return "same";
}

const runner = new Runner(module);
const call = (code, memory_mb = 64) =>
  JSON.parse(runner.run(JSON.stringify({ version: 2, code, timeout_secs: 20, memory_mb })));
const report = {};
const cases = [
  // Writes a lot, then leaves: its objects, strings and output are in memory.
  ["writes", "s = 'secret-' * 50000\nd = {i: str(i) for i in range(20000)}\nprint(len(s))"],
  // Ends in a trap (past the memory limit, Rust aborts) within the
  // snapshot's free space, so the memory is reused.
  ["traps", "d = {i: i for i in range(300000)}", 4],
  // Grows the memory past the snapshot's free space, and succeeds.
  ["grows", "x = b'a' * (20 * 2**20)\nprint(len(x))"],
  ["after", "print(1)"],
];
for (const [name, code, mb] of cases) {
  const out = call(code, mb);
  const used = runner.used;
  const grown = used.buffer.byteLength !== MEMORY.initial * 65536;
  runner.refill();
  const next = runner.spare.exports.memory;
  report[name] = {
    exit_code: out.exit_code,
    stderr: out.stderr.slice(-200),
    grown,
    reused: next === used,
    next: sameAsFresh(next),
  };
}
console.log(JSON.stringify(report));
