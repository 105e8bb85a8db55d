// Preloaded into Node peers (`node -r`): makes every listen() that names only
// a port bind 127.0.0.1. The MCP reference server has no host option and
// would otherwise listen on every interface.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const portOnly = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (portOnly && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
