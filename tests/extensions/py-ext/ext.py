#!/usr/bin/env python3
"""A configurable zot test extension (Python, stdlib only).

Usage: ext.py [--mode MODE] [--name NAME] [--commands a,b] [--tools a,b]
              [--events a,b] [--intercept a,b] [--no-ready] [--delay-ms N]
              [--touch FILE] [--exit-code N]

Modes:
  basic     (default) hello, register commands + tools, subscribe, ready, answer them
  legacy    like basic but never sends `ready` (older SDKs)
  guard     interceptor: blocks bash `rm -rf` and any call whose args hold
            "guard:refuse", rewrites args of `rewrite_me`,
            passes `read`, allows turn_start, redacts "secret" in assistant text
  garbage   non-JSON lines before hello, unknown/invalid frames after it, a garbage
            line before every tool result; otherwise basic
  nohello   never writes anything; reads stdin until EOF
  stubborn  ignores `shutdown`, stdin EOF and SIGTERM; spawns a grandchild
            (`sleep 1000`) and reports "pids <self> <grandchild>" in a notify
  exit      hello, then exits with --exit-code (default 2)
  mute      like basic, but never answers an event_intercept (notifies "ignoring <id>")

Every mode but nohello notifies "started pid=<pid> cwd=<cwd>" after its
registrations and writes "py-ext stderr: started <name>" to stderr.

Tools (behaviour chosen by the tool name's prefix, so `echo_3` echoes):
  echo   text = compact JSON of the args
  sleep  waits args.ms (default 1000) then answers "slept <ms>"
  crash  exits with status 3 mid-call (no answer)
  hang   never answers; notifies "hanging <id>"; a later tool_cancel for it is
         notified as "cancelled <id>"
  big    one block of args.bytes (default 20 MiB) of the test payload; args.kind
         "image" makes it an image block (mime image/png, data = the payload)
  huge   writes one line of args.bytes (default 100 MiB), then notifies
         "after-huge", then answers "huge done"
  fail   answers is_error: true with text "failed on purpose"
  progress  sends args.count (default 3) tool_progress frames (progress i+1 of count,
         text "step <i+1>" padded with args.pad bytes of "x"), each after args.gap_ms
         (default 0), then after that gap again answers "progressed"
  spawn  starts `sleep 1000` in its process group, answers "pid <its pid>"
  closeout  closes its stdout (no answer) and keeps running until its stdin ends
  other names echo like `echo`
Commands answer action "display" with display = the args.
Events received are notified as "event <json of the frame>", panel frames as
"panel_key <json>" (likewise panel_resize, panel_close).
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

ALL_EVENTS = ["session_start", "turn_start", "turn_end", "tool_call", "assistant_message"]
DEFAULT_TOOLS = ["echo", "sleep", "crash", "hang", "big", "huge", "fail"]

_lock = threading.Lock()


def emit(obj):
    line = json.dumps(obj, separators=(",", ":")) + "\n"
    with _lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def emit_raw(text):
    with _lock:
        sys.stdout.write(text)
        sys.stdout.flush()


def notify(message, level="info"):
    emit({"type": "notify", "level": level, "message": message})


def payload(n):
    """The test payload: block i is f"{i:015d}A" (valid base64 characters), cut to n."""
    blocks = (n + 15) // 16
    return "".join("%015dA" % i for i in range(blocks))[:n]


def parse_args(argv):
    opts = {
        "mode": "basic",
        "name": "py-ext",
        "commands": None,
        "tools": None,
        "events": None,
        "intercept": None,
        "ready": True,
        "delay_ms": 0,
        "touch": None,
        "exit_code": 2,
    }
    i = 0
    while i < len(argv):
        a = argv[i]
        v = argv[i + 1] if i + 1 < len(argv) else ""
        if a == "--no-ready":
            opts["ready"] = False
            i += 1
            continue
        key = a.lstrip("-").replace("-", "_")
        if key in ("commands", "tools", "events", "intercept"):
            opts[key] = [x for x in v.split(",") if x]
        elif key in ("delay_ms", "exit_code"):
            opts[key] = int(v)
        elif key in opts:
            opts[key] = v
        else:
            sys.stderr.write("py-ext: unknown option %r\n" % a)
        i += 2
    mode = opts["mode"]
    if opts["commands"] is None:
        opts["commands"] = [] if mode == "guard" else ["py-echo"]
    if opts["tools"] is None:
        opts["tools"] = [] if mode == "guard" else list(DEFAULT_TOOLS)
    if opts["events"] is None:
        opts["events"] = [] if mode == "guard" else list(ALL_EVENTS)
    if opts["intercept"] is None:
        opts["intercept"] = (
            ["tool_call", "turn_start", "assistant_message"] if mode == "guard" else []
        )
    if mode == "legacy":
        opts["ready"] = False
    return opts


OPTS = parse_args(sys.argv[1:])
MODE = OPTS["mode"]


def handle_tool(msg):
    tid, name = msg["id"], msg.get("name", "")
    args = msg.get("args")
    if not isinstance(args, dict):
        args = {}
    if MODE == "garbage":
        emit_raw("garbage before the result {{{\n")
    if name.startswith("echo"):
        text = json.dumps(args, separators=(",", ":"))
        emit({"type": "tool_result", "id": tid, "content": [{"type": "text", "text": text}]})
    elif name.startswith("sleep"):
        ms = int(args.get("ms", 1000))

        def later():
            time.sleep(ms / 1000.0)
            emit({"type": "tool_result", "id": tid,
                  "content": [{"type": "text", "text": "slept %d" % ms}]})

        threading.Thread(target=later, daemon=True).start()
    elif name.startswith("crash"):
        sys.stderr.write("py-ext: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    elif name.startswith("hang"):
        notify("hanging %s" % tid)
    elif name.startswith("big"):
        n = int(args.get("bytes", 20 * 1024 * 1024))
        data = payload(n)
        if args.get("kind") == "image":
            block = {"type": "image", "mime_type": "image/png", "data": data}
        else:
            block = {"type": "text", "text": data}
        emit({"type": "tool_result", "id": tid, "content": [block]})
    elif name.startswith("huge"):
        n = int(args.get("bytes", 100 * 1024 * 1024))
        head = '{"type":"notify","level":"info","message":"'
        tail = '"}\n'
        body = n - len(head) - len(tail)
        chunk = "x" * (1024 * 1024)
        with _lock:
            sys.stdout.write(head)
            while body > 0:
                k = min(body, len(chunk))
                sys.stdout.write(chunk[:k])
                body -= k
            sys.stdout.write(tail)
            sys.stdout.flush()
        notify("after-huge")
        emit({"type": "tool_result", "id": tid, "content": [{"type": "text", "text": "huge done"}]})
    elif name.startswith("spawn"):
        child = subprocess.Popen(["sleep", "1000"])
        emit({"type": "tool_result", "id": tid,
              "content": [{"type": "text", "text": "pid %d" % child.pid}]})
    elif name.startswith("closeout"):
        sys.stdout.close()
        os.close(1)
        for _ in sys.stdin:
            pass
        os._exit(0)
    elif name.startswith("progress"):
        count, pad = int(args.get("count", 3)), "x" * int(args.get("pad", 0))
        gap = int(args.get("gap_ms", 0)) / 1000.0

        def report():
            for i in range(count):
                time.sleep(gap)
                emit({"type": "tool_progress", "id": tid, "progress": i + 1,
                      "total": count, "text": "step %d%s" % (i + 1, pad)})
            time.sleep(gap)
            emit({"type": "tool_result", "id": tid,
                  "content": [{"type": "text", "text": "progressed"}]})

        threading.Thread(target=report, daemon=True).start()
    elif name.startswith("fail"):
        emit({"type": "tool_result", "id": tid, "is_error": True,
              "content": [{"type": "text", "text": "failed on purpose"}]})
    else:  # any other name echoes too (shadowing tests register arbitrary names)
        text = json.dumps(args, separators=(",", ":"))
        emit({"type": "tool_result", "id": tid, "content": [{"type": "text", "text": text}]})


def handle_intercept(msg):
    rid, event = msg["id"], msg.get("event")
    if MODE == "mute":
        notify("ignoring %s" % rid)
        return
    resp = {"type": "event_intercept_response", "id": rid}
    if MODE == "guard":
        if event == "tool_call":
            tool, args = msg.get("tool_name"), msg.get("tool_args") or {}
            if tool == "bash" and "rm -rf" in str(args.get("command", "")):
                resp["block"] = True
                resp["reason"] = 'refused: matches danger pattern "rm -rf"'
            elif "guard:refuse" in json.dumps(args):
                resp["block"] = True
                resp["reason"] = "refused: asked to refuse"
            elif tool == "rewrite_me":
                new_args = dict(args)
                new_args["rewritten"] = True
                resp["modified_args"] = new_args
            # read and everything else: allow, unchanged
        elif event == "turn_start":
            resp["block"] = False
        elif event == "assistant_message":
            text = msg.get("text", "")
            if "secret" in text:
                resp["replace_text"] = text.replace("secret", "[redacted]")
    emit(resp)


def stubborn():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen(["sleep", "1000"])
    parent = os.getppid()
    notify("pids %d %d" % (os.getpid(), child.pid))
    emit({"type": "ready"})

    def watchdog():
        # Only to avoid leaking processes when a test fails: once orphaned for a while,
        # clean up (late enough not to mask a host that forgot to kill us).
        while True:
            time.sleep(1)
            if os.getppid() != parent:
                time.sleep(5)
                child.kill()
                os._exit(0)

    threading.Thread(target=watchdog, daemon=True).start()
    for line in sys.stdin:
        pass  # ignore everything, shutdown included
    while True:
        time.sleep(1000)


def main():
    if OPTS["touch"]:
        with open(OPTS["touch"], "w") as f:
            f.write(str(os.getpid()))
    if MODE == "nohello":
        for _ in sys.stdin:
            pass
        return
    if OPTS["delay_ms"]:
        time.sleep(OPTS["delay_ms"] / 1000.0)
    if MODE == "garbage":
        emit_raw("this is not json\n{broken\n\n   \n\r\n")
    if MODE == "exit":
        # Gone before its hello, so it exits while starting however loaded the machine
        # is (after a hello, 250 ms of silence would make it ready first).
        sys.stderr.write("py-ext stderr: started %s\n" % OPTS["name"])
        sys.stderr.flush()
        sys.exit(OPTS["exit_code"])
    emit({"type": "hello", "name": OPTS["name"], "version": "1.2.3",
          "capabilities": ["commands", "tools", "events"]})
    sys.stderr.write("py-ext stderr: started %s\n" % OPTS["name"])
    sys.stderr.flush()
    if MODE == "stubborn":
        stubborn()
        return
    if MODE == "garbage":
        emit_raw('{"type":"teleport","to":"mars"}\n[1,2,3]\n{"type":7}\n{"no_type":true}\n'
                 '"just a string"\n{"type":"tool_result"}\nnot json either\n')
    for c in OPTS["commands"]:
        emit({"type": "register_command", "name": c, "description": "py command " + c})
    for t in OPTS["tools"]:
        emit({"type": "register_tool", "name": t, "description": "py tool " + t,
              "schema": {"type": "object", "properties": {}}})
    if OPTS["events"] or OPTS["intercept"]:
        emit({"type": "subscribe", "events": OPTS["events"], "intercept": OPTS["intercept"]})
    notify("started pid=%d cwd=%s" % (os.getpid(), os.getcwd()))
    if OPTS["ready"]:
        emit({"type": "ready"})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            sys.stderr.write("py-ext: bad line from host: %r\n" % line[:200])
            continue
        t = msg.get("type")
        if t == "command_invoked":
            emit({"type": "command_response", "id": msg["id"], "action": "display",
                  "display": msg.get("args", "")})
        elif t == "tool_call":
            handle_tool(msg)
        elif t == "tool_cancel":
            notify("cancelled %s" % msg.get("id"))
        elif t == "event":
            notify("event " + json.dumps(msg, separators=(",", ":")))
        elif t in ("panel_key", "panel_resize", "panel_close"):
            notify("%s %s" % (t, json.dumps(msg, separators=(",", ":"))))
        elif t == "event_intercept":
            handle_intercept(msg)
        elif t == "shutdown":
            emit({"type": "shutdown_ack"})
            break


if __name__ == "__main__":
    main()
