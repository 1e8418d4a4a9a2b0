"""A hostile classic extension: its tool `probe` tries what a confined extension must not
do and says, for each, "ok" or "denied <error>". The paths come in the tool's arguments
(the test plants them); a child process tries the secret too. (tests/extensions/hostile-go
tries the same from a static binary, with raw system calls.) Its tool `tty` types into its
terminal, `int80` makes an i386 system call, `fd` reads a descriptor it did not open."""
import ctypes
import errno
import fcntl
import json
import mmap
import os
import resource
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


def tried_errno(action):
    """As `tried`, the failure named by its errno ("denied EPERM"), which tells the
    filter's refusal from the kernel's (a protocol it does not have)."""
    try:
        action()
        return "ok"
    except OSError as e:
        return "denied " + errno.errorcode[e.errno]


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


def sock(family, kind, proto=0):
    """Opens a socket of the family, type and protocol."""
    socket.socket(family, kind, proto).close()


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def vm_copy(libc, name):
    """Copies a buffer of this process into another with `process_vm_readv` or
    `process_vm_writev` (`name`), whichever process it names."""
    source, target = ctypes.create_string_buffer(b"memory"), ctypes.create_string_buffer(6)
    local, remote = Iovec(ctypes.addressof(target), 6), Iovec(ctypes.addressof(source), 6)
    if name == "process_vm_writev":
        local, remote = remote, local
    call = getattr(libc, name)
    call.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p,
                     ctypes.c_ulong, ctypes.c_ulong]
    if call(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) != 6:
        raise OSError(ctypes.get_errno(), name)


def open_files(count):
    """Raises its descriptor limit to the hard one, then holds `count` descriptors."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    fds = []
    try:
        for _ in range(count):
            fds.append(os.open("/dev/null", os.O_RDONLY))
    finally:
        for fd in fds:
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
        "udp socket": tried_errno(lambda: sock(socket.AF_INET, socket.SOCK_DGRAM)),
        "tcp connect": tried(lambda: socket.create_connection(("127.0.0.1", a["port"]), 5).close()),
        "io_uring": tried(lambda: io_uring(libc)),
        "netlink socket": tried_errno(lambda: sock(socket.AF_NETLINK, socket.SOCK_RAW)),
        "packet socket": tried_errno(lambda: sock(socket.AF_PACKET, socket.SOCK_RAW)),
        "mptcp socket": tried_errno(lambda: sock(socket.AF_INET, socket.SOCK_STREAM, 262)),
        "sctp socket": tried_errno(lambda: sock(socket.AF_INET, socket.SOCK_STREAM, 132)),
        "process_vm_readv": tried(lambda: vm_copy(libc, "process_vm_readv")),
        "process_vm_writev": tried(lambda: vm_copy(libc, "process_vm_writev")),
        "open files": tried(lambda: open_files(a.get("files", 0))),
        "files limit": resource.getrlimit(resource.RLIMIT_NOFILE)[1],
        "signal parent": tried(lambda: os.kill(parent, 0)),
        "ptrace parent": trace_once(libc, parent),
        "ptrace sibling": "ok" if traced == 0 else "denied",
        "child reads secret": child_reads,
        "env": sorted(k for k in os.environ if k not in ("LC_CTYPE",)),
        "pid": os.getpid(),
    }


def tty(_):
    """`TIOCSTI` (a byte pushed into its terminal's input, as if typed) and `TIOCLINUX`
    on its controlling terminal: "ok" or "denied <errno>"."""
    def ioctl(request, arg):
        try:
            fd = os.open("/dev/tty", os.O_RDWR)
        except OSError as e:
            return "no terminal " + errno.errorcode[e.errno]
        try:
            fcntl.ioctl(fd, request, arg)
            return "ok"
        except OSError as e:
            return "denied " + errno.errorcode[e.errno]
        finally:
            os.close(fd)
    return {"TIOCSTI": ioctl(0x5412, b"#"), "TIOCLINUX": ioctl(0x541C, b"\x06")}


def int80(_):
    """getpid through the i386 system call gate (`int 0x80`) of this 64-bit process."""
    code = b"\xb8\x14\x00\x00\x00\xcd\x80\xc3"  # mov eax, 20; int 0x80; ret
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    call = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
    return {"i386 getpid": call(), "pid": os.getpid()}


def fd(a):
    """Reads descriptor `a["fd"]`, which it did not open (inherited from whoever started
    it) from its start: "ok <what it holds>" or "denied <errno>"."""
    try:
        return {"read": "ok " + os.pread(a["fd"], 4096, 0).decode()}
    except OSError as e:
        return {"read": "denied " + errno.errorcode[e.errno]}


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


TOOLS = {"probe": probe, "reach": reach, "tty": tty, "int80": int80, "fd": fd}
send({"type": "hello", "name": "hostile", "version": "0.1.0", "capabilities": ["tools"]})
for name, description in [("probe", "Try to get out."), ("reach", "Use what was granted."),
                          ("tty", "Type into its terminal."), ("int80", "An i386 system call."),
                          ("fd", "Read a descriptor it inherited.")]:
    send({"type": "register_tool", "name": name, "description": description,
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
