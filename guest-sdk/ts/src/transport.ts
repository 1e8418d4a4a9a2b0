/**
 * How frames move: the one thing a host environment provides. `stdio()` (stdio.ts) is
 * Node's stdin/stdout; a sandboxed build plugs in its own.
 */
export interface Transport {
  /**
   * Starts reading: `onLine` gets every line from the host without its `\n` (nor a
   * trailing `\r`), whatever its length; `onEnd` once when the input ends.
   */
  start(onLine: (line: string) => void, onEnd: () => void): void;
  /** Writes one line (the transport appends the `\n`), in call order. */
  write(line: string): void;
  /** Writes a diagnostic to the extension's log (stderr), never to the frame stream. */
  log(message: string): void;
  /** Ends the extension with `code` once every line written so far is out. */
  exit(code: number): void;
}
