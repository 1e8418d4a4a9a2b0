import { stdio } from "./stdio.js";
import { DEFAULT_TRANSPORT, type Transport } from "./transport.js";
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
  /**
   * Says how this call is going (`tool_progress`): `progress` (rising) of `total`, and a
   * line of `text` (a status, or output so far); each optional. A host that does not know
   * the frame ignores it; `zot mcp` sends it to an MCP client that asked for progress.
   */
  progress(update: Progress): void;
}

/** One `tool_progress` of a running tool. */
export interface Progress {
  progress?: number;
  total?: number;
  text?: string;
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
  private readonly running = new Map<string, Aborter>();
  /** The `onStart` hooks, while one of them is still running. */
  private started: Promise<void> | undefined;
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
   * Speaks the protocol over `transport` (default: stdin/stdout, or the sandbox's in a
   * component build): `hello`, the registrations, `subscribe`, `ready`, then the host's
   * frames until `shutdown` (answered with `shutdown_ack`) or the end of input.
   */
  run(transport: Transport = defaultTransport()): void {
    this.transport = transport;
    for (const frame of this.announcement()) this.send(frame);
    transport.start(
      (line) => this.receive(line),
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

  /** One line from the host; the promise of its handling when that is not done at once. */
  private receive(line: string): void | Promise<void> {
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
      const started = this.all(this.starts.map((h) => () => h(this)), "onStart");
      if (started instanceof Promise) {
        this.started = started.then(() => {
          this.started = undefined;
        });
      }
      return started;
    }
    // Requests wait for the start hooks; tool_cancel and shutdown never wait.
    if (frame.type === "tool_cancel") {
      this.running.get(String(frame.id))?.abort();
      return;
    }
    if (frame.type === "shutdown") return this.shutdown();
    let handle: () => void | Promise<void>;
    if (frame.type === "tool_call") {
      // Registered at once, so a tool_cancel right behind it finds the call.
      const id = String(frame.id);
      const abort = aborter();
      this.running.set(id, abort);
      handle = () => this.onTool(id, String(frame.name), frame.args, abort);
    } else {
      handle = () => this.dispatch(frame);
    }
    return this.started ? this.started.then(handle) : handle();
  }

  private dispatch(frame: Frame): void | Promise<void> {
    switch (frame.type) {
      case "command_invoked":
        return this.onCommand(String(frame.id), String(frame.name), typeof frame.args === "string" ? frame.args : "");
      case "event":
        return this.all((this.events.get(String(frame.event)) ?? []).map((h) => () => h(eventOf(frame), this)), `event ${frame.event}`);
      case "event_intercept":
        return this.onIntercept(String(frame.id), eventOf(frame));
      case "panel_key": {
        const key: PanelKey = { panelId: String(frame.panel_id), key: String(frame.key ?? "") };
        if (typeof frame.text === "string") key.text = frame.text;
        return this.all(this.panelKeys.map((h) => () => h(key, this)), "panel_key");
      }
      case "panel_resize": {
        const r = { panelId: String(frame.panel_id), width: Number(frame.width), height: Number(frame.height) };
        return this.all(this.panelResizes.map((h) => () => h(r, this)), "panel_resize");
      }
      case "panel_close":
        return this.all(this.panelCloses.map((h) => () => h(String(frame.panel_id), this)), "panel_close");
      default:
        // Frames of later protocol additions this SDK does not handle (and tool_result
        // answers it never asked for) are skipped, as the protocol says.
        return;
    }
  }

  private onCommand(id: string, name: string, args: string): void | Promise<void> {
    const command = this.commands.get(name);
    const answer = (response: Response) => {
      const { action, error, ...fields } = response as Response & Record<string, unknown>;
      const frame: Frame = { type: "command_response", id, action };
      if (action === "open_panel") frame.open_panel = panelFrame((response as { panel: Panel }).panel);
      else Object.assign(frame, fields);
      if (error) frame.error = error;
      this.send(frame);
    };
    if (!command) return answer({ action: "noop", error: `${this.name}: no command /${name}` });
    return this.settle(`/${name}`, () => command.handler(args, this), (outcome) => {
      if (outcome.ok) {
        answer(typeof outcome.value === "string" ? { action: "display", display: outcome.value } : outcome.value);
      } else {
        this.log(`zot-ext: /${name} failed: ${describe(outcome.error)}`);
        answer({ action: "noop", error: `/${name} failed: ${message(outcome.error)}` });
      }
    });
  }

  private onTool(id: string, name: string, args: unknown, abort: Aborter): void | Promise<void> {
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
    const progress = (update: Progress): void => {
      const frame: Frame = { type: "tool_progress", id };
      if (update.progress !== undefined) frame.progress = update.progress;
      if (update.total !== undefined) frame.total = update.total;
      if (update.text !== undefined) frame.text = update.text;
      this.send(frame);
    };
    const ctx: ToolCtx = Object.assign(Object.create(this) as Extension, { callId: id, signal: abort.signal, progress });
    return this.settle(`tool ${name}`, () => tool.handler((args ?? {}) as never, ctx), (outcome) => {
      this.running.delete(id);
      if (abort.signal.aborted) {
        this.log(`zot-ext: tool call ${id} (${name}) was cancelled; its result is not sent`);
        return;
      }
      if (outcome.ok) {
        this.send(toolFrame(id, outcome.value));
      } else {
        this.log(`zot-ext: tool ${name} failed: ${describe(outcome.error)}`);
        this.send(toolFrame(id, { content: `tool ${name} failed: ${message(outcome.error)}`, isError: true }));
      }
    });
  }

  private onIntercept(id: string, event: Event): void | Promise<void> {
    const handler = this.interceptors.get(event.event);
    const answer = (verdict: Verdict) => {
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
    };
    if (!handler) return answer({ kind: "allow" });
    return this.settle(`the interceptor of ${event.event}`, () => handler(event, this), (outcome) => {
      if (outcome.ok) return answer(outcome.value ?? { kind: "allow" });
      this.log(`zot-ext: interceptor of ${event.event} failed (allowed): ${describe(outcome.error)}`);
      answer({ kind: "allow" });
    });
  }

  /** `onShutdown` hooks (bounded), then `shutdown_ack`, then exit. */
  private shutdown(): void | Promise<void> {
    if (this.closing) return;
    this.closing = true;
    for (const abort of this.running.values()) abort.abort();
    const finish = () => {
      this.stopping = true;
      this.send({ type: "shutdown_ack" });
      this.transport?.exit(0);
    };
    const hooks = this.all(this.shutdowns.map((h) => () => h(this)), "onShutdown");
    if (!(hooks instanceof Promise)) return finish();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, SHUTDOWN_GRACE_MS);
    });
    return Promise.race([hooks, grace]).then(() => {
      clearTimeout(timer);
      finish();
    });
  }

  /**
   * Runs `hooks` (each may be async: those run concurrently); a failure is logged,
   * never thrown. Done at once when no hook returned a promise.
   */
  private all(hooks: Array<() => Awaitable<void>>, what: string): void | Promise<void> {
    const waits: Promise<void>[] = [];
    for (const hook of hooks) {
      const waiting = this.settle(`a ${what} handler`, hook, (outcome) => {
        if (!outcome.ok) this.log(`zot-ext: ${what} handler failed: ${describe(outcome.error)}`);
      });
      if (waiting) waits.push(waiting);
    }
    if (waits.length > 0) return Promise.all(waits).then(() => undefined);
  }

  /**
   * Calls `run` and gives its outcome to `done`: at once when it returned a value or
   * threw, once it settles when it returned a promise (whose promise is returned). Where
   * the transport runs nothing after a line is handled, a promise is a failure at once.
   */
  private settle<T>(what: string, run: () => Awaitable<T>, done: (outcome: Outcome<T>) => void): void | Promise<void> {
    let value: Awaitable<T>;
    try {
      value = run();
    } catch (error) {
      return done({ ok: false, error });
    }
    if (!isThenable(value)) return done({ ok: true, value });
    if (this.transport?.eventLoop === false) {
      return done({
        ok: false,
        error: new Error(
          `${what} returned a promise, and this build runs nothing after a frame is handled ` +
            "(a QuickJS component has no event loop): make the handler synchronous",
        ),
      });
    }
    return Promise.resolve(value).then(
      (v) => done({ ok: true, value: v }),
      (error: unknown) => done({ ok: false, error }),
    );
  }
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/** What aborts a tool call's signal. */
interface Aborter {
  readonly signal: AbortSignal;
  abort(): void;
}

/**
 * An `AbortController`, or where the runtime has none (a QuickJS component) a signal
 * with what handlers use of one: `aborted`, `reason`, `onabort`, `throwIfAborted()` and
 * `addEventListener`/`removeEventListener("abort")`.
 */
function aborter(): Aborter {
  if (typeof AbortController === "function") return new AbortController();
  const listeners = new Set<(event: unknown) => void>();
  const signal = {
    aborted: false,
    reason: undefined as unknown,
    onabort: null as ((event: unknown) => void) | null,
    throwIfAborted() {
      if (signal.aborted) throw signal.reason;
    },
    addEventListener(type: string, listener: (event: unknown) => void) {
      if (type === "abort") listeners.add(listener);
    },
    removeEventListener(type: string, listener: (event: unknown) => void) {
      if (type === "abort") listeners.delete(listener);
    },
  };
  return {
    signal: signal as unknown as AbortSignal,
    abort() {
      if (signal.aborted) return;
      signal.aborted = true;
      signal.reason = new Error("This operation was aborted");
      const event = { type: "abort", target: signal };
      signal.onabort?.(event);
      for (const listener of listeners) listener(event);
    },
  };
}

/** The transport a component build installed, else Node's stdin and stdout. */
function defaultTransport(): Transport {
  const installed = (globalThis as Record<symbol, unknown>)[DEFAULT_TRANSPORT];
  return (installed as Transport | undefined) ?? stdio();
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
