"""The zot extension the MCP conformance suite's server scenarios ask for (stdlib only).

`zot mcp` serves its tools as MCP tools and its slash commands as MCP prompts; the suite
(`@modelcontextprotocol/conformance`, tests/conformance/) calls them by these names and
checks what comes back. Only what the zot protocol can say is here: no resources,
completions, sampling or elicitation, and no prompt whose messages are not one text
(tests/conformance/expected-failures.yml lists those scenarios, and docs/mcp.md why).

Tools (no arguments):
  test_simple_text             the text "This is a simple text response for testing."
  test_image_content           an image block: a 1x1 red PNG
  test_audio_content           an audio block: a short silent WAV
  test_embedded_resource       an embedded text resource, test://embedded-resource
  test_multiple_content_types  a text, an image and a JSON resource
  test_tool_with_logging       three `notify` frames 50 ms apart, then a text
  test_error_handling          an error result (is_error)
  test_tool_with_progress      three `tool_progress` frames (0, 50, 100 of 100) 50 ms
                               apart, then a text
  test_reconnection            a text (zot cannot close an SSE stream mid-call)
  json_schema_2020_12_tool     a tool whose schema uses JSON Schema 2020-12 ($schema,
                               $defs, $ref, additionalProperties); answers a text
Commands (MCP prompts):
  test_simple_prompt           action prompt: "This is a simple prompt for testing."
  test_prompt_with_arguments   action prompt: "Prompt with arguments: arg1='…', arg2='…'"
                               from the `arg1=… arg2=…` words zot mcp makes of the
                               prompt's named arguments

Each call runs in a thread of its own, so a slow one holds up no other.
"""

import base64
import json
import shlex
import struct
import sys
import threading
import time
import zlib

_lock = threading.Lock()


def emit(frame):
    line = json.dumps(frame, separators=(",", ":")) + "\n"
    with _lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def png_1x1_red():
    """A 1x1 PNG, one red pixel (8-bit RGB), as base64."""

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels)
    png += chunk(b"IEND", b"")
    return base64.b64encode(png).decode()


def wav_silence():
    """A WAV of 8 silent samples (8 kHz, 16-bit mono PCM), as base64."""
    samples = b"\x00\x00" * 8
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    wav = b"RIFF" + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(samples)) + b"WAVE"
    wav += b"fmt " + struct.pack("<I", len(fmt)) + fmt
    wav += b"data" + struct.pack("<I", len(samples)) + samples
    return base64.b64encode(wav).decode()


IMAGE = {"type": "image", "mime_type": "image/png", "data": png_1x1_red()}
AUDIO = {"type": "audio", "mime_type": "audio/wav", "data": wav_silence()}


def text(t):
    return {"type": "text", "text": t}


def resource(uri, mime_type, body):
    return {"type": "resource", "resource": {"uri": uri, "mime_type": mime_type, "text": body}}


NO_ARGS = {"type": "object", "properties": {}}

SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}

TOOLS = {
    "test_simple_text": "Returns a simple text response",
    "test_image_content": "Returns an image (a 1x1 red PNG)",
    "test_audio_content": "Returns audio (a short silent WAV)",
    "test_embedded_resource": "Returns an embedded text resource",
    "test_multiple_content_types": "Returns a text, an image and a resource",
    "test_tool_with_logging": "Sends three log messages while it runs",
    "test_error_handling": "Always returns an error result",
    "test_tool_with_progress": "Reports progress (0, 50, 100 of 100) while it runs",
    "test_reconnection": "Answers a text (zot cannot close the SSE stream mid-call)",
    "json_schema_2020_12_tool": "Tool with JSON Schema 2020-12 features",
}

COMMANDS = {
    "test_simple_prompt": "A simple prompt without arguments",
    "test_prompt_with_arguments": "A prompt with two arguments: arg1=VALUE arg2=VALUE",
}


def result(tid, content, is_error=False):
    emit({"type": "tool_result", "id": tid, "content": content, "is_error": is_error})


def call(tid, name):
    if name == "test_simple_text":
        result(tid, [text("This is a simple text response for testing.")])
    elif name == "test_image_content":
        result(tid, [IMAGE])
    elif name == "test_audio_content":
        result(tid, [AUDIO])
    elif name == "test_embedded_resource":
        body = "This is an embedded resource content."
        result(tid, [resource("test://embedded-resource", "text/plain", body)])
    elif name == "test_multiple_content_types":
        body = json.dumps({"test": "data", "value": 123}, separators=(",", ":"))
        mixed = resource("test://mixed-content-resource", "application/json", body)
        result(tid, [text("Multiple content types test:"), IMAGE, mixed])
    elif name == "test_tool_with_logging":
        for i, message in enumerate(
            ["Tool execution started", "Tool processing data", "Tool execution completed"]
        ):
            if i:
                time.sleep(0.05)
            emit({"type": "notify", "level": "info", "message": message})
        result(tid, [text("Tool with logging executed successfully")])
    elif name == "test_error_handling":
        result(tid, [text("This tool intentionally returns an error for testing")], True)
    elif name == "test_tool_with_progress":
        for i, progress in enumerate([0, 50, 100]):
            if i:
                time.sleep(0.05)
            emit({"type": "tool_progress", "id": tid, "progress": progress, "total": 100})
        result(tid, [text("Tool with progress executed successfully")])
    elif name == "test_reconnection":
        result(tid, [text("Reconnection test completed successfully")])
    elif name == "json_schema_2020_12_tool":
        result(tid, [text("JSON Schema 2020-12 tool executed successfully")])
    else:
        result(tid, [text("no tool named %r" % name)], True)


def command(cid, name, args):
    if name == "test_simple_prompt":
        prompt = "This is a simple prompt for testing."
    elif name == "test_prompt_with_arguments":
        words = dict(w.split("=", 1) for w in shlex.split(args) if "=" in w)
        prompt = "Prompt with arguments: arg1='%s', arg2='%s'" % (
            words.get("arg1", ""),
            words.get("arg2", ""),
        )
    else:
        emit({"type": "command_response", "id": cid, "error": "no command named %r" % name})
        return
    emit({"type": "command_response", "id": cid, "action": "prompt", "prompt": prompt})


def main():
    emit({"type": "hello", "name": "conformance", "version": "1.0.0",
          "capabilities": ["tools", "commands"]})
    for name, description in TOOLS.items():
        schema = SCHEMA_2020_12 if name == "json_schema_2020_12_tool" else NO_ARGS
        emit({"type": "register_tool", "name": name, "description": description,
              "schema": schema})
    for name, description in COMMANDS.items():
        emit({"type": "register_command", "name": name, "description": description})
    emit({"type": "ready"})
    for line in sys.stdin:
        if not line.strip():
            continue
        frame = json.loads(line)
        kind = frame.get("type")
        if kind == "tool_call":
            threading.Thread(
                target=call, args=(frame["id"], frame.get("name", "")), daemon=True
            ).start()
        elif kind == "command_invoked":
            command(frame["id"], frame.get("name", ""), frame.get("args", ""))
        elif kind == "shutdown":
            emit({"type": "shutdown_ack"})
            break


if __name__ == "__main__":
    main()
