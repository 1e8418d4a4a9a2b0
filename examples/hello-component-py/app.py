# A zot extension written in Python, compiled to a WebAssembly component (a reactor of
# the zot:extension@0.1.0 world) by componentize-py. See README.md.
#
# The host calls Guest.start() once, then Guest.handle(frame) once per frame; the answers
# go back through host.send(frame). A frame is the JSON text of one frame object.
import json

from wit_world import exports
from wit_world.imports import host

NAME = "hello-component-py"
VERSION = "1.0.0"


def emit(obj):
    host.send(json.dumps(obj))


def command(msg):
    who = msg.get("args", "").strip()
    if msg.get("name") != "hellocomp":
        return {"type": "command_response", "id": msg["id"], "action": "noop",
                "error": "no command " + str(msg.get("name"))}
    if who:
        # `/hellocomp Ada`: a note for the user, no model call.
        return {"type": "command_response", "id": msg["id"], "action": "display",
                "display": "Hello, " + who + "! (from a Python component)"}
    # `/hellocomp`: what the hello-py quick start does.
    return {"type": "command_response", "id": msg["id"], "action": "prompt",
            "prompt": "Greet me very briefly. Add one emoji."}


def tool(msg):
    args = msg.get("args")
    if msg.get("name") != "shout":
        return {"type": "tool_result", "id": msg["id"], "is_error": True,
                "content": [{"type": "text", "text": "no tool " + str(msg.get("name"))}]}
    text = args.get("text") if isinstance(args, dict) else None
    if not isinstance(text, str):
        return {"type": "tool_result", "id": msg["id"], "is_error": True,
                "content": [{"type": "text", "text": "shout needs a string `text`"}]}
    return {"type": "tool_result", "id": msg["id"],
            "content": [{"type": "text", "text": text.upper()}]}


class Guest(exports.Guest):
    def start(self) -> None:
        host.log("info", NAME + " started")
        emit({"type": "hello", "name": NAME, "version": VERSION,
              "capabilities": ["commands", "tools"]})
        emit({"type": "register_command", "name": "hellocomp",
              "description": "say hi (python component)"})
        emit({"type": "register_tool", "name": "shout",
              "description": "Upper-cases the given text.",
              "schema": {"type": "object",
                         "properties": {"text": {"type": "string",
                                                 "description": "the text to shout"}},
                         "required": ["text"]}})
        emit({"type": "ready"})

    def handle(self, frame: str) -> None:
        try:
            msg = json.loads(frame)
        except ValueError:
            host.log("warn", "not JSON: " + frame[:200])
            return
        kind = msg.get("type") if isinstance(msg, dict) else None
        if kind == "command_invoked":
            emit(command(msg))
        elif kind == "tool_call":
            emit(tool(msg))
        elif kind == "shutdown":
            emit({"type": "shutdown_ack"})
        # hello_ack, events and anything unknown: nothing to do.
