#!/usr/bin/env node
// A scriptable MCP client on the official TypeScript SDK (`Client` with
// `StdioClientTransport` or `StreamableHTTPClientTransport`), for
// ../test_everything.py. It connects, lists the tools (every page), runs the
// operations given on the command line in order, and prints ONE JSON object
// on stdout:
//
//   {"server": {"info", "capabilities", "instructions", "protocolVersion"},
//    "tools": [...],                      // tools/list, every page, as on the wire
//    "toolsPages": N,
//    "ops": [{"op": "call"|"request", "name"|"method", "args"|"params",
//             "ok": bool, "result": <SDK-parsed result>, "wire": <raw JSON-RPC result>,
//             "error": {"code", "message", "data"}, "progress": [...]}],
//    "logs": [...], "sampling": [...], "elicitation": [...], "rootsRequests": N}
//
// Usage:
//   node client.mjs [options] --stdio -- COMMAND [ARGS...]
//   node client.mjs [options] --url http://127.0.0.1:PORT/mcp
// Options (operations run in the order given):
//   --header 'Name: value'                   an HTTP header on every request (--url); repeat for more
//   --call NAME [--args JSON] [--progress]   tools/call through client.callTool
//   --request METHOD [--params JSON]         any request, result kept raw (loose schema)
//   --log-level LEVEL                        logging/setLevel before the operations
//   --wait-logs N                            after the operations, wait (bounded) for N log messages
//   --caps JSON                              client capabilities; default {"sampling":{},"elicitation":{}}
//                                            (add "roots":{} to be asked roots/list)
//   --timeout-ms MS                          per-request timeout (default 20000)
//
// The client answers sampling/createMessage with a fixed assistant message,
// elicitation/create with accept {"name": "interop"}, roots/list (when declared) with one root.
// Exit status: 0 when connected (operation errors are in "ops"), 1 otherwise.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ResultSchema,
} from "@modelcontextprotocol/sdk/types.js";

const SAMPLING_TEXT = "hello from the TS client";
const SAMPLING_MODEL = "interop-model";

function usage(msg) {
  process.stderr.write(`client.mjs: ${msg}\n`);
  process.exit(2);
}

function parseJson(flag, text) {
  try {
    return JSON.parse(text);
  } catch (err) {
    usage(`${flag}: not JSON: ${err.message}`);
  }
}

function parseArgs(argv) {
  const opts = {
    ops: [],
    caps: { sampling: {}, elicitation: {} },
    timeoutMs: 20000,
    waitLogs: 0,
    logLevel: null,
    url: null,
    headers: {},
    command: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    const last = () => {
      const op = opts.ops[opts.ops.length - 1];
      if (!op) usage(`${a} must follow --call or --request`);
      return op;
    };
    switch (a) {
      case "--stdio":
        if (argv[i + 1] !== "--" || i + 2 >= argv.length) usage("--stdio -- COMMAND [ARGS...]");
        opts.command = argv.slice(i + 2);
        i = argv.length;
        break;
      case "--url":
        opts.url = value();
        break;
      case "--header": {
        const header = value();
        const colon = header.indexOf(":");
        if (colon < 1) usage(`--header: expected 'Name: value', got ${header}`);
        opts.headers[header.slice(0, colon).trim()] = header.slice(colon + 1).trim();
        break;
      }
      case "--call":
        opts.ops.push({ op: "call", name: value(), args: {}, progress: false });
        break;
      case "--args": {
        const op = last();
        if (op.op !== "call") usage("--args must follow --call");
        op.args = parseJson(a, value());
        break;
      }
      case "--progress": {
        const op = last();
        if (op.op !== "call") usage("--progress must follow --call");
        op.progress = true;
        break;
      }
      case "--request":
        opts.ops.push({ op: "request", method: value(), params: undefined });
        break;
      case "--params": {
        const op = last();
        if (op.op !== "request") usage("--params must follow --request");
        op.params = parseJson(a, value());
        break;
      }
      case "--caps":
        opts.caps = parseJson(a, value());
        break;
      case "--log-level":
        opts.logLevel = value();
        break;
      case "--wait-logs":
        opts.waitLogs = Number(value());
        break;
      case "--timeout-ms":
        opts.timeoutMs = Number(value());
        break;
      default:
        usage(`unknown argument ${a}`);
    }
  }
  if (!opts.url === !opts.command) usage("give exactly one of --url URL or --stdio -- COMMAND");
  return opts;
}

/** Records every JSON-RPC message the transport sends and receives. */
function tap(transport) {
  const sent = [];
  const received = [];
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    sent.push(message);
    return send(message, options);
  };
  let handler;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => handler,
    set: (fn) => {
      handler = fn && ((message, extra) => {
        received.push(message);
        return fn(message, extra);
      });
    },
  });
  return { sent, received };
}

/** The raw answer to the last request of `method` sent since index `from`. */
function wireAnswer(wire, from, method) {
  const req = wire.sent.slice(from).filter((m) => m.method === method && m.id !== undefined).pop();
  if (!req) return undefined;
  const ans = wire.received.find((m) => m.id === req.id && ("result" in m || "error" in m));
  return ans && ("result" in ans ? ans.result : { error: ans.error });
}

function errorJson(err) {
  return { code: err?.code ?? null, message: String(err?.message ?? err), data: err?.data ?? null };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const out = { server: null, tools: [], toolsPages: 0, ops: [], logs: [], sampling: [], elicitation: [], rootsRequests: 0 };

  const client = new Client({ name: "lro-interop-ts-client", version: "1.0.0" }, { capabilities: opts.caps });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    out.logs.push(n.params);
  });
  if (opts.caps.sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      out.sampling.push(req.params);
      return { role: "assistant", content: { type: "text", text: SAMPLING_TEXT }, model: SAMPLING_MODEL, stopReason: "endTurn" };
    });
  }
  if (opts.caps.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      out.elicitation.push(req.params);
      return { action: "accept", content: { name: "interop" } };
    });
  }
  if (opts.caps.roots) {
    client.setRequestHandler(ListRootsRequestSchema, async () => {
      out.rootsRequests += 1;
      return { roots: [{ uri: "file:///tmp/lro-interop", name: "interop" }] };
    });
  }

  const transport = opts.url
    ? new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers: opts.headers } })
    : new StdioClientTransport({
        command: opts.command[0],
        args: opts.command.slice(1),
        env: Object.fromEntries(Object.entries(process.env).filter(([, v]) => v !== undefined)),
        stderr: "inherit",
      });
  const wire = tap(transport);
  const reqOpts = { timeout: opts.timeoutMs };

  try {
    await client.connect(transport, reqOpts);
  } catch (err) {
    process.stdout.write(JSON.stringify({ fatal: `connect: ${err?.message ?? err}` }) + "\n");
    process.exitCode = 1;
    await transport.close().catch(() => {});
    return;
  }
  out.server = {
    info: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    instructions: client.getInstructions(),
    protocolVersion: transport.protocolVersion ?? wire.received.find((m) => m.result?.protocolVersion)?.result?.protocolVersion,
  };

  try {
    if (opts.logLevel) await client.setLoggingLevel(opts.logLevel, reqOpts);
    // tools/list through the SDK (every page), recorded as on the wire.
    let cursor;
    do {
      const from = wire.sent.length;
      const page = await client.listTools(cursor ? { cursor } : undefined, reqOpts);
      const raw = wireAnswer(wire, from, "tools/list");
      out.tools.push(...(raw?.tools ?? page.tools));
      out.toolsPages += 1;
      cursor = page.nextCursor;
    } while (cursor && out.toolsPages < 100);

    for (const op of opts.ops) {
      const from = wire.sent.length;
      const rec = op.op === "call" ? { op: "call", name: op.name, args: op.args } : { op: "request", method: op.method, params: op.params ?? null };
      try {
        if (op.op === "call") {
          const progress = [];
          const callOpts = op.progress ? { ...reqOpts, onprogress: (p) => progress.push(p) } : reqOpts;
          rec.result = await client.callTool({ name: op.name, arguments: op.args }, undefined, callOpts);
          rec.wire = wireAnswer(wire, from, "tools/call");
          if (op.progress) {
            rec.progress = progress;
            const token = wire.sent.slice(from).find((m) => m.method === "tools/call")?.params?._meta?.progressToken;
            rec.progressToken = token ?? null;
            rec.progressWire = wire.received.filter((m) => m.method === "notifications/progress" && m.params?.progressToken === token).map((m) => m.params);
          }
        } else {
          const request = op.params === undefined ? { method: op.method } : { method: op.method, params: op.params };
          rec.result = await client.request(request, ResultSchema, reqOpts);
          rec.wire = wireAnswer(wire, from, op.method);
        }
        rec.ok = true;
      } catch (err) {
        rec.ok = false;
        rec.error = errorJson(err);
        rec.wire = wireAnswer(wire, from, op.op === "call" ? "tools/call" : op.method);
      }
      out.ops.push(rec);
    }

    if (opts.waitLogs > 0) {
      const deadline = Date.now() + opts.timeoutMs;
      while (out.logs.length < opts.waitLogs && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20)); // a poll with a deadline
      }
    }
  } finally {
    process.stdout.write(JSON.stringify(out) + "\n");
    if (opts.url) await transport.terminateSession().catch(() => {});
    await client.close().catch(() => {});
  }
}

main().catch((err) => {
  process.stderr.write(`client.mjs: ${err?.stack ?? err}\n`);
  process.exitCode = 1;
});
