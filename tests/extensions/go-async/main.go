// go-async: a zot extension in Go in the shape of the published zotext SDK: the main loop
// reads stdin and answers each command, tool call and interception in a goroutine of its
// own, so a slow handler never holds up the next frame. Under WASI preview 1 the answer
// comes only if the host lets the runtime run other goroutines while one waits for stdin.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

type frame map[string]any

type message struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	Event    string          `json:"event"`
	PanelID  string          `json:"panel_id"`
	Key      string          `json:"key"`
	ToolArgs json.RawMessage `json:"tool_args"`
	DataDir  string          `json:"data_dir"`
}

var (
	mu  sync.Mutex
	out = json.NewEncoder(os.Stdout)
	// dataDir is where hello_ack says the extension keeps its data.
	dataDir string
	counter sync.Mutex
)

func send(f frame) {
	mu.Lock()
	defer mu.Unlock()
	if err := out.Encode(f); err != nil {
		fmt.Fprintln(os.Stderr, "cannot write a frame:", err)
		os.Exit(1)
	}
}

func main() {
	out.SetEscapeHTML(false)
	send(frame{"type": "hello", "name": "go-async", "version": "1.0.0",
		"capabilities": []string{"commands", "tools", "events", "panels"}})
	send(frame{"type": "register_command", "name": "go-async", "description": "say hello"})
	send(frame{"type": "register_command", "name": "go-async-panel",
		"description": "open a panel that answers keys"})
	send(frame{"type": "register_tool", "name": "go_wait",
		"description": "Answer after `ms` milliseconds, in a goroutine.",
		"schema": map[string]any{"type": "object",
			"properties": map[string]any{"ms": map[string]any{"type": "integer"}}}})
	send(frame{"type": "register_tool", "name": "go_count",
		"description": "Count the calls, in a file of the data dir.",
		"schema":      map[string]any{"type": "object"}})
	send(frame{"type": "subscribe", "events": []string{"session_start"},
		"intercept": []string{"tool_call"}})
	send(frame{"type": "ready"})

	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	var pending sync.WaitGroup
	for scanner.Scan() {
		var msg message
		if err := json.Unmarshal(scanner.Bytes(), &msg); err != nil {
			continue
		}
		if msg.Type == "hello_ack" {
			dataDir = msg.DataDir
			continue
		}
		if msg.Type == "shutdown" {
			pending.Wait()
			send(frame{"type": "shutdown_ack"})
			return
		}
		pending.Add(1)
		go func() {
			defer pending.Done()
			handle(msg)
		}()
	}
}

func handle(msg message) {
	switch msg.Type {
	case "tool_call":
		if msg.Name == "go_count" {
			send(frame{"type": "tool_result", "id": msg.ID, "content": []frame{
				{"type": "text", "text": count()}}})
			return
		}
		var args struct {
			Ms int `json:"ms"`
		}
		_ = json.Unmarshal(msg.Args, &args)
		time.Sleep(time.Duration(args.Ms) * time.Millisecond)
		send(frame{"type": "tool_result", "id": msg.ID, "content": []frame{
			{"type": "text", "text": fmt.Sprintf("waited %d ms", args.Ms)}}})
	case "command_invoked":
		if msg.Name == "go-async-panel" {
			send(frame{"type": "command_response", "id": msg.ID, "action": "open_panel",
				"open_panel": frame{"id": "go-async", "title": "Go", "lines": []string{"Press a key."},
					"footer": "q: close"}})
			return
		}
		send(frame{"type": "command_response", "id": msg.ID, "action": "display",
			"display": "Hello from a goroutine"})
	case "panel_key":
		if msg.Key == "q" {
			send(frame{"type": "panel_close", "panel_id": msg.PanelID})
			return
		}
		send(frame{"type": "panel_render", "panel_id": msg.PanelID, "title": "Go",
			"lines": []string{fmt.Sprintf("You pressed %q.", msg.Key)}, "footer": "q: close"})
	case "event":
		if msg.Event == "session_start" {
			send(frame{"type": "notify", "level": "info", "message": "go-async is ready"})
		}
	case "event_intercept":
		reply := frame{"type": "event_intercept_response", "id": msg.ID}
		if strings.Contains(string(msg.ToolArgs), "rm -rf") {
			reply["block"] = true
			reply["reason"] = "go-async refused it"
		}
		send(reply)
	}
}

// count adds one to the number in the data dir's `count` file and says it.
func count() string {
	counter.Lock()
	defer counter.Unlock()
	path := filepath.Join(dataDir, "count")
	n := 0
	if b, err := os.ReadFile(path); err == nil {
		n, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	n++
	if err := os.WriteFile(path, []byte(strconv.Itoa(n)), 0o644); err != nil {
		return "cannot write: " + err.Error()
	}
	return fmt.Sprintf("call %d", n)
}
