#!/usr/bin/env python3
"""py-mcp: a small MCP stdio server for zot's tests (Python 3, stdlib only).

Hand-written JSON-RPC 2.0, one message per line on stdin/stdout; logs on stderr.
Each tools/call runs in a thread of its own, so a slow call never blocks reading.

Usage: server.py [--marker-dir DIR] [--extra-tools N] [--only-2026]
  (marker files go to DIR, default: the cwd; --extra-tools adds N tools t0000…, listed only;
  --only-2026: it speaks MCP 2026-07-28 only — `server/discover`, `subscriptions/listen`
  for tool list changes — and refuses `initialize`)

tools/list answers in pages of 500 tools.

Tools:
  echo  {text}     text block, structuredContent {"echo": text} (has an outputSchema)
  fail  {}         isError, "it failed on purpose"
  slow  {seconds}  sleeps, then "slept"; a notifications/cancelled for it stops it,
                   writes the marker cancelled-slow (the requestId) and sends no answer
  crash {}         writes the marker `crashing`, exits with status 3 without answering
  grow  {}         adds the tool `late` ("late tool"), answers "grown", then sends
                   notifications/tools/list_changed
  log   {message}  sends notifications/message (level warning), answers "logged"
  image {}         an image block (image/png) and a text block
  env   {name}     the env var's value, or "unset"
  progress {}      with a progressToken: notifications/progress 1, 2, 3 of 3 ("step N"),
                   50 ms apart, then 50 ms later "progressed"; without one "no token"
"""
import argparse
import base64
import json
import os
import sys
import threading
import time

VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()

OPEN = {"type": "object", "properties": {}}
TOOLS = [
    {"name": "echo", "description": "Echoes text.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                     "required": ["text"]},
     "outputSchema": {"type": "object", "properties": {"echo": {"type": "string"}},
                      "required": ["echo"]}},
    {"name": "fail", "description": "Fails on purpose.", "inputSchema": OPEN},
    {"name": "slow", "description": "Sleeps; cancellable.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
    {"name": "crash", "description": "Exits mid-call.", "inputSchema": OPEN},
    {"name": "grow", "description": "Adds the tool `late`.", "inputSchema": OPEN},
    {"name": "log", "description": "Sends a log message.",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
    {"name": "image", "description": "Returns an image.", "inputSchema": OPEN},
    {"name": "media", "description": "Returns audio and embedded resources.",
     "inputSchema": OPEN},
    {"name": "progress", "description": "Reports progress.", "inputSchema": OPEN},
    {"name": "env", "description": "Reads an env var.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                     "required": ["name"]}},
]
LATE = {"name": "late", "description": "Added by grow.", "inputSchema": OPEN}
PAGE = 500

lock = threading.Lock()  # guards stdout, `tools` and `cancels`
tools = list(TOOLS)
cancels = {}  # json.dumps(request id) -> threading.Event of a call in progress
marker_dir = "."
only_2026 = False
listening = []  # the request ids of open `subscriptions/listen` for tool list changes


def log(msg):
    print(f"py-mcp: {msg}", file=sys.stderr, flush=True)


def send(msg):
    line = json.dumps(msg, ensure_ascii=False, separators=(",", ":")) + "\n"
    with lock:
        sys.stdout.buffer.write(line.encode())
        sys.stdout.buffer.flush()


def reply(rid, result):
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def error(rid, code, message):
    send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def text(t, is_error=False):
    result = {"content": [{"type": "text", "text": t}]}
    if is_error:
        result["isError"] = True
    return result


def marker(name, content):
    with open(os.path.join(marker_dir, name), "w") as f:
        f.write(content)


def call(rid, name, args, cancelled, token=None):
    """Runs tool `name` for request `rid`; answers unless cancelled."""
    if name == "progress":
        if token is None:
            reply(rid, text("no token"))
            return
        for i in range(3):
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": token, "progress": i + 1, "total": 3,
                             "message": "step %d" % (i + 1)}})
            time.sleep(0.05)
        reply(rid, text("progressed"))
    elif name == "echo":
        t = str(args.get("text", ""))
        reply(rid, {**text(t), "structuredContent": {"echo": t}})
    elif name == "fail":
        reply(rid, text("it failed on purpose", is_error=True))
    elif name == "slow":
        deadline = time.monotonic() + float(args.get("seconds", 1))
        while time.monotonic() < deadline:
            if cancelled.wait(min(0.05, max(0.0, deadline - time.monotonic()))):
                marker("cancelled-slow", rid if isinstance(rid, str) else json.dumps(rid))
                log(f"slow call {rid} cancelled")
                return
        reply(rid, text("slept"))
    elif name == "crash":
        marker("crashing", str(os.getpid()))
        os._exit(3)
    elif name == "grow":
        with lock:
            if LATE not in tools:
                tools.append(LATE)
        reply(rid, text("grown"))
        tools_changed()
    elif name == "log":
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "warning", "logger": "py-mcp",
                         "data": args.get("message", "")}})
        reply(rid, text("logged"))
    elif name == "image":
        reply(rid, {"content": [{"type": "image", "data": PNG, "mimeType": "image/png"},
                                {"type": "text", "text": "an image"}]})
    elif name == "media":
        reply(rid, {"content": [
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///notes.md",
                                              "mimeType": "text/markdown", "text": "# notes"}},
            {"type": "resource", "resource": {"uri": "file:///x.bin", "blob": "AAE="}}]})
    elif name == "env":
        reply(rid, text(os.environ.get(str(args.get("name", "")), "unset")))
    elif name == "late" and LATE in tools:
        reply(rid, text("late tool"))
    else:
        error(rid, -32602, f"unknown tool: {name}")


def tools_changed():
    """Says the tool list changed: on each open listen stream under 2026-07-28, else
    on the one stream."""
    if not only_2026:
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return
    with lock:
        streams = list(listening)
    for sid in streams:
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
              "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": sid}}})


def run_call(rid, name, args, cancelled, token):
    try:
        call(rid, name, args, cancelled, token)
    except Exception as e:  # a fixture bug: say so rather than hang the client
        log(f"tool {name} raised {e!r}")
        error(rid, -32603, f"tool {name} raised {e!r}")
    finally:
        with lock:
            cancels.pop(json.dumps(rid), None)


def handle(msg):
    method, rid = msg.get("method"), msg.get("id")
    params = msg.get("params")
    params = params if isinstance(params, dict) else {}
    if method is None:
        return  # a response to nothing we asked, or junk
    if "id" not in msg:  # a notification
        if method == "notifications/cancelled":
            with lock:
                event = cancels.get(json.dumps(params.get("requestId")))
            if event:
                event.set()
        return
    if method == "initialize" and only_2026:
        error(rid, -32602, "this server speaks only MCP 2026-07-28 (server/discover)")
    elif method == "server/discover":
        if not only_2026:
            error(rid, -32601, f"method not found: {method}")
            return
        reply(rid, {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {"listChanged": True}},
                    "ttlMs": 0, "cacheScope": "private",
                    "_meta": {"io.modelcontextprotocol/serverInfo":
                              {"name": "py-mcp-2026", "version": "2.0.0"}}})
    elif method == "subscriptions/listen" and only_2026:
        asked = (params.get("notifications") or {}).get("toolsListChanged") is True
        with lock:
            if asked:
                listening.append(rid)
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": rid},
                         "notifications": {"toolsListChanged": True} if asked else {}}})
    elif method == "initialize":
        asked = params.get("protocolVersion")
        reply(rid, {"protocolVersion": asked if asked in VERSIONS else VERSIONS[0],
                    "capabilities": {"tools": {"listChanged": True}, "logging": {}},
                    "serverInfo": {"name": "py-mcp", "version": "1.2.3"}})
    elif method == "ping":
        reply(rid, {})
    elif method == "tools/list":
        with lock:
            listed = list(tools)
        start = int(params.get("cursor") or 0)
        page = {"tools": listed[start:start + PAGE]}
        if start + PAGE < len(listed):
            page["nextCursor"] = str(start + PAGE)
        reply(rid, page)
    elif method == "tools/call":
        cancelled = threading.Event()
        with lock:
            cancels[json.dumps(rid)] = cancelled
        args = params.get("arguments") or {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        token = meta.get("progressToken")
        threading.Thread(target=run_call,
                         args=(rid, params.get("name"), args, cancelled, token),
                         daemon=True).start()
    else:
        error(rid, -32601, f"method not found: {method}")


def main():
    global marker_dir, only_2026
    parser = argparse.ArgumentParser(description="py-mcp, an MCP stdio test server")
    parser.add_argument("--marker-dir", default=".")
    parser.add_argument("--extra-tools", type=int, default=0)
    parser.add_argument("--only-2026", action="store_true")
    args = parser.parse_args()
    marker_dir = args.marker_dir
    only_2026 = args.only_2026
    tools.extend({"name": "t%04d" % i, "description": "Listed only.", "inputSchema": OPEN}
                 for i in range(args.extra_tools))
    log(f"started pid={os.getpid()}")
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        try:
            msg = json.loads(raw.decode())
            if not isinstance(msg, dict):
                raise ValueError("not a JSON object")
        except ValueError as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            log(f"skipping a malformed line ({e}): {raw[:200]!r}")
            continue
        handle(msg)


if __name__ == "__main__":
    main()
