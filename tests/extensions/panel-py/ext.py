#!/usr/bin/env python3
"""A zot test extension (Python, stdlib only) with a panel it closes itself, and a tool
whose schema has required and optional fields.

Command `pick`: opens the panel "pick". With the argument `later` it closes the panel
itself a second later. In the panel, the key `char q` makes it close the panel 300 ms
later (notified "closing pick"); other keys redraw it naming the key.

Tool `forecast`: schema with `city` (string, required), `days` (integer, optional),
`units` ("metric" or "imperial", optional); answers the compact JSON of its args.
"""
import json
import sys
import threading

_lock = threading.Lock()

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "the city to look up"},
        "days": {"type": "integer", "description": "how many days ahead"},
        "units": {"type": "string", "enum": ["metric", "imperial"],
                  "description": "the units of the answer"},
    },
    "required": ["city"],
}


def emit(obj):
    line = json.dumps(obj, separators=(",", ":")) + "\n"
    with _lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def close_later(seconds):
    def close():
        emit({"type": "panel_close", "panel_id": "pick"})

    threading.Timer(seconds, close).start()


def main():
    emit({"type": "hello", "name": "picker", "version": "0.1.0",
          "capabilities": ["commands", "tools", "panels"]})
    emit({"type": "register_command", "name": "pick", "description": "open the pick panel"})
    emit({"type": "register_tool", "name": "forecast", "description": "a forecast",
          "schema": SCHEMA})
    emit({"type": "ready"})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        t = msg.get("type")
        if t == "command_invoked":
            emit({"type": "command_response", "id": msg["id"], "action": "open_panel",
                  "open_panel": {"id": "pick", "title": "Pick", "lines": ["q closes"],
                                 "footer": ""}})
            if msg.get("args", "").strip() == "later":
                close_later(1.0)
        elif t == "panel_key":
            if msg.get("key") == "char" and msg.get("text") == "q":
                emit({"type": "notify", "level": "info", "message": "closing pick"})
                close_later(0.3)
            else:
                emit({"type": "panel_render", "panel_id": "pick", "title": "Pick",
                      "lines": ["key " + msg.get("key", "")], "footer": ""})
        elif t == "tool_call":
            text = json.dumps(msg.get("args"), separators=(",", ":"))
            emit({"type": "tool_result", "id": msg["id"],
                  "content": [{"type": "text", "text": text}]})
        elif t == "shutdown":
            emit({"type": "shutdown_ack"})
            break


if __name__ == "__main__":
    main()
