import type { Transport } from "./transport.js";

/** The parts of Node's `process` this transport uses (no `@types/node` needed). */
interface Stream {
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  on(event: "end" | "close", listener: () => void): unknown;
  on(event: "error", listener: (error: unknown) => void): unknown;
}
interface Writable {
  write(data: string, done?: (error?: unknown) => void): boolean;
  on(event: "error", listener: (error: unknown) => void): unknown;
}
declare const process: {
  stdin: Stream;
  stdout: Writable;
  stderr: Writable;
  exit(code: number): never;
};

const NEWLINE = 0x0a;

/**
 * Node's stdin and stdout: lines of any length (a line's chunks are kept and joined
 * once, never re-scanned), decoded as UTF-8 whole so no character is split.
 */
export function stdio(): Transport {
  let ended = false;
  // A closed stdout (the host went away) must not crash the extension mid-handler.
  process.stdout.on("error", () => {});
  return {
    start(onLine, onEnd) {
      const decoder = new TextDecoder();
      let parts: Uint8Array[] = [];
      const finish = () => {
        if (ended) return;
        ended = true;
        onEnd();
      };
      const emit = (bytes: Uint8Array) => {
        let text = decoder.decode(bytes);
        if (text.endsWith("\r")) text = text.slice(0, -1);
        onLine(text);
      };
      process.stdin.on("data", (chunk) => {
        let from = 0;
        for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, from)) {
          const piece = chunk.subarray(from, at);
          if (parts.length === 0) {
            emit(piece);
          } else {
            parts.push(piece);
            emit(join(parts));
            parts = [];
          }
          from = at + 1;
        }
        if (from < chunk.length) parts.push(chunk.subarray(from));
      });
      process.stdin.on("end", finish);
      process.stdin.on("close", finish);
      process.stdin.on("error", finish);
    },
    write(line) {
      process.stdout.write(line + "\n");
    },
    log(message) {
      process.stderr.write(message + "\n");
    },
    exit(code) {
      // stdout's writes are queued in order: this callback runs after all of them.
      process.stdout.write("", () => process.exit(code));
    },
  };
}

/** The bytes of `parts`, one after the other. */
function join(parts: Uint8Array[]): Uint8Array {
  let size = 0;
  for (const p of parts) size += p.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
