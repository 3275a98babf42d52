// Preload (node --import) for the npm test servers (server-everything's
// streamable-HTTP mode): their
// `app.listen(PORT, cb)` names no host, so Node would bind every interface, and
// they print the port they were given, not the one bound. This makes a bare
// `listen(port[, cb])` bind $HOST (127.0.0.1 by default), leaving calls that name
// a host (or a path, or an options object) alone, and, once bound, prints
//   listen-loopback: listening on http://HOST:PORT/mcp
// on stderr, so PORT=0 works and a test can wait for that line (no port race).
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
      process.stderr.write(`listen-loopback: listening on http://${shown}:${port}/mcp\n`);
    });
  }
  return listen.apply(this, args);
};
