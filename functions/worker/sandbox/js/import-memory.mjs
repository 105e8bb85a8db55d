// Build step (scripts/build-worker): makes the Wizer'd sandbox module import
// its memory (`env.memory`) instead of defining it, so that the runner can
// hand a new instance a memory it has wiped rather than a fresh one. A fresh
// memory costs a page fault for each of its ~4,300 snapshot pages on every
// call; a wiped one is already mapped. Everything else is unchanged: the
// active data segments still write the snapshot into the memory when the
// instance is made, and index 0 is still the memory, now the imported one.
//
// Usage: node import-memory.mjs IN.wasm OUT.wasm OUT-limits.mjs
import { readFileSync, writeFileSync } from "node:fs";

const [input, output, limitsOut] = process.argv.slice(2);
if (!limitsOut) {
  console.error("usage: node import-memory.mjs IN.wasm OUT.wasm OUT-limits.mjs");
  process.exit(2);
}
const bytes = readFileSync(input);

function readLeb(buf, at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = buf[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte < 0x80) return [value, at];
  }
}

function leb(value) {
  const out = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out.push(byte);
  } while (value > 0);
  return Buffer.from(out);
}

function name(s) {
  const b = Buffer.from(s, "utf8");
  return Buffer.concat([leb(b.length), b]);
}

// The sections, in order: id and contents.
const sections = [];
for (let at = 8; at < bytes.length; ) {
  const id = bytes[at];
  const [size, start] = readLeb(bytes, at + 1);
  sections.push({ id, body: bytes.subarray(start, start + size) });
  at = start + size;
}

const memory = sections.find((s) => s.id === 5);
const imports = sections.find((s) => s.id === 2);
if (!memory || !imports) {
  throw new Error(`${input}: expected a memory section and an import section`);
}
const [memories, limitsAt] = readLeb(memory.body, 0);
if (memories !== 1) throw new Error(`${input}: ${memories} memories, expected 1`);
// Limits: flags (bit 0: a maximum follows; others: shared, memory64), min, max.
const flags = memory.body[limitsAt];
if (flags & ~1) throw new Error(`${input}: memory flags ${flags} (shared or 64-bit)`);
const [initial, afterMin] = readLeb(memory.body, limitsAt + 1);
const maximum = flags & 1 ? readLeb(memory.body, afterMin)[0] : null;
const limits = memory.body.subarray(limitsAt);

const [count, entriesAt] = readLeb(imports.body, 0);
imports.body = Buffer.concat([
  leb(count + 1),
  imports.body.subarray(entriesAt),
  name("env"),
  name("memory"),
  Buffer.from([0x02]),
  limits,
]);
sections.splice(sections.indexOf(memory), 1);

const parts = [bytes.subarray(0, 8)];
for (const s of sections) parts.push(Buffer.from([s.id]), leb(s.body.length), s.body);
writeFileSync(output, Buffer.concat(parts));
writeFileSync(
  limitsOut,
  "// Written by import-memory.mjs: the limits of the memory sandbox.wasm imports.\n" +
    `export const MEMORY = ${JSON.stringify(maximum === null ? { initial } : { initial, maximum })};\n`,
);
