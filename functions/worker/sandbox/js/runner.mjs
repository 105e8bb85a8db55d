// One python.execute call in a fresh instance of the sandbox module.
//
// The instance lives for this call only: its memory (the warm interpreter
// copied from the pre-initialized module, and everything the script made)
// is dropped with it, so no state and no leak carries over to the next call.

class Deadline extends Error {}

const FAILED = (why) =>
  JSON.stringify({
    stdout: "",
    stderr: `InternalError: the interpreter failed: ${why}\n`,
    exit_code: 1,
    timed_out: false,
  });

// An instance with its imports bound to its own memory.
function instantiate(wasmModule) {
  let memory;
  const imports = {
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
    },
  };
  const instance = new WebAssembly.Instance(wasmModule, imports);
  memory = instance.exports.memory;
  return instance;
}

// Keeps one instance made ahead of the next call, as the native sandbox
// keeps a child forked ahead: instantiating copies the warm interpreter's
// memory, the largest cost of a call, and is done between calls.
export class Runner {
  constructor(wasmModule) {
    this.module = wasmModule;
    this.spare = null;
  }

  refill() {
    if (this.spare === null) {
      this.spare = instantiate(this.module);
    }
  }

  // The instance for one call: the spare, or a new one. Never kept.
  take() {
    const instance = this.spare ?? instantiate(this.module);
    this.spare = null;
    return instance;
  }

  run(requestJson) {
    return runIn(this.take(), requestJson);
  }

  // The walls, checked in an instance taken as a call takes one: a runner
  // that handed out a used instance would read instance_per_call false.
  walls() {
    const instance = this.take();
    try {
      return readOut(instance.exports.memory, instance.exports.tg_walls());
    } catch (e) {
      return JSON.stringify({ error: String(e && e.message ? e.message : e) });
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
    // A trap (memory limit, panic, stack) or the sleep deadline: the same
    // instance reports, with the output captured so far.
    try {
      packed = ex.tg_abort(e instanceof Deadline ? 1 : 0, e instanceof RangeError ? 1 : 0);
    } catch (again) {
      return FAILED(String(e && e.message ? e.message : e));
    }
  }
  return readOut(memory, packed);
}
