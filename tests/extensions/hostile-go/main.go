// hostile: a classic extension, a static Go binary (no libc), whose tool `probe` tries
// what a confined extension must not do, with the os package and raw system calls, and
// says for each "ok" or "denied <error>". The paths come in the tool's arguments (the
// test plants them). Its tool `power` tries, with raw system calls, what root's
// capabilities, the user's keyring and the host's limits would give. Built by
// tests/it/confine.rs.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

const (
	ptraceSeize     = 0x4206
	sysIoUringSetup = 425
	ipprotoMPTCP    = 262
)

// The main goroutine keeps the main thread: a goroutine that traces another process
// runs on a thread of its own, which ends with it (see traceOnce).
func init() { runtime.LockOSThread() }

type frame map[string]any

var out = json.NewEncoder(os.Stdout)

func send(f frame) {
	if err := out.Encode(f); err != nil {
		os.Exit(1)
	}
}

// tried is "ok" when err is nil, else "denied <error>".
func tried(err error) string {
	if err == nil {
		return "ok"
	}
	return "denied " + err.Error()
}

func write(path string) error {
	return os.WriteFile(path, []byte("x"), 0o644)
}

// traceOnce seizes pid (PTRACE_SEIZE does not stop it) on a thread that then exits: a
// tracer's exit detaches its tracees, so the traced process is never left stopped, even
// if a signal came in between. The goroutine is locked to its thread and never unlocked,
// so the thread ends with it.
func traceOnce(pid int) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		_, _, errno := syscall.RawSyscall6(syscall.SYS_PTRACE, ptraceSeize, uintptr(pid), 0, 0, 0, 0)
		if errno != 0 {
			done <- errno
			return
		}
		done <- nil
	}()
	return <-done
}

// ioUring sets up an io_uring (which neither Landlock nor seccomp could look into).
func ioUring() error {
	var params [120]byte
	fd, _, errno := syscall.Syscall(sysIoUringSetup, 1, uintptr(unsafe.Pointer(&params[0])), 0)
	if errno != 0 {
		return errno
	}
	return syscall.Close(int(fd))
}

// The numbers of process_vm_readv and process_vm_writev, which package syscall does not
// name.
var sysProcessVM = map[string][2]uintptr{"amd64": {310, 311}, "arm64": {270, 271}}[runtime.GOARCH]

// vmCopy copies a buffer of this process into another with process_vm_readv, or with
// process_vm_writev (write), whichever process it names.
func vmCopy(write bool) error {
	if sysProcessVM[0] == 0 {
		return fmt.Errorf("no process_vm_readv number for %s", runtime.GOARCH)
	}
	source, target := []byte("memory"), make([]byte, 6)
	local, remote := syscall.Iovec{Base: &target[0]}, syscall.Iovec{Base: &source[0]}
	local.SetLen(6)
	remote.SetLen(6)
	call := sysProcessVM[0]
	if write {
		local, remote, call = remote, local, sysProcessVM[1]
	}
	n, _, errno := syscall.Syscall6(call, uintptr(os.Getpid()), uintptr(unsafe.Pointer(&local)), 1,
		uintptr(unsafe.Pointer(&remote)), 1, 0)
	if errno != 0 {
		return errno
	}
	if n != 6 {
		return fmt.Errorf("copied %d bytes", n)
	}
	return nil
}

// sock opens a socket of the family, type and protocol with the raw call.
func sock(family, kind, proto int) error {
	fd, err := syscall.Socket(family, kind, proto)
	if err == nil {
		syscall.Close(fd)
	}
	return err
}

// filesLimit is its hard limit of descriptors.
func filesLimit() uint64 {
	var limit syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit)
	return limit.Max
}

// openFiles raises its descriptor limit to the hard one, then holds count descriptors.
func openFiles(count int) error {
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
		return err
	}
	limit.Cur = limit.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
		return err
	}
	var fds []int
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	for i := 0; i < count; i++ {
		fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		fds = append(fds, fd)
	}
	return nil
}

func tcp(port int) error {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	if err == nil {
		c.Close()
	}
	return err
}

// linked makes link (in the data dir) to target (outside) with mk, anew.
func linked(mk func(string, string) error, target, link string) (string, error) {
	os.Remove(link)
	return link, mk(target, link)
}

// hardLink links the planted file outside into the data dir, then writes through it.
func hardLink(planted, home string) error {
	link, err := linked(os.Link, planted, filepath.Join(home, "link"))
	if err != nil {
		return err
	}
	f, err := os.OpenFile(link, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString("written through a hard link\n")
	return err
}

// symlinkOut makes a link in the data dir to the folder outside and writes through it.
func symlinkOut(outside, home string) error {
	link, err := linked(os.Symlink, outside, filepath.Join(home, "out"))
	if err != nil {
		return err
	}
	return write(filepath.Join(link, "via-symlink"))
}

// renameOut moves a file of the data dir outside.
func renameOut(outside, home string) error {
	from := filepath.Join(home, "moving")
	if err := write(from); err != nil {
		return err
	}
	return os.Rename(from, filepath.Join(outside, "moved"))
}

// siblingTraced starts a process and tries to trace it.
func siblingTraced() error {
	sleep := exec.Command("/bin/sleep", "30")
	if err := sleep.Start(); err != nil {
		return fmt.Errorf("cannot start a sibling: %w", err)
	}
	defer sleep.Wait()
	defer sleep.Process.Kill()
	return traceOnce(sleep.Process.Pid)
}

// childReads runs `/bin/cat /etc/passwd secret` ("denied" only when cat ran: it printed
// /etc/passwd, then could not read the secret).
func childReads(secret string) string {
	got, err := exec.Command("/bin/cat", "/etc/passwd", secret).Output()
	if err == nil {
		return "ok"
	}
	if strings.Contains(string(got), "root:") {
		return "denied " + err.Error()
	}
	return "not run: " + err.Error()
}

type args struct {
	Etc     []string `json:"etc"`
	Secret  string   `json:"secret"`
	Grants  string   `json:"grants"`
	Outside string   `json:"outside"`
	Planted string   `json:"planted"`
	Port    int      `json:"port"`
	Files   int      `json:"files"`
}

func probe(a args) map[string]any {
	home := os.Getenv("HOME")
	tmp := os.Getenv("TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	parent := os.Getppid()
	var env []string
	for _, kv := range os.Environ() {
		env = append(env, kv[:strings.IndexByte(kv, '=')])
	}
	sort.Strings(env)
	readFile := func(path string) error { _, err := os.ReadFile(path); return err }
	readDir := func(path string) error { _, err := os.ReadDir(path); return err }
	return map[string]any{
		"read secret":               tried(readFile(a.Secret)),
		"read shadow":               tried(readFile("/etc/shadow")),
		"read grants":               tried(readDir(a.Grants)),
		"read host environ":         tried(readFile(fmt.Sprintf("/proc/%d/environ", parent))),
		"write outside":             tried(write(filepath.Join(a.Outside, "x"))),
		"write via ..":              tried(write(home + "/../escaped")),
		"write via /proc/self/root": tried(write("/proc/self/root" + filepath.Join(a.Outside, "procroot"))),
		"hard link in":              tried(hardLink(a.Planted, home)),
		"symlink out":               tried(symlinkOut(a.Outside, home)),
		"rename out":                tried(renameOut(a.Outside, home)),
		"write data dir":            tried(write(filepath.Join(home, "mine"))),
		"write temp dir":            tried(write(filepath.Join(tmp, "t"))),
		"udp socket":                tried(sock(syscall.AF_INET, syscall.SOCK_DGRAM, 0)),
		"tcp connect":               tried(tcp(a.Port)),
		"io_uring":                  tried(ioUring()),
		"netlink socket":            tried(sock(syscall.AF_NETLINK, syscall.SOCK_RAW, 0)),
		"packet socket":             tried(sock(syscall.AF_PACKET, syscall.SOCK_RAW, 0)),
		"mptcp socket":              tried(sock(syscall.AF_INET, syscall.SOCK_STREAM, ipprotoMPTCP)),
		"sctp socket":               tried(sock(syscall.AF_INET, syscall.SOCK_STREAM, syscall.IPPROTO_SCTP)),
		"process_vm_readv":          tried(vmCopy(false)),
		"process_vm_writev":         tried(vmCopy(true)),
		"open files":                tried(openFiles(a.Files)),
		"files limit":               filesLimit(),
		"signal parent":             tried(syscall.Kill(parent, 0)),
		"ptrace parent":             tried(traceOnce(parent)),
		"ptrace sibling":            tried(siblingTraced()),
		"child reads secret":        childReads(a.Secret),
		"env":                       env,
		"pid":                       os.Getpid(),
	}
}

// raw makes the system call nr, its error if it failed.
func raw(nr uintptr, a ...uintptr) (uintptr, error) {
	var v [6]uintptr
	copy(v[:], a)
	r, _, e := syscall.Syscall6(nr, v[0], v[1], v[2], v[3], v[4], v[5])
	if e != 0 {
		return r, e
	}
	return r, nil
}

// capsHeld is "ok" if it holds a capability in any set (effective, permitted,
// inheritable, ambient) or its bounding set holds one, else "denied".
func capsHeld() string {
	header := [2]uint32{0x20080522, 0}
	var data [6]uint32
	if _, err := raw(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&header)),
		uintptr(unsafe.Pointer(&data))); err != nil {
		return "denied capget " + err.Error()
	}
	for _, w := range data {
		if w != 0 {
			return "ok"
		}
	}
	for c := uintptr(0); c < 64; c++ {
		if r, err := raw(syscall.SYS_PRCTL, 23, c); err == nil && r == 1 { // PR_CAPBSET_READ
			return "ok bounding"
		}
		if r, err := raw(syscall.SYS_PRCTL, 47, 2, c); err == nil && r == 1 { // ambient
			return "ok ambient"
		}
	}
	return "denied"
}

// ofParent gets what get says of the host, then sets it again with set.
func ofParent(get func() (uintptr, error), set func(uintptr) error) error {
	v, err := get()
	if err != nil {
		return err
	}
	return set(v)
}

func power(a args) map[string]any {
	home, parent := os.Getenv("HOME"), uintptr(os.Getppid())
	var limit [2]uint64
	var cpus [128]byte
	log := make([]byte, 4096)
	bpfAttr := [30]uint32{2, 4, 4, 1}
	var etc []string
	for _, path := range a.Etc {
		if f, err := os.Open(path); err == nil {
			f.Close()
			etc = append(etc, path)
		}
	}
	readEtc := "denied"
	if len(etc) > 0 {
		readEtc = "ok " + strings.Join(etc, " ")
	}
	return map[string]any{
		"capabilities": capsHeld(),
		"make a character device": tried(syscall.Mknod(
			fmt.Sprintf("%s/null-%d", home, os.Getpid()), syscall.S_IFCHR|0o600, 1<<8|3)),
		"make a block device": tried(syscall.Mknod(
			fmt.Sprintf("%s/disk-%d", home, os.Getpid()), syscall.S_IFBLK|0o600, 7<<8)),
		"read the kernel log": tried(func() error {
			_, err := raw(syscall.SYS_SYSLOG, 3, uintptr(unsafe.Pointer(&log[0])), 4096)
			return err
		}()),
		"make a bpf map": tried(func() error {
			fd, err := raw(321, 0, uintptr(unsafe.Pointer(&bpfAttr)), unsafe.Sizeof(bpfAttr))
			if err == nil {
				syscall.Close(int(fd))
			}
			return err
		}()),
		"find the user keyring": tried(func() error {
			_, err := raw(250, 0, ^uintptr(3)) // KEYCTL_GET_KEYRING_ID, the user keyring (-4)
			return err
		}()),
		"add a key": tried(func() error {
			kind, _ := syscall.BytePtrFromString("user")
			name, _ := syscall.BytePtrFromString("zot-probe")
			// add_key("user", "zot-probe", "z", 1, the process keyring (-2))
			_, err := raw(248, uintptr(unsafe.Pointer(kind)), uintptr(unsafe.Pointer(name)),
				uintptr(unsafe.Pointer(name)), 1, ^uintptr(1))
			runtime.KeepAlive(kind)
			runtime.KeepAlive(name)
			return err
		}()),
		"set the host's limits": tried(ofParent(
			func() (uintptr, error) {
				return raw(syscall.SYS_PRLIMIT64, parent, syscall.RLIMIT_NOFILE, 0,
					uintptr(unsafe.Pointer(&limit)))
			},
			func(uintptr) error {
				_, err := raw(syscall.SYS_PRLIMIT64, parent, syscall.RLIMIT_NOFILE,
					uintptr(unsafe.Pointer(&limit)), 0)
				return err
			})),
		"set the host's priority": tried(ofParent(
			func() (uintptr, error) { return raw(syscall.SYS_GETPRIORITY, 0, parent) },
			func(v uintptr) error {
				_, err := raw(syscall.SYS_SETPRIORITY, 0, parent, 20-v) // the raw call says 20-nice
				return err
			})),
		"set the host's CPUs": tried(ofParent(
			func() (uintptr, error) {
				return raw(syscall.SYS_SCHED_GETAFFINITY, parent, 128, uintptr(unsafe.Pointer(&cpus)))
			},
			func(n uintptr) error {
				_, err := raw(syscall.SYS_SCHED_SETAFFINITY, parent, n, uintptr(unsafe.Pointer(&cpus)))
				return err
			})),
		"set the host's I/O priority": tried(ofParent(
			func() (uintptr, error) { return raw(252, 1, parent) },
			func(v uintptr) error { _, err := raw(251, 1, parent, v); return err })),
		"make a user namespace": tried(func() error {
			cmd := exec.Command("/bin/true")
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
			return cmd.Run()
		}()),
		"make System V shared memory": tried(func() error {
			id, err := raw(syscall.SYS_SHMGET, 0, 4096, 0o1600)
			if err == nil {
				raw(syscall.SYS_SHMCTL, id, 0, 0)
			}
			return err
		}()),
		"read /etc beyond the list": readEtc,
		"own limits": tried(func() error {
			if _, err := raw(syscall.SYS_PRLIMIT64, 0, syscall.RLIMIT_NOFILE, 0,
				uintptr(unsafe.Pointer(&limit))); err != nil {
				return err
			}
			_, err := raw(syscall.SYS_PRLIMIT64, 0, syscall.RLIMIT_NOFILE,
				uintptr(unsafe.Pointer(&limit)), 0)
			return err
		}()),
		"own priority": tried(func() error {
			v, err := raw(syscall.SYS_GETPRIORITY, 0, 0)
			if err == nil {
				_, err = raw(syscall.SYS_SETPRIORITY, 0, 0, 20-v)
			}
			return err
		}()),
		"own thread": tried(func() error {
			done := make(chan struct{})
			go func() { runtime.LockOSThread(); close(done) }()
			<-done
			return nil
		}()),
		"uid": os.Geteuid(),
	}
}

type message struct {
	Type string          `json:"type"`
	ID   string          `json:"id"`
	Args json.RawMessage `json:"args"`
}

func main() {
	send(frame{"type": "hello", "name": "hostile", "version": "0.1.0",
		"capabilities": []string{"tools"}})
	send(frame{"type": "register_tool", "name": "probe", "description": "Try to get out.",
		"schema": map[string]any{"type": "object"}})
	send(frame{"type": "register_tool", "name": "power",
		"description": "Use what privileges would give.",
		"schema":      map[string]any{"type": "object"}})
	send(frame{"type": "ready"})
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	for scanner.Scan() {
		var msg message
		if json.Unmarshal(scanner.Bytes(), &msg) != nil {
			continue
		}
		switch msg.Type {
		case "tool_call":
			var a args
			if err := json.Unmarshal(msg.Args, &a); err != nil && len(msg.Args) > 0 {
				send(frame{"type": "tool_result", "id": msg.ID, "is_error": true,
					"content": []frame{{"type": "text", "text": err.Error()}}})
				continue
			}
			tools := map[string]func(args) map[string]any{"probe": probe, "power": power}
			var name struct {
				Name string `json:"name"`
			}
			json.Unmarshal(scanner.Bytes(), &name)
			tool, known := tools[name.Name]
			if !known {
				tool = probe
			}
			text, _ := json.Marshal(tool(a))
			send(frame{"type": "tool_result", "id": msg.ID,
				"content": []frame{{"type": "text", "text": string(text)}}})
		case "shutdown":
			send(frame{"type": "shutdown_ack"})
			return
		}
	}
	if scanner.Err() != nil {
		os.Exit(1)
	}
}
