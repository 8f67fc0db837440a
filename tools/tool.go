// Package tools is the small abstraction the agent loop drives: a tool has a
// name, a model-facing description and a JSON Schema, and a call that gets the
// calling session and returns text plus an is-error flag. Implementations live
// in subpackages (tools/bashtool).
package tools

import (
	"context"
	"encoding/json"
)

// Caller identifies who is calling. The zero value is a non-loop caller: no
// session, no cwd.
type Caller struct {
	// SessionID owns background tasks this call starts; empty = no session.
	SessionID string
	// Cwd is the session's working directory; empty = none.
	Cwd string
}

// Call is one invocation.
type Call struct {
	Caller Caller
	// Args is the raw JSON arguments object the model sent.
	Args json.RawMessage
	// Live, if set, receives a foreground command's output as it arrives
	// (stream is "stdout" or "stderr"). It must return quickly and must not
	// keep p.
	Live func(stream string, p []byte)
}

// Result is what the model is told, plus presentation data for the editor.
type Result struct {
	// Text is exactly what the model sees.
	Text string
	// IsError marks infrastructure and argument failures; a non-zero exit is
	// not an error.
	IsError bool
	// Display describes the call for an editor. Its zero value is valid.
	Display Display
}

// Display is presentation data computed by the tool from its arguments and
// result; the protocol layer only maps it.
type Display struct {
	// Title is one line: the command itself for bash.
	Title string
	// Kind is the ACP tool kind ("execute", "read", "other" …).
	Kind string
	// Description is the model's one-line description of the call.
	Description string
	// Live: the call streams output while it runs (a foreground command),
	// so an editor may show it in a terminal.
	Live bool
	// Cwd is the directory the command ran in, if any.
	Cwd string
	// ExitCode is set when a process exited with a code.
	ExitCode *int
	// Signal names the signal that ended the process.
	Signal string
	// TimedOut: the executor's timer fired.
	TimedOut bool
	// Truncated: some output was kept only in a spill file.
	Truncated bool
	// SpillPaths lists the spill files holding full output.
	SpillPaths []string
	// TaskID is the background task this call started or addressed.
	TaskID string
}

// Tool is one model-facing tool.
type Tool interface {
	Name() string
	// Description is written for the model.
	Description() string
	// Schema is the JSON Schema of the arguments object.
	Schema() json.RawMessage
	// Describe computes the editor's presentation of a call before it runs
	// (title, kind, description) from its raw arguments; it never fails —
	// malformed arguments yield a generic title.
	Describe(caller Caller, args json.RawMessage) Display
	// Run executes a call. Every failure the model should hear about (bad
	// arguments, a spawn error, an aborted command) is a Result with IsError
	// set; a non-zero exit is a plain Result that carries its marker.
	Run(ctx context.Context, call Call) Result
}
