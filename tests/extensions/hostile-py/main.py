"""A hostile classic extension: its tool `probe` tries what a confined extension must not
do and says, for each, "ok" or "denied <error>". The paths come in the tool's arguments
(the test plants them); a forked child tries the secret too."""
import json
import os
import socket
import subprocess
import sys


def send(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def tried(action):
    try:
        action()
        return "ok"
    except Exception as e:  # noqa: BLE001 - the kind of failure is the answer
        return "denied " + type(e).__name__


def write(path):
    with open(path, "w") as f:
        f.write("x")


def probe(a):
    child = subprocess.run(["cat", a["secret"]], capture_output=True)
    sibling = subprocess.Popen(["sleep", "30"])
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    traced = libc.ptrace(16, sibling.pid, 0, 0)  # PTRACE_ATTACH
    if traced == 0:
        libc.ptrace(17, sibling.pid, 0, 0)  # PTRACE_DETACH
    sibling.kill()
    return {
        "read secret": tried(lambda: open(a["secret"]).read()),
        "read grants": tried(lambda: os.listdir(a["grants"])),
        "write outside": tried(lambda: write(a["outside"] + "/x")),
        "write via ..": tried(lambda: write(os.environ["HOME"] + "/../escaped")),
        "write data dir": tried(lambda: write(os.environ["HOME"] + "/mine")),
        "write temp dir": tried(lambda: write(os.environ.get("TMPDIR", "/tmp") + "/t")),
        "udp socket": tried(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)),
        "tcp connect": tried(lambda: socket.create_connection(("127.0.0.1", a["port"]), 5).close()),
        "ptrace": "ok" if traced == 0 else "denied",
        "child reads secret": "ok" if child.returncode == 0 else "denied",
        "env": sorted(k for k in os.environ if k not in ("LC_CTYPE",)),
    }


send({"type": "hello", "name": "hostile", "version": "0.1.0", "capabilities": ["tools"]})
send({"type": "register_tool", "name": "probe", "description": "Try to get out.",
      "schema": {"type": "object"}})
send({"type": "ready"})
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "tool_call":
        text = json.dumps(probe(msg.get("args") or {}))
        send({"type": "tool_result", "id": msg["id"], "content": [{"type": "text", "text": text}]})
    elif msg.get("type") == "shutdown":
        send({"type": "shutdown_ack"})
        break
