// The Go row of the zot-host bench: the published zot host's extension manager
// (internal/agent/extensions), driven the way its agent calls an extension tool.
//
// Built by the bench (go_manager.rs) inside a checkout of github.com/patriceckhart/zot
// with `go build -overlay`: an internal package is importable from its own module only.
//
// Usage: zot-bench-manager EXT_DIR ZOT_HOME. It loads the extension, says "ready", then
// for each line "FIRST N" on stdin makes N calls of the tool "echo" with {"i": FIRST+k}
// and prints the N round trips, in nanoseconds, on one line.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/patriceckhart/zot/internal/agent/extensions"
	"github.com/patriceckhart/zot/internal/extproto"
)

type quiet struct{}

func (quiet) Notify(string, string, string)                        {}
func (quiet) Submit(string)                                        {}
func (quiet) Insert(string)                                        {}
func (quiet) Display(string, string)                               {}
func (quiet) OpenPanel(string, extproto.PanelSpec)                 {}
func (quiet) UpdatePanel(string, string, string, []string, string) {}
func (quiet) ClosePanel(string, string)                            {}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "zot-bench-manager: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 3 {
		fail("usage: zot-bench-manager EXT_DIR ZOT_HOME")
	}
	ctx := context.Background()
	m := extensions.New(os.Args[2], os.Args[2], "bench", "", "", quiet{})
	if errs := m.LoadExplicit(ctx, []string{os.Args[1]}); len(errs) > 0 {
		fail("load: %v", errs)
	}
	m.WaitForReady(30 * time.Second)
	if !m.HasTool("echo") {
		fail("no tool echo")
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var first, n int64
		if _, err := fmt.Sscan(in.Text(), &first, &n); err != nil {
			fail("bad request %q: %v", in.Text(), err)
		}
		took := make([]int64, 0, n)
		for i := first; i < first+n; i++ {
			args, _ := json.Marshal(map[string]int64{"i": i})
			t := time.Now()
			res, err := m.InvokeTool(ctx, "echo", args, 60*time.Second)
			took = append(took, int64(time.Since(t)))
			if err != nil || res.IsError || len(res.Content) == 0 ||
				!strings.Contains(res.Content[0].Text, `"i":`) {
				fail("call %d: %v %+v", i, err, res)
			}
		}
		for k, d := range took {
			if k > 0 {
				out.WriteByte(' ')
			}
			fmt.Fprint(out, d)
		}
		out.WriteByte('\n')
		out.Flush()
	}
	m.Stop(time.Second)
}
