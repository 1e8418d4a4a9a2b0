#!/usr/bin/env node
// A configurable zot test extension (Node, no dependencies).
//
// Usage: node ext.js [--name NAME] [--commands a,b] [--tools a,b] [--events a,b]
//                    [--intercept a,b] [--no-ready] [--delay-ms N]
//
// hello (after --delay-ms), register_command for each of --commands (default
// node-echo), register_tool for each of --tools (default echo,sleep), subscribe to
// --events (default all five) and --intercept (default none), then ready (unless
// --no-ready), then notify "started pid=<pid> cwd=<cwd>".
//
// Commands answer action "insert" with insert = the args.
// Tools, chosen by the tool name's prefix: `sleep` waits args.ms (default 1000) then
// answers "slept <ms>"; `hang` never answers (notifies "hanging <id>"); anything else
// echoes: text = JSON of the args.
// Events are notified as "event <json of the frame>", in the order received.
// Intercepts are notified as "intercept <json of the frame>" and answered: tool_call ->
// modified_args = args + {"node": true}; assistant_message -> replace_text = text +
// " [node]"; anything else -> allow.
// tool_cancel is notified as "cancelled <id>". shutdown -> shutdown_ack, exit 0.
"use strict";

const ALL_EVENTS = ["session_start", "turn_start", "turn_end", "tool_call", "assistant_message"];

function parseArgs(argv) {
  const o = {
    name: "node-ext",
    commands: ["node-echo"],
    tools: ["echo", "sleep"],
    events: ALL_EVENTS.slice(),
    intercept: [],
    ready: true,
    delayMs: 0,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = argv[i + 1] === undefined ? "" : argv[i + 1];
    const list = () => v.split(",").filter((x) => x.length > 0);
    switch (a) {
      case "--no-ready": o.ready = false; continue;
      case "--name": o.name = v; break;
      case "--commands": o.commands = list(); break;
      case "--tools": o.tools = list(); break;
      case "--events": o.events = list(); break;
      case "--intercept": o.intercept = list(); break;
      case "--delay-ms": o.delayMs = parseInt(v, 10) || 0; break;
      default: process.stderr.write(`node-ext: unknown option ${a}\n`); continue;
    }
    i++;
  }
  return o;
}

const opts = parseArgs(process.argv.slice(2));

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

function notify(message, level = "info") {
  emit({ type: "notify", level, message });
}

function handle(msg) {
  switch (msg.type) {
    case "command_invoked":
      emit({ type: "command_response", id: msg.id, action: "insert", insert: msg.args || "" });
      break;
    case "tool_call": {
      const name = msg.name || "";
      const args = msg.args && typeof msg.args === "object" ? msg.args : {};
      if (name.startsWith("sleep")) {
        const ms = Number(args.ms === undefined ? 1000 : args.ms);
        setTimeout(() => {
          emit({ type: "tool_result", id: msg.id, content: [{ type: "text", text: `slept ${ms}` }] });
        }, ms);
      } else if (name.startsWith("hang")) {
        notify(`hanging ${msg.id}`);
      } else {
        emit({ type: "tool_result", id: msg.id, content: [{ type: "text", text: JSON.stringify(args) }] });
      }
      break;
    }
    case "tool_cancel":
      notify(`cancelled ${msg.id}`);
      break;
    case "event":
      notify("event " + JSON.stringify(msg));
      break;
    case "event_intercept": {
      notify("intercept " + JSON.stringify(msg));
      const resp = { type: "event_intercept_response", id: msg.id };
      if (msg.event === "tool_call") {
        resp.modified_args = Object.assign({}, msg.tool_args || {}, { node: true });
      } else if (msg.event === "assistant_message") {
        resp.replace_text = (msg.text || "") + " [node]";
      }
      emit(resp);
      break;
    }
    case "shutdown":
      emit({ type: "shutdown_ack" });
      process.exit(0);
      break;
    default:
      break;
  }
}

function start() {
  emit({ type: "hello", name: opts.name, version: "0.4.0", capabilities: ["commands", "tools", "events"] });
  process.stderr.write(`node-ext stderr: started ${opts.name}\n`);
  for (const c of opts.commands) {
    emit({ type: "register_command", name: c, description: `node command ${c}` });
  }
  for (const t of opts.tools) {
    emit({
      type: "register_tool",
      name: t,
      description: `node tool ${t}`,
      schema: { type: "object", properties: {} },
    });
  }
  if (opts.events.length > 0 || opts.intercept.length > 0) {
    emit({ type: "subscribe", events: opts.events, intercept: opts.intercept });
  }
  if (opts.ready) emit({ type: "ready" });
  notify(`started pid=${process.pid} cwd=${process.cwd()}`);
}

let buf = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buf += chunk;
  let nl;
  while ((nl = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, nl).trim();
    buf = buf.slice(nl + 1);
    if (!line) continue;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch (e) {
      process.stderr.write(`node-ext: bad line from host: ${line.slice(0, 200)}\n`);
      continue;
    }
    handle(msg);
  }
});
process.stdin.on("end", () => process.exit(0));

setTimeout(start, opts.delayMs);
