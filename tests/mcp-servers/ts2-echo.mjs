// A server of the official TypeScript SDK 2.x (MCP 2026-07-28) over Streamable HTTP on
// 127.0.0.1:PORT at /mcp, for zot's tests: one tool, `echo`. `--only-2026` refuses
// 2025-era requests (the SDK's `legacy: 'reject'`); else it serves both revisions.
import http from "node:http";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { z } from "zod";

const only2026 = process.argv.includes("--only-2026");
const port = Number(process.env.PORT ?? 0);

const handler = createMcpHandler(
  () => {
    const server = new McpServer({ name: "ts2-echo", version: "2.4.0" });
    server.registerTool(
      "echo",
      { description: "Echoes text.", inputSchema: z.object({ text: z.string() }) },
      async ({ text }) => ({ content: [{ type: "text", text: `echo: ${text}` }] }),
    );
    return server;
  },
  { legacy: only2026 ? "reject" : "stateless" },
);

const listener = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = chunks.length ? Buffer.concat(chunks) : undefined;
  const request = new Request(`http://${req.headers.host}${req.url}`, {
    method: req.method,
    headers: Object.entries(req.headers).flatMap(([k, v]) =>
      Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]],
    ),
    body: req.method === "GET" || req.method === "HEAD" ? undefined : body,
  });
  const response = await handler.fetch(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) return res.end();
  for await (const chunk of response.body) res.write(chunk);
  res.end();
});
listener.listen(port, "127.0.0.1", () => {
  console.error(`ts2-echo listening on port ${listener.address().port}`);
});
