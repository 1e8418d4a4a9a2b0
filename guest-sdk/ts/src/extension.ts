import { stdio } from "./stdio.js";
import type { Transport } from "./transport.js";
import type {
  CommandResult, ContentBlock, Event, EventName, HostInfo, InterceptName, Level, Panel,
  PanelKey, Response, ToolResult, Verdict,
} from "./types.js";

/** A value or a promise of it: every handler may be async. */
export type Awaitable<T> = T | Promise<T>;

/** A JSON Schema object for a tool's arguments. */
export type Schema = Record<string, unknown>;

/** What every handler gets: the host, the data dir, and frames to send at any time. */
export interface Ctx {
  /** The host's `hello_ack`; set before any handler runs. */
  readonly host: HostInfo;
  /** The extension's own folder that survives restarts (`hello_ack.data_dir`), if given. */
  readonly dataDir: string | undefined;
  /** Shows a note to the user. */
  notify(level: Level, message: string): void;
  /** Retracts every note this extension pushed. */
  clearNotes(): void;
  /** Opens a panel. */
  openPanel(panel: Panel): void;
  /** Redraws an open panel. */
  renderPanel(panel: Panel): void;
  /** Closes a panel. */
  closePanel(panelId: string): void;
  /** Queues a user prompt. */
  submit(text: string): void;
  /** Runs a slash command (`/name args`) as if typed. */
  submitSlash(text: string): void;
  /** Writes a line to the extension's log (stderr). */
  log(message: string): void;
}

/** What a tool handler gets besides: its call and the signal of its cancellation. */
export interface ToolCtx extends Ctx {
  /** The id of this tool call. */
  readonly callId: string;
  /** Aborted when the host abandons the call (`tool_cancel`: timeout or user abort). */
  readonly signal: AbortSignal;
}

export type CommandHandler = (args: string, ctx: Ctx) => Awaitable<CommandResult>;
export type ToolHandler<A = Record<string, unknown>> = (args: A, ctx: ToolCtx) => Awaitable<ToolResult>;
export type EventHandler = (event: Event, ctx: Ctx) => Awaitable<void>;
export type InterceptHandler = (event: Event, ctx: Ctx) => Awaitable<Verdict | void>;

/** How long `shutdown` waits for the `onShutdown` handlers (the host waits 2 s in all). */
const SHUTDOWN_GRACE_MS = 1500;

type Frame = { type: string; [field: string]: unknown };

interface Tool {
  description: string;
  schema: Schema;
  handler: ToolHandler<never>;
}

/**
 * A zot extension: register its commands, tools, event handlers and interceptors, then
 * {@link Extension.run}. Handlers may be async; calls run concurrently.
 */
export class Extension implements Ctx {
  private readonly commands = new Map<string, { description: string; handler: CommandHandler }>();
  private readonly tools = new Map<string, Tool>();
  private readonly events = new Map<string, EventHandler[]>();
  private readonly interceptors = new Map<string, InterceptHandler>();
  private readonly panelKeys: Array<(key: PanelKey, ctx: Ctx) => Awaitable<void>> = [];
  private readonly panelResizes: Array<(r: { panelId: string; width: number; height: number }, ctx: Ctx) => Awaitable<void>> = [];
  private readonly panelCloses: Array<(panelId: string, ctx: Ctx) => Awaitable<void>> = [];
  private readonly starts: Array<(ctx: Ctx) => Awaitable<void>> = [];
  private readonly shutdowns: Array<(ctx: Ctx) => Awaitable<void>> = [];
  /** Tool calls running, by id. */
  private readonly running = new Map<string, AbortController>();
  private transport: Transport | undefined;
  private hostInfo: HostInfo | undefined;
  /** `shutdown` arrived: its hooks run, then only `shutdown_ack` is sent. */
  private closing = false;
  private stopping = false;

  constructor(readonly name: string, readonly version: string) {}

  /** A slash command `/name`; the handler gets the text after the name, trimmed. */
  command(name: string, description: string, handler: CommandHandler): this {
    this.commands.set(name, { description, handler });
    return this;
  }

  /**
   * An LLM tool. `schema` is the JSON Schema (an object) of its arguments; the handler
   * gets them and returns a text, content blocks or a {@link ToolOutput}; a throw is an
   * error result with its message.
   */
  tool<A = Record<string, unknown>>(name: string, description: string, schema: Schema, handler: ToolHandler<A>): this {
    if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
      throw new TypeError(`the schema of tool ${JSON.stringify(name)} must be a JSON object`);
    }
    this.tools.set(name, { description, schema, handler: handler as ToolHandler<never> });
    return this;
  }

  /** Observes a lifecycle event; several handlers may observe one. */
  on(event: EventName, handler: EventHandler): this {
    const list = this.events.get(event) ?? [];
    list.push(handler);
    this.events.set(event, list);
    return this;
  }

  /**
   * Decides on an event before it happens: return {@link allow} (or nothing),
   * {@link block}, {@link modifyArgs} (`tool_call`) or {@link replaceText}
   * (`assistant_message`). A throw allows it (and is logged).
   */
  intercept(event: InterceptName, handler: InterceptHandler): this {
    this.interceptors.set(event, handler);
    return this;
  }

  /** A key pressed in one of this extension's panels. */
  onPanelKey(handler: (key: PanelKey, ctx: Ctx) => Awaitable<void>): this {
    this.panelKeys.push(handler);
    return this;
  }

  /** One of this extension's panels was resized. */
  onPanelResize(handler: (r: { panelId: string; width: number; height: number }, ctx: Ctx) => Awaitable<void>): this {
    this.panelResizes.push(handler);
    return this;
  }

  /** The user closed one of this extension's panels. */
  onPanelClose(handler: (panelId: string, ctx: Ctx) => Awaitable<void>): this {
    this.panelCloses.push(handler);
    return this;
  }

  /** Runs once `hello_ack` arrived, before the host's requests are handled. */
  onStart(handler: (ctx: Ctx) => Awaitable<void>): this {
    this.starts.push(handler);
    return this;
  }

  /** Runs when the host asks the extension to stop, before `shutdown_ack` (keep it short). */
  onShutdown(handler: (ctx: Ctx) => Awaitable<void>): this {
    this.shutdowns.push(handler);
    return this;
  }

  /**
   * Speaks the protocol over `transport` (default: stdin/stdout): `hello`, the
   * registrations, `subscribe`, `ready`, then the host's frames until `shutdown` (answered
   * with `shutdown_ack`) or the end of input.
   */
  run(transport: Transport = stdio()): void {
    this.transport = transport;
    for (const frame of this.announcement()) this.send(frame);
    let started: Promise<void> = Promise.resolve();
    transport.start(
      (line) => {
        let frame: Frame;
        try {
          frame = JSON.parse(line) as Frame;
        } catch {
          this.log(`zot-ext: skipped a line from the host that is not JSON (${line.length} chars)`);
          return;
        }
        if (typeof frame !== "object" || frame === null || typeof frame.type !== "string") {
          this.log("zot-ext: skipped a line from the host that is not a frame");
          return;
        }
        if (frame.type === "hello_ack") {
          this.hostInfo = hostInfo(frame);
          started = this.all(this.starts.map((h) => () => h(this)), "onStart");
          return;
        }
        // Requests wait for the start hooks; tool_cancel and shutdown never wait.
        if (frame.type === "tool_cancel") {
          this.running.get(String(frame.id))?.abort();
          return;
        }
        if (frame.type === "shutdown") {
          void this.shutdown();
          return;
        }
        if (frame.type === "tool_call") {
          // Registered at once, so a tool_cancel right behind it finds the call.
          const id = String(frame.id);
          const abort = new AbortController();
          this.running.set(id, abort);
          void started.then(() => this.onTool(id, String(frame.name), frame.args, abort));
          return;
        }
        void started.then(() => this.dispatch(frame));
      },
      () => this.transport?.exit(0),
    );
  }

  // --- Ctx ----------------------------------------------------------------------

  get host(): HostInfo {
    return this.hostInfo ?? { protocolVersion: 1, zotVersion: "", provider: "", model: "", cwd: "" };
  }

  get dataDir(): string | undefined {
    return this.hostInfo?.dataDir;
  }

  notify(level: Level, message: string): void {
    this.send({ type: "notify", level, message });
  }

  clearNotes(): void {
    this.send({ type: "clear_notes" });
  }

  openPanel(panel: Panel): void {
    this.send({ type: "open_panel", panel: panelFrame(panel) });
  }

  renderPanel(panel: Panel): void {
    const { id, ...rest } = panelFrame(panel);
    this.send({ type: "panel_render", panel_id: id, ...rest });
  }

  closePanel(panelId: string): void {
    this.send({ type: "panel_close", panel_id: panelId });
  }

  submit(text: string): void {
    this.send({ type: "submit", text });
  }

  submitSlash(text: string): void {
    this.send({ type: "submit_slash", text });
  }

  log(message: string): void {
    this.transport?.log(message);
  }

  // --- the protocol -------------------------------------------------------------

  private send(frame: Frame): void {
    if (this.stopping && frame.type !== "shutdown_ack") return;
    this.transport?.write(JSON.stringify(frame));
  }

  /** `hello`, the registrations, `subscribe` and `ready`. */
  private announcement(): Frame[] {
    const events = [...this.events.keys()];
    const intercept = [...this.interceptors.keys()];
    const panels = this.panelKeys.length + this.panelResizes.length + this.panelCloses.length > 0;
    const capabilities = (
      [
        ["commands", this.commands.size > 0],
        ["tools", this.tools.size > 0],
        ["events", events.length + intercept.length > 0],
        ["panels", panels],
      ] as const
    ).filter(([, on]) => on).map(([c]) => c);
    const frames: Frame[] = [{ type: "hello", name: this.name, version: this.version, capabilities }];
    for (const [name, c] of this.commands) {
      frames.push({ type: "register_command", name, description: c.description });
    }
    for (const [name, t] of this.tools) {
      frames.push({ type: "register_tool", name, description: t.description, schema: t.schema });
    }
    if (events.length + intercept.length > 0) frames.push({ type: "subscribe", events, intercept });
    frames.push({ type: "ready" });
    return frames;
  }

  private async dispatch(frame: Frame): Promise<void> {
    switch (frame.type) {
      case "command_invoked":
        return this.onCommand(String(frame.id), String(frame.name), typeof frame.args === "string" ? frame.args : "");
      case "event":
        await this.all((this.events.get(String(frame.event)) ?? []).map((h) => () => h(eventOf(frame), this)), `event ${frame.event}`);
        return;
      case "event_intercept":
        return this.onIntercept(String(frame.id), eventOf(frame));
      case "panel_key": {
        const key: PanelKey = { panelId: String(frame.panel_id), key: String(frame.key ?? "") };
        if (typeof frame.text === "string") key.text = frame.text;
        await this.all(this.panelKeys.map((h) => () => h(key, this)), "panel_key");
        return;
      }
      case "panel_resize": {
        const r = { panelId: String(frame.panel_id), width: Number(frame.width), height: Number(frame.height) };
        await this.all(this.panelResizes.map((h) => () => h(r, this)), "panel_resize");
        return;
      }
      case "panel_close":
        await this.all(this.panelCloses.map((h) => () => h(String(frame.panel_id), this)), "panel_close");
        return;
      default:
        // Frames of later protocol additions this SDK does not handle (and tool_result
        // answers it never asked for) are skipped, as the protocol says.
        return;
    }
  }

  private async onCommand(id: string, name: string, args: string): Promise<void> {
    const command = this.commands.get(name);
    let response: Response;
    if (!command) {
      response = { action: "noop", error: `${this.name}: no command /${name}` };
    } else {
      try {
        const result = await command.handler(args, this);
        response = typeof result === "string" ? { action: "display", display: result } : result;
      } catch (e) {
        this.log(`zot-ext: /${name} failed: ${describe(e)}`);
        response = { action: "noop", error: `/${name} failed: ${message(e)}` };
      }
    }
    const { action, error, ...fields } = response as Response & Record<string, unknown>;
    const frame: Frame = { type: "command_response", id, action };
    if (action === "open_panel") frame.open_panel = panelFrame((response as { panel: Panel }).panel);
    else Object.assign(frame, fields);
    if (error) frame.error = error;
    this.send(frame);
  }

  private async onTool(id: string, name: string, args: unknown, abort: AbortController): Promise<void> {
    const tool = this.tools.get(name);
    if (!tool) {
      this.running.delete(id);
      this.send(toolFrame(id, { content: `${this.name}: no tool ${name}`, isError: true }));
      return;
    }
    if (abort.signal.aborted) {
      this.running.delete(id);
      this.log(`zot-ext: tool call ${id} (${name}) was cancelled before it started`);
      return;
    }
    const ctx: ToolCtx = Object.assign(Object.create(this) as Extension, { callId: id, signal: abort.signal });
    let result: ToolResult;
    try {
      result = await tool.handler((args ?? {}) as never, ctx);
    } catch (e) {
      if (!abort.signal.aborted) this.log(`zot-ext: tool ${name} failed: ${describe(e)}`);
      result = { content: `tool ${name} failed: ${message(e)}`, isError: true };
    } finally {
      this.running.delete(id);
    }
    if (abort.signal.aborted) {
      this.log(`zot-ext: tool call ${id} (${name}) was cancelled; its result is not sent`);
      return;
    }
    this.send(toolFrame(id, result));
  }

  private async onIntercept(id: string, event: Event): Promise<void> {
    const handler = this.interceptors.get(event.event);
    let verdict: Verdict = { kind: "allow" };
    if (handler) {
      try {
        verdict = (await handler(event, this)) ?? verdict;
      } catch (e) {
        this.log(`zot-ext: interceptor of ${event.event} failed (allowed): ${describe(e)}`);
      }
    }
    const frame: Frame = { type: "event_intercept_response", id };
    switch (verdict.kind) {
      case "allow":
        break;
      case "block":
        frame.block = true;
        frame.reason = verdict.reason;
        break;
      case "modify_args":
        frame.modified_args = verdict.args;
        break;
      case "replace_text":
        frame.replace_text = verdict.text;
        break;
    }
    this.send(frame);
  }

  /** `onShutdown` hooks (bounded), then `shutdown_ack`, then exit. */
  private async shutdown(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    for (const abort of this.running.values()) abort.abort();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, SHUTDOWN_GRACE_MS);
    });
    await Promise.race([this.all(this.shutdowns.map((h) => () => h(this)), "onShutdown"), grace]);
    clearTimeout(timer);
    this.stopping = true;
    this.send({ type: "shutdown_ack" });
    this.transport?.exit(0);
  }

  /** Runs `hooks` concurrently; a failure is logged, never thrown. */
  private async all(hooks: Array<() => Awaitable<void>>, what: string): Promise<void> {
    await Promise.all(
      hooks.map(async (hook) => {
        try {
          await hook();
        } catch (e) {
          this.log(`zot-ext: ${what} handler failed: ${describe(e)}`);
        }
      }),
    );
  }
}

/** An extension named `name` (the manifest's name) at `version`. */
export function extension(options: { name: string; version: string }): Extension {
  return new Extension(options.name, options.version);
}

function hostInfo(ack: Frame): HostInfo {
  const str = (v: unknown) => (typeof v === "string" ? v : "");
  const info: HostInfo = {
    protocolVersion: typeof ack.protocol_version === "number" ? ack.protocol_version : 1,
    zotVersion: str(ack.zot_version),
    provider: str(ack.provider),
    model: str(ack.model),
    cwd: str(ack.cwd),
  };
  if (typeof ack.extension_dir === "string") info.extensionDir = ack.extension_dir;
  if (typeof ack.data_dir === "string") info.dataDir = ack.data_dir;
  return info;
}

/** An `event` or `event_intercept` frame as its handler sees it. */
function eventOf(frame: Frame): Event {
  const { type: _type, id: _id, ...fields } = frame;
  return { ...fields, event: String(frame.event) };
}

function panelFrame(p: Panel): { id: string; title: string; lines: string[]; footer?: string } {
  const frame: { id: string; title: string; lines: string[]; footer?: string } = { id: p.id, title: p.title, lines: p.lines };
  if (p.footer !== undefined) frame.footer = p.footer;
  return frame;
}

function toolFrame(id: string, result: ToolResult): Frame {
  const output = typeof result === "string" || Array.isArray(result) ? { content: result } : result;
  const content: ContentBlock[] = typeof output.content === "string" ? [{ type: "text", text: output.content }] : output.content;
  const frame: Frame = { type: "tool_result", id, content, is_error: output.isError === true };
  if (output.structured !== undefined) frame.structured_content = output.structured;
  return frame;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function describe(e: unknown): string {
  return e instanceof Error ? (e.stack ?? e.message) : String(e);
}
