// Preloaded into the MCP reference server (`node -r`) by tests that check
// what a proxy sends upstream: prints each HTTP request's headers as one
// line, `HEADERS {...}`, on stderr. The server itself ignores auth.
const http = require("http");
const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, req, ...rest) {
  if (event === "request") {
    process.stderr.write("HEADERS " + JSON.stringify(req.headers) + "\n");
  }
  return emit.call(this, event, req, ...rest);
};
