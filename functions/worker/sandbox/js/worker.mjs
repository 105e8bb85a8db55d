// The sandbox Worker: runs one python.execute call per request in a fresh
// instance of the pre-initialized sandbox module. Reached only through the
// dispatcher's service binding (no route, no workers.dev address); its
// `limits.cpu_ms` is what ends a script that never yields.
import sandboxModule from "../../build/sandbox.wasm";
import { Runner } from "./runner.mjs";

const runner = new Runner(sandboxModule);
runner.refill();

export default {
  async fetch(request, env, ctx) {
    if (request.method !== "POST") {
      return new Response("POST the call as JSON\n", { status: 405 });
    }
    const out = runner.run(await request.text());
    // Make the next call's instance after this answer has gone out.
    ctx.waitUntil(new Promise((done) => setTimeout(() => { runner.refill(); done(); }, 0)));
    return new Response(out, { headers: { "content-type": "application/json" } });
  },
};
