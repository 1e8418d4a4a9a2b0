// Drives `zot mcp` with the official MCP TypeScript SDK client (tests/it/mcp.rs).
//
// node drive.mjs '<steps as JSON>' <command> [args…]
// node drive.mjs '<steps as JSON>' --http <url> <token>
//
// Spawns the command through the SDK's StdioClientTransport (or, with --http, connects
// to the URL through its StreamableHTTPClientTransport, sending `Authorization: Bearer
// <token>`), connects (the initialize handshake), runs the steps in order and prints
// one JSON object on stdout:
// {"steps": [the result of each step], "logs": [every log message], "errors": [every
// transport or protocol error the client saw], "stderr": the server's stderr}.
// A step that throws records {"error": message, "code": code, "data": data} and the run
// goes on.
//
// Steps ({"op": …}):
//   init                         the server's info, capabilities and instructions
//   tools                        tools/list
//   call {name, args}            tools/call
//   call_abort {name, args, abort_on, then}
//                                tools/call, aborted (notifications/cancelled) once a log
//                                message starting with `abort_on` arrived; then waits for
//                                a log message starting with `then` + the id that message
//                                ended with
//   wait_log {prefix}            the first log message starting with `prefix`
//   call_then_list_changed {name, args, gone}
//                                tools/call, then waits for tools/list_changed after it
//                                and for tools/list to lack tool `gone`
//   wait_tool {name}             waits for tools/list_changed until tools/list has `name`
//   prompts                      prompts/list
//   prompt {name, args}          prompts/get with {"args": args}
//   close                        closes stdin; the server's exit {code, signal} (stdio)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  LoggingMessageNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { runSteps } from "./steps.mjs";

const WAIT_MS = 20000;
const [steps, command, ...args] = [JSON.parse(process.argv[2]), ...process.argv.slice(3)];

const logs = [];
const errors = [];
let listChanged = 0;
const waiters = new Set();
const wake = () => waiters.forEach((w) => w());

/** Resolves with `test()`'s first truthy value, checked at each notification. */
function until(what, test) {
  return new Promise((resolve, reject) => {
    const check = () => {
      const value = test();
      if (value) {
        waiters.delete(check);
        clearTimeout(timer);
        resolve(value);
      }
    };
    const timer = setTimeout(() => {
      waiters.delete(check);
      reject(new Error(`no ${what} within ${WAIT_MS} ms`));
    }, WAIT_MS);
    waiters.add(check);
    check();
  });
}

const logStarting = (prefix) =>
  until(`log message starting with ${JSON.stringify(prefix)}`, () =>
    logs.find((l) => typeof l.data === "string" && l.data.startsWith(prefix)),
  );

const http = command === "--http";
const transport = http
  ? new StreamableHTTPClientTransport(new URL(args[0]), {
      requestInit: { headers: { Authorization: `Bearer ${args[1]}` } },
    })
  : new StdioClientTransport({ command, args, stderr: "pipe" });
let stderr = "";
if (!http) transport.stderr.on("data", (d) => (stderr += d));
const client = new Client({ name: "zot-test-client", version: "1.0.0" });
// Over HTTP the client's close aborts its own SSE streams, which the SDK reports as
// "SSE stream disconnected: AbortError" a moment later: not the server's error.
let closing = false;
client.onerror = (e) => {
  if (!(http && closing)) errors.push(String(e));
};
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  logs.push(n.params);
  wake();
});
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  listChanged += 1;
  wake();
});

async function run(step) {
  switch (step.op) {
    case "init":
      return {
        server: client.getServerVersion(),
        capabilities: client.getServerCapabilities(),
        instructions: client.getInstructions(),
      };
    case "tools":
      return await client.listTools();
    case "call":
      return await client.callTool({ name: step.name, arguments: step.args ?? {} });
    case "call_progress": {
      const progress = [];
      const result = await client.callTool(
        { name: step.name, arguments: step.args ?? {} },
        undefined,
        { onprogress: (p) => progress.push(p) },
      );
      return { result, progress };
    }
    case "call_abort": {
      const abort = new AbortController();
      const call = client
        .callTool({ name: step.name, arguments: step.args ?? {} }, undefined, {
          signal: abort.signal,
        })
        .then(
          (r) => ({ result: r }),
          (e) => ({ error: String(e) }),
        );
      const started = await logStarting(step.abort_on);
      abort.abort("the test gave up");
      const outcome = await call;
      const id = started.data.slice(step.abort_on.length).trim();
      const cancelled = await logStarting(step.then + id);
      return { ...outcome, started: started.data, cancelled: cancelled.data };
    }
    case "wait_log":
      return await logStarting(step.prefix);
    case "call_then_list_changed": {
      const before = listChanged;
      const result = await client
        .callTool({ name: step.name, arguments: step.args ?? {} })
        .then(
          (r) => ({ result: r }),
          (e) => ({ error: String(e) }),
        );
      await until("tools/list_changed", () => listChanged > before);
      const deadline = Date.now() + WAIT_MS;
      for (;;) {
        const tools = (await client.listTools()).tools.map((t) => t.name);
        if (!tools.includes(step.gone)) return { ...result, tools };
        if (Date.now() > deadline) throw new Error(`${step.gone} still listed: ${tools}`);
        await until("tools/list_changed", () => listChanged > before + 1);
      }
    }
    case "wait_tool": {
      const deadline = Date.now() + WAIT_MS;
      for (;;) {
        const before = listChanged;
        const tools = (await client.listTools()).tools.map((t) => t.name);
        if (tools.includes(step.name)) return { tools };
        if (Date.now() > deadline) throw new Error(`${step.name} not listed: ${tools}`);
        await until("tools/list_changed", () => listChanged > before);
      }
    }
    case "prompts":
      return await client.listPrompts();
    case "prompt":
      return await client.getPrompt({
        name: step.name,
        arguments: step.arguments ?? { args: step.args ?? "" },
      });
    case "close": {
      const child = transport._process;
      const exited = new Promise((resolve) =>
        child.once("exit", (code, signal) => resolve({ code, signal })),
      );
      await client.close();
      return await exited;
    }
    default:
      throw new Error(`unknown step ${step.op}`);
  }
}

const results = await runSteps(client, transport, steps, run, errors);
closing = true;
if (http || transport._process) await client.close();
process.stdout.write(JSON.stringify({ steps: results, logs, errors, stderr }) + "\n");
process.exit(0);
