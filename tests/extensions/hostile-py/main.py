"""A hostile classic extension: its tool `probe` tries what a confined extension must not
do and says, for each, "ok" or "denied <error>". The paths come in the tool's arguments
(the test plants them); a child process tries the secret too. (tests/extensions/hostile-go
tries the same from a static binary, with raw system calls.) Its tool `tty` types into its
terminal, `int80` makes an i386 system call, `fd` reads a descriptor it did not open,
`power` tries what root's capabilities, the user's keyring and other processes' limits
would give it, and `tmp_swap` swaps its temp dir for a link to a folder outside."""
import ctypes
import errno
import fcntl
import json
import mmap
import os
import resource
import socket
import stat
import subprocess
import sys
import threading
import time


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


def caps_held(libc):
    """"ok <sets>" if it holds any capability (effective, permitted, inheritable or
    ambient), else "denied"."""
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    if libc.capget(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    held = [name for name, words in (("effective", (0, 3)), ("permitted", (1, 4)),
                                     ("inheritable", (2, 5))) if any(data[i] for i in words)]
    held += ["ambient"] * any(libc.prctl(47, 2, cap, 0, 0) == 1 for cap in range(64))
    return "ok " + ",".join(held) if held else "denied"


def bounding_set(libc):
    """"ok <count>" if its bounding set holds any capability (what an exec could grant
    without no_new_privs), else "denied"."""
    held = sum(libc.prctl(23, cap, 0, 0, 0) == 1 for cap in range(64))
    return "ok %d" % held if held else "denied"


def checked(libc, result, name):
    if result < 0:
        raise OSError(ctypes.get_errno(), name)
    return result


def kernel_log(libc):
    buf = ctypes.create_string_buffer(4096)
    checked(libc, libc.klogctl(3, buf, 4096), "klogctl")  # SYSLOG_ACTION_READ_ALL


def bpf_map(libc):
    attr = (ctypes.c_uint32 * 30)(2, 4, 4, 1)  # BPF_MAP_TYPE_ARRAY, key 4, value 4, 1 entry
    os.close(checked(libc, libc.syscall(321, 0, attr, ctypes.sizeof(attr)), "bpf"))


def keyring(libc):
    checked(libc, libc.syscall(250, 0, ctypes.c_int(-4), 0), "keyctl")  # the user keyring


def add_key(libc):
    checked(libc, libc.syscall(248, b"user", b"zot-probe", b"x", 1, ctypes.c_int(-2)), "add_key")


def io_priority(libc, pid):
    now = checked(libc, libc.syscall(252, 1, pid), "ioprio_get")  # IOPRIO_WHO_PROCESS
    checked(libc, libc.syscall(251, 1, pid, now), "ioprio_set")


def in_child(libc, call):
    """`call` in a forked child (what it changes stays there): "ok" or "denied <errno>"."""
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(r)
        result = call(libc)
        os.write(w, b"ok" if result == 0 else errno.errorcode[ctypes.get_errno()].encode())
        os._exit(0)
    os.close(w)
    said = os.read(r, 64).decode()
    os.close(r)
    os.waitpid(child, 0)
    return "ok" if said == "ok" else "denied " + said


def system_v_memory(libc):
    segment = checked(libc, libc.shmget(0, 4096, 0o1600), "shmget")  # IPC_PRIVATE, IPC_CREAT
    libc.shmctl(segment, 0, None)  # IPC_RMID


def readable(paths):
    """The paths of `paths` it could open."""
    got = []
    for path in paths:
        try:
            with open(path, "rb") as f:
                f.read(1)
            got.append(path)
        except OSError:
            pass
    return got


def a_thread():
    done = []
    t = threading.Thread(target=lambda: done.append(1))
    t.start()
    t.join()
    assert done


def power(a):
    """What privileges would give it, each "ok" or "denied …"; and what it may still do to
    itself ("own …"); `etc`: files of /etc a confined extension must not read."""
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    home = os.environ["HOME"]
    etc = readable(a.get("etc", []))
    limits = lambda pid: resource.prlimit(pid, resource.RLIMIT_NOFILE)
    return {
        "capabilities": caps_held(libc),
        "bounding set": bounding_set(libc),
        "make a character device": tried_errno(
            lambda: os.mknod(home + "/null-%d" % os.getpid(), stat.S_IFCHR | 0o600,
                             os.makedev(1, 3))),
        "make a block device": tried_errno(
            lambda: os.mknod(home + "/disk-%d" % os.getpid(), stat.S_IFBLK | 0o600,
                             os.makedev(7, 0))),
        "read the kernel log": tried_errno(lambda: kernel_log(libc)),
        "make a bpf map": tried_errno(lambda: bpf_map(libc)),
        "find the user keyring": tried_errno(lambda: keyring(libc)),
        "add a key": tried_errno(lambda: add_key(libc)),
        "set the host's limits": tried_errno(
            lambda: resource.prlimit(parent, resource.RLIMIT_NOFILE, limits(parent))),
        "set the host's priority": tried_errno(lambda: os.setpriority(
            os.PRIO_PROCESS, parent, os.getpriority(os.PRIO_PROCESS, parent))),
        "set the host's CPUs": tried_errno(
            lambda: os.sched_setaffinity(parent, os.sched_getaffinity(parent))),
        "set the host's I/O priority": tried_errno(lambda: io_priority(libc, parent)),
        "make a user namespace": in_child(libc, lambda c: c.unshare(0x10000000)),
        "make System V shared memory": tried_errno(lambda: system_v_memory(libc)),
        "read /etc beyond the list": ("ok " + " ".join(etc)) if etc else "denied",
        "own limits": tried_errno(lambda: resource.prlimit(0, resource.RLIMIT_NOFILE, limits(0))),
        "own priority": tried_errno(lambda: os.setpriority(
            os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0))),
        "own thread": tried(a_thread),
        "uid": os.geteuid(),
    }


def tmp_swap(a):
    """For `a["seconds"]`, swaps its temp dir for a link to `a["outside"]` and back, over
    and over (as a second start of it makes the temp dir anew); how many times."""
    tmp = os.environ["TMPDIR"]
    moved = tmp + ".moved"
    deadline = time.time() + a["seconds"]
    swaps = 0
    while time.time() < deadline:
        try:
            os.rename(tmp, moved)
        except OSError:
            pass
        try:
            os.symlink(a["outside"], tmp)
            swaps += 1
        except OSError:
            pass
        try:
            os.remove(tmp)
        except OSError:
            pass
        try:
            os.rename(moved, tmp)
        except OSError:
            pass
    return {"swaps": swaps}


def write_tmp(a):
    """Writes a file in its temp dir: where it landed ("ok"), or "denied <error>"."""
    path = os.environ["TMPDIR"] + "/written-%d" % os.getpid()
    return {"write": tried(lambda: write(path))}


def fill(a):
    """Writes `a["mb"]` MiB files into its data dir, `a["files"]` of them, in writes of
    `a["chunk_mb"]` MiB (1), saying on stderr how many MiB it wrote after each write; with `unlink`, each file is unlinked as
    soon as it is made and kept open. Then waits `a["wait"]` seconds (to be stopped) and
    says how much it wrote."""
    home, kept, written = os.environ["HOME"], [], 0
    for i in range(a["files"]):
        path = home + "/fill-%d" % i
        f = open(path, "wb")
        if a.get("unlink"):
            os.unlink(path)
        chunk = a.get("chunk_mb", 1)
        for _ in range(a["mb"] // chunk):
            os.write(f.fileno(), b"x" * (chunk << 20))
            written += chunk
            sys.stderr.write("wrote %d MiB\n" % written)
            sys.stderr.flush()
        kept.append(f)
    time.sleep(a.get("wait", 0))
    return {"written_mb": written}


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


TOLD = {}


def told(_):
    """What its `hello_ack` said."""
    return TOLD


TOOLS = {"told": told, "probe": probe, "reach": reach, "tty": tty, "int80": int80, "fd": fd, "power": power,
         "tmp_swap": tmp_swap, "write_tmp": write_tmp, "fill": fill}
send({"type": "hello", "name": "hostile", "version": "0.1.0", "capabilities": ["tools"]})
for name, description in [("probe", "Try to get out."), ("reach", "Use what was granted."),
                          ("tty", "Type into its terminal."), ("int80", "An i386 system call."),
                          ("fd", "Read a descriptor it inherited."),
                          ("power", "Use what privileges would give."),
                          ("tmp_swap", "Swap its temp dir for a link."),
                          ("write_tmp", "Write in its temp dir."),
                          ("fill", "Fill its data dir."),
                          ("told", "What hello_ack said.")]:
    send({"type": "register_tool", "name": name, "description": description,
          "schema": {"type": "object"}})
send({"type": "ready"})
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "hello_ack":
        TOLD.update(msg)
    elif msg.get("type") == "tool_call":
        text = json.dumps(TOOLS[msg["name"]](msg.get("args") or {}))
        send({"type": "tool_result", "id": msg["id"], "content": [{"type": "text", "text": text}]})
    elif msg.get("type") == "shutdown":
        send({"type": "shutdown_ack"})
        break
