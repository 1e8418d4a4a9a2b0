/**
 * How frames move: the one thing a host environment provides. `stdio()` (stdio.ts) is
 * Node's stdin/stdout; `@zot/ext/component` (component.ts) is the sandbox's `host.send`
 * and `guest.handle`.
 */
export interface Transport {
  /**
   * Starts reading: `onLine` gets every line from the host without its `\n` (nor a
   * trailing `\r`), whatever its length, and returns the promise of its handling when
   * that is not done at once; `onEnd` once when the input ends.
   */
  start(onLine: (line: string) => void | Promise<void>, onEnd: () => void): void;
  /** Writes one line (the transport appends the `\n`), in call order. */
  write(line: string): void;
  /** Writes a diagnostic to the extension's log (stderr), never to the frame stream. */
  log(message: string): void;
  /** Ends the extension with `code` once every line written so far is out. */
  exit(code: number): void;
  /**
   * False when nothing runs once a line's handling returns: no promise callbacks, no
   * timers (a component built with QuickJS). A handler that returns a promise then fails
   * at once, saying so, instead of never answering. Default: true.
   */
  readonly eventLoop?: boolean;
}

/** Where a component build puts its transport, for `run()` to find (see component.ts). */
export const DEFAULT_TRANSPORT = Symbol.for("zot.ext.transport");
