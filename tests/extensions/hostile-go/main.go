// hostile: a classic extension, a static Go binary (no libc), whose tool `probe` tries
// what a confined extension must not do, with the os package and raw system calls, and
// says for each "ok" or "denied <error>". The paths come in the tool's arguments (the
// test plants them). Built by tests/it/confine.rs.
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
	Secret  string `json:"secret"`
	Grants  string `json:"grants"`
	Outside string `json:"outside"`
	Planted string `json:"planted"`
	Port    int    `json:"port"`
	Files   int    `json:"files"`
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
			text, _ := json.Marshal(probe(a))
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
