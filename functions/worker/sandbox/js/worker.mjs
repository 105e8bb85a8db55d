// The sandbox Worker: runs one python.execute call per request in a fresh
// instance of the pre-initialized sandbox module. Its `limits.cpu_ms` is
// what ends a script that never yields.
//
// The work is in the named entrypoint `Sandbox`, which only a service
// binding naming it can call (the dispatcher's `SANDBOX`): routes,
// workers.dev and preview URLs reach the default export alone, which runs
// nothing. Were this Worker ever given an address, it would still not be
// unauthenticated code execution.
import { WorkerEntrypoint } from "cloudflare:workers";
import sandboxModule from "../../build/sandbox.wasm";
import { Runner } from "./runner.mjs";

const runner = new Runner(sandboxModule);
runner.refill();

export class Sandbox extends WorkerEntrypoint {
  async fetch(request) {
    let out;
    if (request.method === "GET" && new URL(request.url).pathname === "/walls") {
      out = runner.walls();
    } else if (request.method === "POST") {
      out = runner.run(await request.text());
    } else {
      return new Response("POST the call as JSON, or GET /walls\n", { status: 405 });
    }
    // Make the next call's instance after this answer has gone out.
    this.ctx.waitUntil(new Promise((done) => setTimeout(() => { runner.refill(); done(); }, 0)));
    return new Response(out, { headers: { "content-type": "application/json" } });
  }
}

// Wrangler needs a default export (else it takes the module for the old
// service-worker format); it answers 404 to everything.
export default {
  async fetch() {
    return new Response("not found\n", { status: 404 });
  },
};
