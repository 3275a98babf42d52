// Preload (node --import) for server-everything's streamable-HTTP mode, whose
// `app.listen(PORT, cb)` names no host (Node would bind every interface) and
// prints the port it was given, not the one bound. This makes a bare
// `listen(port[, cb])` bind $HOST (127.0.0.1 by default) and, once bound, prints
//   server-everything listening on http://HOST:PORT/mcp
// on stderr, so PORT=0 works and the tests wait for that line (no port race).
import net from "node:net";

const host = process.env.HOST || "127.0.0.1";
const listen = net.Server.prototype.listen;
const isPort = (v) => typeof v === "number" || (typeof v === "string" && /^\d+$/.test(v));

net.Server.prototype.listen = function (...args) {
  if (isPort(args[0]) && (args.length === 1 || typeof args[1] === "function")) {
    args.splice(1, 0, host);
    this.once("listening", () => {
      const { address, port } = this.address();
      const shown = address.includes(":") ? `[${address}]` : address;
      process.stderr.write(`server-everything listening on http://${shown}:${port}/mcp\n`);
    });
  }
  return listen.apply(this, args);
};
