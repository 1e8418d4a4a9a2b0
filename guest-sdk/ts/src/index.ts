/**
 * Write zot extensions in TypeScript.
 *
 * ```ts
 * import { extension, block, allow } from "@zot/ext";
 *
 * extension({ name: "hello", version: "0.1.0" })
 *   .command("hello", "Say hello", (args) => ({ action: "prompt", prompt: `Greet ${args}.` }))
 *   .tool("shout", "Upper-case a text.",
 *     { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
 *     (args: { text: string }) => args.text.toUpperCase())
 *   .intercept("tool_call", (ev) =>
 *     String((ev.tool_args as { command?: string })?.command).includes("rm -rf /") ? block("not here") : allow())
 *   .run();
 * ```
 */
export { Extension, extension } from "./extension.js";
export type {
  Awaitable, CommandHandler, Ctx, EventHandler, InterceptHandler, Progress, Schema, ToolCtx,
  ToolHandler,
} from "./extension.js";
export type { Transport } from "./transport.js";
export { stdio } from "./stdio.js";
export * from "./types.js";
