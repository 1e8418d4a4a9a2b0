// A test-only proxy that adds the bearer token `zot mcp --http` requires, for a client
// that cannot send one: the MCP conformance suite (tests/it/mcp/conformance.rs).
//
//   node proxy.mjs LISTEN UPSTREAM        e.g. 127.0.0.1:41523 127.0.0.2:41523
//
// The token is read from the file $ZOT_MCP_TOKEN_FILE (trimmed) or taken from
// $ZOT_MCP_TOKEN, never from the command line. Every request is forwarded to UPSTREAM as
// it came — method, path, every header (Host and Origin included, so zot's DNS-rebinding
// checks see what the client sent), the body streamed — with `Authorization: Bearer
// <token>` added; the answer streams back as it comes (an SSE stream is never buffered).
// Only the hop-by-hop headers, which belong to one connection, are not passed on. A side
// that goes away ends the other: a client's abort closes the upstream request, an
// upstream reset closes the client's answer. One upstream connection per request, so
// what the suite holds open is what zot sees open.
//
// It prints `proxy: listening at http://LISTEN` on stdout once it listens, and exits when
// its stdin ends (its parent gone) or on SIGTERM. Node's own modules only.

import fs from "node:fs";
import http from "node:http";
import { pipeline } from "node:stream";

const [listen, upstream] = process.argv.slice(2);
if (!listen || !upstream) {
  console.error("usage: node proxy.mjs LISTEN_HOST:PORT UPSTREAM_HOST:PORT");
  process.exit(2);
}

function split(address) {
  const at = address.lastIndexOf(":");
  return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
}

function token() {
  const file = process.env.ZOT_MCP_TOKEN_FILE;
  const value = file ? fs.readFileSync(file, "utf8").trim() : process.env.ZOT_MCP_TOKEN;
  if (!value) {
    console.error("proxy: no token: set ZOT_MCP_TOKEN_FILE or ZOT_MCP_TOKEN");
    process.exit(2);
  }
  return value;
}

const bearer = `Bearer ${token()}`;
const from = split(listen);
const to = split(upstream);
const agent = new http.Agent({ keepAlive: false });

// RFC 9110 7.6.1: these belong to one connection, not to the request.
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

function endToEnd(headers) {
  const kept = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!HOP_BY_HOP.has(name)) kept[name] = value;
  }
  return kept;
}

const server = http.createServer((req, res) => {
  const headers = endToEnd(req.headers);
  headers.authorization = bearer;
  const forward = http.request({
    agent,
    host: to.host,
    port: to.port,
    method: req.method,
    path: req.url,
    headers,
  });
  forward.on("response", (answer) => {
    res.writeHead(answer.statusCode, answer.statusMessage, endToEnd(answer.headers));
    res.flushHeaders();
    // An upstream reset mid-answer destroys the client's answer too.
    pipeline(answer, res, () => {});
  });
  forward.on("error", (e) => {
    if (!res.headersSent) {
      res.writeHead(502, { "content-type": "text/plain" });
      res.end(`proxy: upstream ${upstream}: ${e.message}`);
    } else {
      res.destroy();
    }
  });
  // The client went away before its answer ended: so does the upstream request.
  res.on("close", () => {
    if (!res.writableFinished) forward.destroy();
  });
  pipeline(req, forward, () => {});
});

server.on("error", (e) => {
  console.error(`proxy: cannot listen at ${listen}: ${e.message}`);
  process.exit(1);
});
server.listen(from.port, from.host, () => {
  console.log(`proxy: listening at http://${listen}`);
});

process.on("SIGTERM", () => process.exit(0));
process.stdin.on("end", () => process.exit(0));
process.stdin.on("error", () => process.exit(0));
process.stdin.resume();
