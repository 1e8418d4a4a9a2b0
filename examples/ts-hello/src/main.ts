// ts-hello: a zot extension in TypeScript on the @zot/ext SDK (guest-sdk/ts).
//
// - /hello [name]: a note, then a prompt asking the model to greet `name`;
// - shout {text}: the text upper-cased, with its length as structured content;
// - slow {ms}: waits `ms` milliseconds, or stops early when the host abandons the call
//   (its signal aborts on tool_cancel) and says so with a note;
// - /count: a panel with a number; "+" adds one (panel_render), "q" closes it;
// - an interceptor of tool_call: a bash `rm -rf /` is blocked, a bash command starting
//   with `sudo ` runs without it, everything else is allowed unchanged;
// - an interceptor of assistant_message: a line naming a password is redacted;
// - on session_start, a note saying it is ready and whether it has a data dir.
import { allow, block, extension, modifyArgs, panel, prompt, replaceText } from "@zot/ext";
import type { Panel } from "@zot/ext";

const shoutSchema = {
  type: "object",
  properties: { text: { type: "string", description: "What to shout." } },
  required: ["text"],
};

const slowSchema = {
  type: "object",
  properties: { ms: { type: "integer", minimum: 0, description: "How long to work, in milliseconds." } },
  required: ["ms"],
};

/** Resolves after `ms`, or rejects as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(new Error("cancelled"));
    }, { once: true });
  });
}

let count = 0;
const counter = (): Panel => ({ id: "count", title: "Count", lines: [String(count)], footer: "+ adds one, q closes" });

extension({ name: "ts-hello", version: "0.1.0" })
  .command("hello", "Greet someone: /hello NAME", (args, ctx) => {
    const who = args || "world";
    ctx.notify("info", `ts-hello greets ${who}`);
    return prompt(`Say hello to ${who} in one short sentence.`);
  })
  .tool("shout", "Upper-case a text.", shoutSchema, (args: { text?: unknown }) => {
    if (typeof args.text !== "string") {
      return { content: 'missing the string argument "text"', isError: true };
    }
    return { content: args.text.toUpperCase(), structured: { length: args.text.length } };
  })
  .tool("slow", "Work for a while; stops when cancelled.", slowSchema, async (args: { ms?: unknown }, ctx) => {
    const ms = typeof args.ms === "number" ? args.ms : 0;
    try {
      await sleep(ms, ctx.signal);
    } catch (e) {
      ctx.notify("warn", `slow: cancelled (call ${ctx.callId})`);
      throw e;
    }
    return `slept ${ms} ms`;
  })
  .command("count", "A panel with a number: + adds one, q closes", () => {
    count = 0;
    return panel(counter());
  })
  .onPanelKey((key, ctx) => {
    if (key.panelId !== "count") return;
    if (key.key === "+") {
      count += 1;
      ctx.renderPanel(counter());
    } else if (key.key === "q") {
      ctx.closePanel("count");
    }
  })
  .intercept("tool_call", (ev) => {
    const command = (ev.tool_args as { command?: unknown } | undefined)?.command;
    if (ev.tool_name !== "bash" || typeof command !== "string") return allow();
    if (/\brm\s+-\w*(rf|fr)\w*\s+\/(\s|$|\*)/.test(command)) {
      return block("ts-hello: refused to delete the whole disk (rm -rf /)");
    }
    if (command.startsWith("sudo ")) {
      return modifyArgs({ ...(ev.tool_args as object), command: command.slice("sudo ".length) });
    }
    return allow();
  })
  .intercept("assistant_message", (ev) => {
    const text = typeof ev.text === "string" ? ev.text : "";
    if (!/password/i.test(text)) return allow();
    const lines = text.split("\n").map((line) => (/password/i.test(line) ? "[redacted by ts-hello]" : line));
    return replaceText(lines.join("\n"));
  })
  .on("session_start", (_ev, ctx) => {
    ctx.notify("info", `ts-hello is ready (data dir: ${ctx.dataDir ? "yes" : "no"})`);
  })
  .run();
