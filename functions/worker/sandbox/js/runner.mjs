// One python.execute call in a fresh instance of the sandbox module.
//
// The instance lives for this call only. Its memory (the warm interpreter
// written in from the pre-initialized module's data, and everything the
// script made) is wiped before the next instance gets it: every byte set to
// zero, then the new instance writes the snapshot in, as it would into a
// fresh memory. So no state and no leak carries over to the next call, and
// the next instance does not pay a page fault per snapshot page (~4,300) of
// a fresh memory. A memory the call grew is dropped instead: the next
// instance's allocator would not know the grown pages, and grow again.
import { MEMORY } from "../../build/sandbox-memory.mjs";

const PAGE = 65536;

class Deadline extends Error {}
// Code mode: the script stopped at a tool request the dispatcher answers.
class Halt extends Error {}

const FAILED = (why) =>
  JSON.stringify({
    stdout: "",
    stderr: `InternalError: the interpreter failed: ${why}\n`,
    exit_code: 1,
    timed_out: false,
  });

// An instance with its imports bound to `memory`.
function instantiate(wasmModule, memory) {
  const imports = {
    env: { memory },
    toolgate: {
      now_ms: () => Date.now(),
      random_fill: (ptr, len) => {
        const buf = new Uint8Array(memory.buffer, ptr, len);
        // getRandomValues fills at most 64 KiB per call.
        for (let i = 0; i < len; i += 65536) {
          crypto.getRandomValues(buf.subarray(i, Math.min(len, i + 65536)));
        }
      },
      deadline: () => {
        throw new Deadline("slept past the timeout");
      },
      halt: () => {
        throw new Halt("stopped at a tool request");
      },
    },
  };
  return new WebAssembly.Instance(wasmModule, imports);
}

// Keeps one instance made ahead of the next call, as the native sandbox
// keeps a child forked ahead: instantiating writes the warm interpreter into
// memory, the largest cost of a call, and is done between calls.
export class Runner {
  constructor(wasmModule) {
    this.module = wasmModule;
    this.spare = null;
    // The last instance's memory, until the next instance is made.
    this.used = null;
  }

  // The memory for a new instance: the last one's, wiped, if the call did
  // not grow it; else a fresh one.
  memory() {
    const used = this.used;
    this.used = null;
    if (used !== null && used.buffer.byteLength === MEMORY.initial * PAGE) {
      new Uint8Array(used.buffer).fill(0);
      return used;
    }
    return new WebAssembly.Memory(MEMORY);
  }

  refill() {
    if (this.spare === null) {
      this.spare = instantiate(this.module, this.memory());
    }
  }

  // The instance for one call: the spare, or a new one. Never kept; its
  // memory goes to the next instance (wiped) once it has answered.
  take() {
    const instance = this.spare ?? instantiate(this.module, this.memory());
    this.spare = null;
    return instance;
  }

  run(requestJson) {
    const instance = this.take();
    try {
      return runIn(instance, requestJson);
    } finally {
      this.used = instance.exports.memory;
    }
  }

  // The walls, checked in an instance taken as a call takes one: a runner
  // that handed out a used instance, or a memory not wiped, would read
  // instance_per_call false.
  walls() {
    const instance = this.take();
    try {
      return readOut(instance.exports.memory, instance.exports.tg_walls());
    } catch (e) {
      return JSON.stringify({ error: String(e && e.message ? e.message : e) });
    } finally {
      this.used = instance.exports.memory;
    }
  }
}

// The module's answer: `ptr << 32 | len` of UTF-8 JSON in its memory.
function readOut(memory, packed) {
  const at = Number(packed >> 32n);
  const len = Number(packed & 0xffffffffn);
  return new TextDecoder().decode(new Uint8Array(memory.buffer, at, len));
}

function runIn(instance, requestJson) {
  const ex = instance.exports;
  const memory = ex.memory;
  const bytes = new TextEncoder().encode(requestJson);
  const ptr = ex.tg_alloc(bytes.length);
  new Uint8Array(memory.buffer, ptr, bytes.length).set(bytes);
  let packed;
  try {
    packed = ex.tg_run(ptr, bytes.length);
  } catch (e) {
    // A trap (memory limit, panic, stack), the sleep deadline or a halt at
    // a tool request: the same instance reports, with the output so far.
    const why = e instanceof Deadline ? 1 : e instanceof Halt ? 2 : 0;
    try {
      packed = ex.tg_abort(why, e instanceof RangeError ? 1 : 0);
    } catch (again) {
      return FAILED(String(e && e.message ? e.message : e));
    }
  }
  return readOut(memory, packed);
}
