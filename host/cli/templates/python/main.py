#!/usr/bin/env python3
"""{{name}}: a zot extension in plain Python (standard library only).

It speaks the zot protocol (newline-delimited JSON on stdin/stdout) and provides:

- the slash command /{{name}}, which shows the text typed after it;
- the tool {{name}}_echo, which the model can call with {"text": "..."};
- an interceptor of tool_call that blocks a bash command deleting the whole disk
  (rm -rf /) and allows everything else.

Never print anything else on stdout: it carries the frames. Diagnostics go to stderr,
which zot writes to the extension's log (zot ext logs {{name}}).
"""
import json
import sys

NAME = "{{name}}"
VERSION = "0.1.0"

TOOL = NAME + "_echo"
TOOL_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "The text to echo back."}},
    "required": ["text"],
}


def emit(frame):
    """Sends one frame: one JSON object on one line, flushed at once."""
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def log(message):
    print(message, file=sys.stderr, flush=True)


def on_command(msg):
    """/{{name}} <args>: shows its arguments as a note (no model call)."""
    args = msg.get("args") or ""
    text = "{} got: {}".format(NAME, args) if args else "{}: no arguments".format(NAME)
    return {"type": "command_response", "id": msg["id"], "action": "display", "display": text}


def on_tool_call(msg):
    """{{name}}_echo {"text": ...}: answers the text back."""
    text = (msg.get("args") or {}).get("text")
    if not isinstance(text, str):
        return {"type": "tool_result", "id": msg["id"], "is_error": True,
                "content": [{"type": "text", "text": 'missing the string argument "text"'}]}
    return {"type": "tool_result", "id": msg["id"],
            "content": [{"type": "text", "text": "echo: " + text}]}


def dangerous(command):
    """True for an `rm` with a flag holding both r and f whose target is / or /*."""
    words = command.split()
    return ("rm" in words
            and any(w in ("/", "/*") for w in words)
            and any(w.startswith("-") and "r" in w.lower() and "f" in w for w in words))


def on_intercept(msg):
    """Asked before every tool call runs: block one obviously dangerous case."""
    reply = {"type": "event_intercept_response", "id": msg["id"]}  # allow, unchanged
    if msg.get("event") == "tool_call" and msg.get("tool_name") == "bash":
        command = (msg.get("tool_args") or {}).get("command")
        if isinstance(command, str) and dangerous(command):
            reply["block"] = True
            reply["reason"] = NAME + ": refused to delete the whole disk (rm -rf /)"
    return reply


def main():
    emit({"type": "hello", "name": NAME, "version": VERSION,
          "capabilities": ["commands", "tools", "events"]})
    emit({"type": "register_command", "name": NAME, "description": "Show the text after /" + NAME})
    emit({"type": "register_tool", "name": TOOL, "description": "Echo a text back.",
          "schema": TOOL_SCHEMA})
    emit({"type": "subscribe", "events": [], "intercept": ["tool_call"]})
    emit({"type": "ready"})

    handlers = {"command_invoked": on_command, "tool_call": on_tool_call,
                "event_intercept": on_intercept}
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            log("skipped a line that is not JSON")
            continue
        kind = msg.get("type")
        if kind == "shutdown":
            emit({"type": "shutdown_ack"})
            break
        handler = handlers.get(kind)
        if handler is None:
            continue  # hello_ack, tool_cancel, events, ...: nothing to answer
        try:
            emit(handler(msg))
        except Exception as e:  # always answer, or the call waits for its timeout
            log("{} failed: {!r}".format(kind, e))
            if kind == "tool_call":
                emit({"type": "tool_result", "id": msg.get("id"), "is_error": True,
                      "content": [{"type": "text", "text": "{} failed".format(TOOL)}]})
            elif kind == "command_invoked":
                emit({"type": "command_response", "id": msg.get("id"), "action": "noop",
                      "error": "/{} failed".format(NAME)})
            else:
                emit({"type": "event_intercept_response", "id": msg.get("id")})


if __name__ == "__main__":
    main()
