// go-hello: a zot extension in Go, standard library only. It speaks the protocol
// directly: one JSON object a line on stdin and stdout, diagnostics on stderr.
//
//	go build -o go-hello .                               # a native stdio extension
//	GOOS=wasip1 GOARCH=wasm go build -o go-hello.wasm .  # a WASI preview-1 module
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// frame is one outgoing message.
type frame map[string]any

// message holds the fields of the incoming frames this extension answers.
type message struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Args     json.RawMessage `json:"args"`
	Event    string          `json:"event"`
	ToolArgs json.RawMessage `json:"tool_args"`
}

// out writes each frame as one line, straight to stdout (no buffer to forget to flush).
var out = json.NewEncoder(os.Stdout)

// send writes one frame; a closed stdout means the host is gone, so it exits.
func send(f frame) {
	if err := out.Encode(f); err != nil {
		fmt.Fprintln(os.Stderr, "cannot write a frame:", err)
		os.Exit(1)
	}
}

func main() {
	out.SetEscapeHTML(false)
	send(frame{"type": "hello", "name": "go-hello", "version": "1.0.0",
		"capabilities": []string{"commands", "tools", "events"}})
	send(frame{"type": "register_command", "name": "go-hello",
		"description": "say hello (Go): /go-hello NAME"})
	send(frame{"type": "register_tool", "name": "go_echo",
		"description": "Echo the arguments back as JSON text.",
		"schema": map[string]any{
			"type":       "object",
			"properties": map[string]any{"text": map[string]any{"type": "string"}},
			"required":   []string{"text"},
		}})
	send(frame{"type": "subscribe", "events": []string{"session_start"},
		"intercept": []string{"tool_call"}})
	send(frame{"type": "ready"})

	// A line may be far longer than bufio's 64 KiB default (a tool argument of a few
	// MiB): start with 1 MiB and let the buffer grow up to the host's 64 MiB frame cap.
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	for scanner.Scan() {
		var msg message
		if err := json.Unmarshal(scanner.Bytes(), &msg); err != nil {
			fmt.Fprintln(os.Stderr, "skipping a line that is not a frame:", err)
			continue
		}
		if msg.Type == "shutdown" {
			send(frame{"type": "shutdown_ack"})
			return
		}
		handle(msg)
	}
	if err := scanner.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "cannot read stdin:", err)
		os.Exit(1)
	}
}

// handle answers one frame; frames it does not know are ignored.
func handle(msg message) {
	switch msg.Type {
	case "tool_call":
		send(frame{"type": "tool_result", "id": msg.ID, "content": []frame{
			{"type": "text", "text": compact(msg.Args)}}})
	case "command_invoked":
		var who string // the text after "/go-hello", a JSON string
		_ = json.Unmarshal(msg.Args, &who)
		if who = strings.TrimSpace(who); who == "" {
			who = "world"
		}
		send(frame{"type": "command_response", "id": msg.ID, "action": "display",
			"display": "Hello, " + who + "! (from Go)"})
	case "event":
		if msg.Event == "session_start" {
			send(frame{"type": "notify", "level": "info", "message": "go-hello is ready"})
		}
	case "event_intercept":
		reply := frame{"type": "event_intercept_response", "id": msg.ID}
		if msg.Event == "tool_call" && mentions(msg.ToolArgs, "rm -rf") {
			reply["block"] = true
			reply["reason"] = `go-hello refused it: the arguments contain "rm -rf"`
		}
		send(reply)
	}
}

// compact is the JSON value raw on one line without spaces ("{}" if there is none).
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return "{}"
	}
	return b.String()
}

// mentions reports whether any string inside the JSON value raw contains text.
func mentions(raw json.RawMessage, text string) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	return walk(v, text)
}

func walk(v any, text string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, text)
	case []any:
		for _, x := range v {
			if walk(x, text) {
				return true
			}
		}
	case map[string]any:
		for _, x := range v {
			if walk(x, text) {
				return true
			}
		}
	}
	return false
}
