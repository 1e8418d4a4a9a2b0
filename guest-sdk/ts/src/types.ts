/** What the extension answers and what the host tells it, as the SDK's handlers see it. */

/** A note's level (`notify`). */
export type Level = "info" | "success" | "warn" | "error";

/** The host, from its `hello_ack`. */
export interface HostInfo {
  protocolVersion: number;
  zotVersion: string;
  provider: string;
  model: string;
  /** The agent's working directory. */
  cwd: string;
  /** The extension's own folder, when the host says. */
  extensionDir?: string;
  /** A folder of the extension's own, kept across runs, when the host gives one. */
  dataDir?: string;
}

/** A panel: a titled block of lines with a footer. */
export interface Panel {
  id: string;
  title: string;
  lines: string[];
  footer?: string;
}

/** A content block of a tool result. `data` is base64. */
export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "image"; mime_type: string; data: string }
  | { type: "audio"; mime_type: string; data: string }
  | { type: "resource"; resource: EmbeddedResource };

/** An embedded resource: its `uri`, and its `text` or its `blob` (base64). */
export type EmbeddedResource =
  | { uri: string; mime_type?: string; text: string }
  | { uri: string; mime_type?: string; blob: string };

/** A tool's whole answer: content, whether it failed, and optional structured content. */
export interface ToolOutput {
  content: string | ContentBlock[];
  isError?: boolean;
  structured?: unknown;
}

/** What a tool handler returns: a text, content blocks, or a whole {@link ToolOutput}. */
export type ToolResult = string | ContentBlock[] | ToolOutput;

/** What a command does: see {@link prompt}, {@link insert}, {@link display}, {@link panel}, {@link noop}. */
export type Response = (
  | { action: "prompt"; prompt: string }
  | { action: "insert"; insert: string }
  | { action: "display"; display: string }
  | { action: "open_panel"; panel: Panel }
  | { action: "noop" }
) & { error?: string };

/** What a command handler returns: a {@link Response}, or a text to show (display). */
export type CommandResult = string | Response;

/** An interceptor's answer: see {@link allow}, {@link block}, {@link modifyArgs}, {@link replaceText}. */
export type Verdict =
  | { kind: "allow" }
  | { kind: "block"; reason: string }
  | { kind: "modify_args"; args: Record<string, unknown> }
  | { kind: "replace_text"; text: string };

/** The lifecycle events an extension may observe (`subscribe.events`). */
export type EventName = "session_start" | "turn_start" | "turn_end" | "tool_call" | "assistant_message";

/** The events that may be intercepted (`subscribe.intercept`). */
export type InterceptName = "tool_call" | "turn_start" | "assistant_message";

/** An event's fields as the host sent them (`tool_name`, `tool_args`, `step`, `text`, …). */
export interface Event {
  event: string;
  [field: string]: unknown;
}

/** A key pressed in one of this extension's panels. */
export interface PanelKey {
  panelId: string;
  key: string;
  text?: string;
}

/** Lets it through unchanged. */
export const allow = (): Verdict => ({ kind: "allow" });
/** Stops it; for a tool call `reason` is the tool's error text for the model. */
export const block = (reason: string): Verdict => ({ kind: "block", reason });
/** Tool calls: run the tool with these arguments instead. */
export const modifyArgs = (args: Record<string, unknown>): Verdict => ({ kind: "modify_args", args });
/** Assistant messages: replace the text. */
export const replaceText = (text: string): Verdict => ({ kind: "replace_text", text });

/** Submit `text` as a user message. */
export const prompt = (text: string): Response => ({ action: "prompt", prompt: text });
/** Put `text` in the editor. */
export const insert = (text: string): Response => ({ action: "insert", insert: text });
/** Show `text` as a note (no model call, not in the transcript). */
export const display = (text: string): Response => ({ action: "display", display: text });
/** Open a panel. */
export const panel = (p: Panel): Response => ({ action: "open_panel", panel: p });
/** Do nothing. */
export const noop = (): Response => ({ action: "noop" });

/** A text content block. */
export const text = (t: string): ContentBlock => ({ type: "text", text: t });
/** An image content block (`data`: base64). */
export const image = (mimeType: string, data: string): ContentBlock => ({ type: "image", mime_type: mimeType, data });
/** An audio content block (`data`: base64). */
export const audio = (mimeType: string, data: string): ContentBlock => ({ type: "audio", mime_type: mimeType, data });
/** An embedded resource of text. */
export const resourceText = (uri: string, text: string, mimeType?: string): ContentBlock => ({
  type: "resource",
  resource: mimeType === undefined ? { uri, text } : { uri, mime_type: mimeType, text },
});
/** An embedded resource of binary content (`blob`: base64). */
export const resourceBlob = (uri: string, blob: string, mimeType?: string): ContentBlock => ({
  type: "resource",
  resource: mimeType === undefined ? { uri, blob } : { uri, mime_type: mimeType, blob },
});
