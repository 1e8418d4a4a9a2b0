/// <reference path="./zot-host.d.ts" />
/**
 * The sandboxed build: a reactor of the WIT world `zot:extension@0.1.0`. A component's
 * entry module exports {@link guest} and then imports the extension's own module:
 *
 * ```ts
 * export { guest } from "@zot/ext/component";
 * import "./main.js";
 * ```
 *
 * Importing this module installs its transport, so the extension's `run()` speaks
 * through the host's `send` and `handle` instead of stdin and stdout. The build
 * (componentize-qjs) runs the modules once and snapshots them: what `run()` sends then
 * (`hello`, the registrations, `ready`) waits here until the host calls `start`.
 */
import { log as hostLog, send } from "zot:extension/host@0.1.0";
import { DEFAULT_TRANSPORT, type Transport } from "./transport.js";

let onLine: ((line: string) => void | Promise<void>) | undefined;
/** Lines and log messages from before `start`: no host to call at build time. */
const early: Array<{ line: string } | { level: string; message: string }> = [];
let live = false;
let ended = false;

function write(line: string): void {
  if (ended) return;
  if (live) send(line);
  else early.push({ line });
}

function log(level: string, message: string): void {
  if (live) hostLog(level, message);
  else early.push({ level, message });
}

const transport: Transport = {
  start(line) {
    onLine = line;
  },
  write,
  log: (message) => log("info", message),
  exit() {
    // The host stops the component once it has `shutdown_ack`; nothing more is sent.
    ended = true;
  },
  // QuickJS (componentize-qjs) runs no promise callbacks and has no timers between calls.
  eventLoop: typeof setTimeout === "function",
};

(globalThis as Record<symbol, unknown>)[DEFAULT_TRANSPORT] = transport;

// `console` goes to the extension's log, as stderr does for a stdio extension.
if (typeof (globalThis as { console?: unknown }).console === "undefined") {
  const text = (parts: unknown[]) => parts.map((p) => (typeof p === "string" ? p : safeJson(p))).join(" ");
  (globalThis as { console?: unknown }).console = {
    log: (...parts: unknown[]) => log("info", text(parts)),
    info: (...parts: unknown[]) => log("info", text(parts)),
    debug: (...parts: unknown[]) => log("debug", text(parts)),
    warn: (...parts: unknown[]) => log("warn", text(parts)),
    error: (...parts: unknown[]) => log("error", text(parts)),
  };
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** The WIT export `guest`: what the host calls. */
export const guest = {
  /** Sends what `run()` wrote at build time: `hello`, the registrations, `ready`. */
  start(): void {
    live = true;
    for (const item of early.splice(0)) {
      if ("line" in item) send(item.line);
      else hostLog(item.level, item.message);
    }
    if (!onLine) hostLog("error", "zot-ext: the component's module never called run()");
  },
  /** One frame from the host; a handler's promise, where the engine can wait for one. */
  handle(frame: string): void | Promise<void> {
    return onLine?.(frame);
  },
};
