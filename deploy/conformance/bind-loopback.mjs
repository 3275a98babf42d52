// Preload (node --import) for the reference server: its `app.listen(PORT, cb)` names no
// host, so Node would bind every interface (`::`). This makes such a bare
// `listen(port[, cb])` bind $HOST instead, 127.0.0.1 by default, leaving calls that
// name a host (or a path, or an options object) alone. Used by deploy/tests/conformance.py.
import net from "node:net";

const host = process.env.HOST || "127.0.0.1";
const listen = net.Server.prototype.listen;
const isPort = (v) => typeof v === "number" || (typeof v === "string" && /^\d+$/.test(v));

net.Server.prototype.listen = function (...args) {
  if (isPort(args[0]) && (args.length === 1 || typeof args[1] === "function")) {
    args.splice(1, 0, host);
  }
  return listen.apply(this, args);
};
