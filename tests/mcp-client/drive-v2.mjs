// Drives `zot mcp` with the official MCP TypeScript client of the 2.x line,
// `@modelcontextprotocol/client` (tests/it/mcp_clients.rs).
//
// node drive-v2.mjs <legacy|auto> '<steps as JSON>' <command> [args…]
//
// Spawns the command through the client's StdioClientTransport and connects with the
// client's version negotiation `mode`: `legacy` (its default: the `initialize`
// handshake) or `auto` (a `server/discover` probe first, on a short-lived sibling
// process, then the stateless 2026-07-28 revision if the server offers it). Runs the
// steps in order and prints one JSON object on stdout:
// {"protocolVersion": the revision negotiated, "era": "legacy" or "modern",
//  "server": the server's info, "steps": [the result of each step],
//  "errors": [every transport or protocol error the client saw],
//  "stderr": the server's stderr}.
// A step that throws records {"error": message, "code": code, "data": data} and the run
// goes on.
//
// Steps ({"op": …}):
//   tools                        tools/list
//   call {name, args}            tools/call
//   listen_then_call {name, args}
//                                2026-07-28: opens a `subscriptions/listen` stream for
//                                tool list changes, calls the tool, and waits (20 s at
//                                most) for `notifications/tools/list_changed` on it;
//                                {honored, result, listChanged}
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { runSteps } from "./steps.mjs";

const [mode, steps, command, ...args] = [
  process.argv[2],
  JSON.parse(process.argv[3]),
  ...process.argv.slice(4),
];
if (mode !== "legacy" && mode !== "auto") throw new Error(`unknown mode ${mode}`);

const errors = [];
const transport = new StdioClientTransport({ command, args, stderr: "pipe" });
let stderr = "";
transport.stderr.on("data", (d) => (stderr += d));
const client = new Client(
  { name: "zot-test-client-v2", version: "1.0.0" },
  { versionNegotiation: { mode } },
);
client.onerror = (e) => errors.push(String(e));

async function run(step) {
  switch (step.op) {
    case "tools":
      return await client.listTools();
    case "call":
      return await client.callTool({ name: step.name, arguments: step.args ?? {} });
    case "listen_then_call": {
      let changed;
      const seen = new Promise((resolve) => (changed = resolve));
      client.setNotificationHandler("notifications/tools/list_changed", () => changed(true));
      const stream = await client.listen({ toolsListChanged: true });
      const result = await client
        .callTool({ name: step.name, arguments: step.args ?? {} })
        .catch((e) => ({ error: String(e) }));
      const timeout = new Promise((resolve) => setTimeout(() => resolve(false), 20000));
      const listChanged = await Promise.race([seen, timeout]);
      await stream.close();
      return { honored: stream.honoredFilter, result, listChanged };
    }
    default:
      throw new Error(`unknown step ${step.op}`);
  }
}

const results = await runSteps(client, transport, steps, run, errors);
const negotiated = {
  protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
  era: client.getProtocolEra() ?? null,
  server: client.getServerVersion() ?? null,
};
await client.close();
process.stdout.write(JSON.stringify({ ...negotiated, steps: results, errors, stderr }) + "\n");
process.exit(0);
