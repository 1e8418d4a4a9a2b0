#!/usr/bin/env node
// {{name}}: a zot extension in plain Node.js (no dependencies).
//
// It speaks the zot protocol (newline-delimited JSON on stdin/stdout) and provides:
// - the slash command /{{name}}, which shows the text typed after it;
// - the tool {{name}}_echo, which the model can call with {"text": "..."};
// - an interceptor of tool_call that blocks a bash command deleting the whole disk
//   (rm -rf /) and allows everything else.
//
// Never write anything else on stdout: it carries the frames. console.error goes to
// stderr, which zot writes to the extension's log (zot ext logs {{name}}).
"use strict";

const readline = require("readline");

const NAME = "{{name}}";
const VERSION = "0.1.0";
const TOOL = `${NAME}_echo`;
const TOOL_SCHEMA = {
  type: "object",
  properties: { text: { type: "string", description: "The text to echo back." } },
  required: ["text"],
};

// Sends one frame: one JSON object on one line.
const emit = (frame, done) => process.stdout.write(JSON.stringify(frame) + "\n", done);

// /{{name}} <args>: shows its arguments as a note (no model call).
function onCommand(msg) {
  const args = msg.args || "";
  const text = args ? `${NAME} got: ${args}` : `${NAME}: no arguments`;
  return { type: "command_response", id: msg.id, action: "display", display: text };
}

// {{name}}_echo {"text": ...}: answers the text back.
function onToolCall(msg) {
  const text = (msg.args || {}).text;
  if (typeof text !== "string") {
    return {
      type: "tool_result", id: msg.id, is_error: true,
      content: [{ type: "text", text: 'missing the string argument "text"' }],
    };
  }
  return { type: "tool_result", id: msg.id, content: [{ type: "text", text: `echo: ${text}` }] };
}

// True for an `rm` with a flag holding both r and f whose target is / or /*.
function dangerous(command) {
  const words = command.split(/\s+/);
  return words.includes("rm")
    && words.some((w) => w === "/" || w === "/*")
    && words.some((w) => w.startsWith("-") && w.toLowerCase().includes("r") && w.includes("f"));
}

// Asked before every tool call runs: block one obviously dangerous case.
function onIntercept(msg) {
  const reply = { type: "event_intercept_response", id: msg.id }; // allow, unchanged
  const command = (msg.tool_args || {}).command;
  if (msg.event === "tool_call" && msg.tool_name === "bash"
      && typeof command === "string" && dangerous(command)) {
    reply.block = true;
    reply.reason = `${NAME}: refused to delete the whole disk (rm -rf /)`;
  }
  return reply;
}

const handlers = {
  command_invoked: onCommand,
  tool_call: onToolCall,
  event_intercept: onIntercept,
};

emit({ type: "hello", name: NAME, version: VERSION, capabilities: ["commands", "tools", "events"] });
emit({ type: "register_command", name: NAME, description: `Show the text after /${NAME}` });
emit({ type: "register_tool", name: TOOL, description: "Echo a text back.", schema: TOOL_SCHEMA });
emit({ type: "subscribe", events: [], intercept: ["tool_call"] });
emit({ type: "ready" });

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    console.error("skipped a line that is not JSON");
    return;
  }
  if (msg.type === "shutdown") {
    emit({ type: "shutdown_ack" }, () => process.exit(0));
    return;
  }
  const handler = handlers[msg.type];
  if (!handler) return; // hello_ack, tool_cancel, events, ...: nothing to answer
  try {
    emit(handler(msg));
  } catch (e) {
    // Always answer, or the call waits for its timeout.
    console.error(`${msg.type} failed:`, e);
    if (msg.type === "tool_call") {
      emit({ type: "tool_result", id: msg.id, is_error: true, content: [{ type: "text", text: `${TOOL} failed` }] });
    } else if (msg.type === "command_invoked") {
      emit({ type: "command_response", id: msg.id, action: "noop", error: `/${NAME} failed` });
    } else {
      emit({ type: "event_intercept_response", id: msg.id });
    }
  }
});
// When stdin closes, readline ends and Node exits by itself.
