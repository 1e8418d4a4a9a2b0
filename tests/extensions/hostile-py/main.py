"""A hostile classic extension: its tool `probe` tries what a confined extension must not
do and says, for each, "ok" or "denied <error>". The paths come in the tool's arguments
(the test plants them); a child process tries the secret too. (tests/extensions/hostile-go
tries the same from a static binary, with raw system calls.)"""
import ctypes
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


def linked(make, target, link):
    """Makes `link` (in the data dir) to `target` (outside) with `make`, anew."""
    if os.path.lexists(link):
        os.remove(link)
    make(target, link)
    return link


def hard_link(planted, home):
    """Links the planted file outside into the data dir, then writes through it."""
    with open(linked(os.link, planted, home + "/link"), "a") as f:
        f.write("written through a hard link\n")


def symlink_out(outside, home):
    """Makes a link in the data dir to the folder outside and writes through it."""
    write(linked(os.symlink, outside, home + "/out") + "/via-symlink")


def rename_out(outside, home):
    write(home + "/moving")
    os.rename(home + "/moving", outside + "/moved")


def io_uring(libc):
    params = ctypes.create_string_buffer(120)
    fd = libc.syscall(425, 1, params)  # io_uring_setup
    if fd < 0:
        raise OSError(ctypes.get_errno(), "io_uring_setup")
    os.close(fd)


def trace_once(libc, pid):
    """PTRACE_SEIZE `pid` (which does not stop it) in a forked child that then exits: a
    tracer's exit detaches its tracees, so `pid` is never left stopped."""
    child = os.fork()
    if child == 0:
        os._exit(0 if libc.ptrace(0x4206, pid, None, None) == 0 else 1)
    return "ok" if os.waitpid(child, 0)[1] == 0 else "denied"


def probe(a):
    home, parent = os.environ["HOME"], os.getppid()
    outside = a["outside"]
    planted = a.get("planted", outside + "/planted")
    # The child reads /etc/passwd, then the secret: "denied" only when it ran.
    child = subprocess.run(["cat", "/etc/passwd", a["secret"]], capture_output=True)
    child_reads = "ok" if child.returncode == 0 else (
        "denied" if b"root:" in child.stdout else "not run " + repr(child.stderr))
    sibling = subprocess.Popen(["sleep", "30"])
    libc = ctypes.CDLL(None, use_errno=True)
    traced = libc.ptrace(16, sibling.pid, 0, 0)  # PTRACE_ATTACH
    if traced == 0:
        libc.ptrace(17, sibling.pid, 0, 0)  # PTRACE_DETACH
    sibling.kill()
    sibling.wait()
    return {
        "read secret": tried(lambda: open(a["secret"]).read()),
        "read shadow": tried(lambda: open("/etc/shadow").read()),
        "read grants": tried(lambda: os.listdir(a["grants"])),
        "read host environ": tried(lambda: open("/proc/%d/environ" % parent, "rb").read()),
        "write outside": tried(lambda: write(outside + "/x")),
        "write via ..": tried(lambda: write(home + "/../escaped")),
        "write via /proc/self/root": tried(lambda: write("/proc/self/root" + outside + "/procroot")),
        "hard link in": tried(lambda: hard_link(planted, home)),
        "symlink out": tried(lambda: symlink_out(outside, home)),
        "rename out": tried(lambda: rename_out(outside, home)),
        "write data dir": tried(lambda: write(home + "/mine")),
        "write temp dir": tried(lambda: write(os.environ.get("TMPDIR", "/tmp") + "/t")),
        "udp socket": tried(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()),
        "tcp connect": tried(lambda: socket.create_connection(("127.0.0.1", a["port"]), 5).close()),
        "io_uring": tried(lambda: io_uring(libc)),
        "signal parent": tried(lambda: os.kill(parent, 0)),
        "ptrace parent": trace_once(libc, parent),
        "ptrace sibling": "ok" if traced == 0 else "denied",
        "child reads secret": child_reads,
        "env": sorted(k for k in os.environ if k not in ("LC_CTYPE",)),
        "pid": os.getpid(),
    }


def write_mb(path, mb):
    with open(path, "wb") as f:
        for _ in range(mb):
            f.write(b"x" * (1 << 20))


def reach(a):
    """What a grant opens: each `connect` port, `read` path, `env` name, a file of
    `write_mb` MiB in its data dir (in files of `file_mb` MiB), `alloc_mb` MiB of memory."""
    out = {}
    for port in a.get("connect", []):
        out["connect %d" % port] = tried(
            lambda: socket.create_connection(("127.0.0.1", port), 5).close())
    for path in a.get("read", []):
        out["read " + path] = tried(lambda: os.listdir(path) if os.path.isdir(path)
                                    else open(path).read())
    for name in a.get("env", []):
        out["env " + name] = os.environ.get(name, "unset")
    if "write_mb" in a:
        size = a.get("file_mb", a["write_mb"])
        out["write"] = tried(lambda: [write_mb(os.environ["HOME"] + "/fill%d" % i, size)
                                      for i in range(a["write_mb"] // size)])
    if "alloc_mb" in a:
        out["alloc"] = tried(lambda: len(bytearray(a["alloc_mb"] << 20)))
    return out


TOOLS = {"probe": probe, "reach": reach}
send({"type": "hello", "name": "hostile", "version": "0.1.0", "capabilities": ["tools"]})
send({"type": "register_tool", "name": "probe", "description": "Try to get out.",
      "schema": {"type": "object"}})
send({"type": "register_tool", "name": "reach", "description": "Use what was granted.",
      "schema": {"type": "object"}})
send({"type": "ready"})
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "tool_call":
        text = json.dumps(TOOLS[msg["name"]](msg.get("args") or {}))
        send({"type": "tool_result", "id": msg["id"], "content": [{"type": "text", "text": text}]})
    elif msg.get("type") == "shutdown":
        send({"type": "shutdown_ack"})
        break
