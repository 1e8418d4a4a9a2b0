/** The WIT interface `zot:extension/host@0.1.0`, as a component's JavaScript imports it. */
declare module "zot:extension/host@0.1.0" {
  /** Sends one frame (the JSON text, no newline) to the host. */
  export function send(frame: string): void;
  /** Writes one line to the extension's log at `level` (debug, info, warn, error). */
  export function log(level: string, message: string): void;
}
