// Package tools is the small abstraction the agent loop drives. A tool has a
// name, a model-facing description and a JSON Schema. For each call it reads
// the model's arguments once (Prepare) and describes the call — title, kind,
// whether it streams live output, what must be approved before it runs —
// then runs it and returns the model's text, one structured raw output for
// the editor and the notes a terminal cannot show. The protocol layer only
// maps these; it never names a tool nor reads a tool's text. Implementations
// live in subpackages (tools/bashtool).
package tools

import (
	"context"
	"encoding/json"
	"strings"
)

// Caller identifies who is calling. The zero value is a non-loop caller: no
// session, no cwd.
type Caller struct {
	// SessionID owns background tasks this call starts; empty = no session.
	SessionID string
	// Cwd is the session's working directory; empty = none. A relative
	// path resolves against it.
	Cwd string
	// Roots are the session's other project roots (absolute, cleaned):
	// its own as much as Cwd is (commands may write there, the file tools
	// treat them as inside, the change tracker covers them).
	Roots []string
	// Gone reports whether a task id was one of this session's tasks
	// before the agent restarted (stopped with the process that ran it);
	// nil means none was.
	Gone func(taskID string) bool
	// Editor, when set, reads and writes text files through the editor
	// (its open buffers, its review of changes); nil when the client
	// offers no such methods.
	Editor EditorFiles
	// Ask, when set, asks the user through the editor (a form or a link it
	// shows); nil when the client declares no elicitation.
	Ask Elicitor
}

// Elicitor asks the user for input through the editor (ACP's
// elicitation/create). It is for questions, never for secrets.
type Elicitor interface {
	// Modes reports which kinds of question the editor shows: a form, a
	// link to open.
	Modes() (form, url bool)
	// Elicit asks and waits for the user's answer, or for ctx to end. An
	// error is a failure to ask (the editor refused the request); declined
	// and cancelled are answers.
	Elicit(ctx context.Context, q Elicitation) (Answer, error)
}

// Elicitation is one question. Form mode when URL is empty.
type Elicitation struct {
	// ToolCallID is the tool call the question belongs to, if any.
	ToolCallID string
	// Message says what is asked and why.
	Message string
	// Schema is a form's JSON Schema: a flat object of primitive
	// properties.
	Schema json.RawMessage
	// URL is the link a URL-mode question asks the user to open, and
	// ElicitationID its id, unique among the connection's open ones.
	URL           string
	ElicitationID string
}

// The user's actions on an elicitation.
const (
	AnswerAccept  = "accept"
	AnswerDecline = "decline"
	AnswerCancel  = "cancel"
)

// Answer is the user's answer to an Elicitation.
type Answer struct {
	// Action is one of AnswerAccept, AnswerDecline, AnswerCancel.
	Action string
	// Content is what an accepted form holds, by property name.
	Content map[string]any
}

// Offered is a tool that only some callers are offered (the model's
// requests of other callers leave it out).
type Offered interface {
	OfferedTo(c Caller) bool
}

// IsOffered reports whether tl is offered to c: a tool that is not Offered
// is offered to every caller.
func IsOffered(tl Tool, c Caller) bool {
	o, ok := tl.(Offered)
	return !ok || o.OfferedTo(c)
}

// callIDKey marks a call's context with its tool call id.
type callIDKey struct{}

// WithCallID returns ctx carrying the id of the tool call run with it, so
// what the call asks of the editor names the call it belongs to.
func WithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// CallID is the tool call id ctx carries; "" when none.
func CallID(ctx context.Context) string {
	v, _ := ctx.Value(callIDKey{}).(string)
	return v
}

// EditorFiles are the editor's own text-file methods (ACP's
// fs/read_text_file and fs/write_text_file). Paths are absolute.
type EditorFiles interface {
	ReadTextFile(ctx context.Context, path string) (string, error)
	WriteTextFile(ctx context.Context, path, content string) error
}

// sandboxKey marks a call's context: the call runs confined.
type sandboxKey struct{}

// WithSandbox returns ctx marked so that the call run with it is confined
// (a command runs in the executor's sandbox). The approver decides it per
// call, with the approval: in the session mode that runs commands in the
// sandbox without asking.
func WithSandbox(ctx context.Context) context.Context {
	return context.WithValue(ctx, sandboxKey{}, true)
}

// Sandboxed reports whether ctx was marked by WithSandbox.
func Sandboxed(ctx context.Context) bool {
	v, _ := ctx.Value(sandboxKey{}).(bool)
	return v
}

// Kind is the ACP tool kind: it lets an editor pick an icon.
type Kind string

const (
	KindRead    Kind = "read"
	KindEdit    Kind = "edit"
	KindDelete  Kind = "delete"
	KindMove    Kind = "move"
	KindSearch  Kind = "search"
	KindExecute Kind = "execute"
	KindThink   Kind = "think"
	KindFetch   Kind = "fetch"
	KindOther   Kind = "other"
)

// SubjectKind says how a Subject is checked before the call runs.
type SubjectKind int

const (
	// NoApproval: the call runs without asking — it touches only what the
	// caller already owns, or it will not run at all (its arguments do not
	// validate).
	NoApproval SubjectKind = iota
	// ShellCommand: Subject.Text is a shell command line, exactly as it will
	// run. It is checked against the --allow/--deny shell patterns, and
	// "always" remembers the programs it runs.
	ShellCommand
	// ToolKey: Subject.Text names the tool itself, e.g. "mcp:<server>/<tool>".
	// --allow/--deny patterns name it ("mcp:<server>/*" for every tool of a
	// server), and "always" remembers it as is.
	ToolKey
	// FileRead: Subject.Text is the absolute path a call reads or searches
	// (a file or a directory). --allow/--deny patterns name it as
	// "read:<path>"; inside the session's directory it is not asked.
	FileRead
	// FileWrite: Subject.Text is the absolute path a call writes.
	// --allow/--deny patterns name it as "edit:<path>".
	FileWrite
	// Confirm: the user is asked in every mode, whatever the rules and
	// "always" answers say (none is offered): /undo about to overwrite
	// files someone changed since.
	Confirm
	// UserCommand: what the user's own slash command does (/undo's
	// writes): not asked, the user asked for it; confined in the mode
	// that confines commands, as the file tools' operations are.
	UserCommand
)

func (k SubjectKind) String() string {
	switch k {
	case NoApproval:
		return "none"
	case ShellCommand:
		return "shell command"
	case ToolKey:
		return "tool"
	case FileRead:
		return "file read"
	case FileWrite:
		return "file write"
	case Confirm:
		return "confirmation"
	case UserCommand:
		return "user command"
	}
	return "unknown"
}

// Subject is what a call must be approved for before it runs. The zero value
// needs no approval.
type Subject struct {
	Kind SubjectKind
	// Text is the command line (ShellCommand), the tool key (ToolKey) or
	// the path (FileRead, FileWrite); empty for NoApproval.
	Text string
	// Inside: the path (its links resolved) is inside the session's
	// directory or one of its other roots (FileRead, FileWrite).
	Inside bool
	// Root is that directory, as the session names it (its Cwd or one of
	// its Roots); empty when not Inside. An "always" answer about a write
	// there covers it.
	Root string
	// Dir is the directory an "always" answer about a read outside the
	// session's directory covers: the one searched, or the file's.
	Dir string
}

// Shell is the subject of a call that runs command as a shell line.
func Shell(command string) Subject { return Subject{Kind: ShellCommand, Text: command} }

// Key is the subject of a call approved per tool, by its key.
func Key(key string) Subject { return Subject{Kind: ToolKey, Text: key} }

// Call is a tool's description of one call, made once from its arguments
// before it runs: the editor shows it, and the approver asks about its
// Subject alone.
type Call struct {
	// Title is one line: the command itself for bash, or its first line
	// and how many follow.
	Title string
	// Body is the whole of what the call runs, as it is shown (every
	// character visible, see Visible), when Title shows only part of it
	// (a command of several lines, or a long one); empty when Title says
	// it all. The editor shows it as a code block with the call and where
	// the user decides on it.
	Body string
	// Kind is the ACP tool kind; empty reads as KindOther.
	Kind Kind
	// Description is the model's one-line description of the call, shown
	// beside the title; empty if none.
	Description string
	// Live: the call streams output while it runs (a foreground command),
	// so an editor may show it in a terminal.
	Live bool
	// Cwd is the directory the call runs in, if any.
	Cwd string
	// Subject is what must be approved before the call runs.
	Subject Subject
	// Hidden: the editor shows no tool call for it (its result's Plan has a
	// display of its own). The model's history has it like any call.
	Hidden bool
	// Preview, when set, is what the call would change, for a question
	// asked before it runs (a file tool's diff); nil when there is none.
	Preview func(ctx context.Context) []Change
}

// Live receives a running call's output as it arrives, one read at a time
// and in the order read. It must return quickly and must not keep c.Data.
type Live func(c Chunk)

// Chunk is one read of a running call's output.
type Chunk struct {
	// Stream is "stdout" or "stderr".
	Stream string
	Data   []byte
	// FullOutput names a file that holds every byte of Stream, once the
	// call has one (the stream outgrew what is kept in memory); empty until
	// then, and when there is none. A display that shows less than all of
	// Stream names it to say where the rest is.
	FullOutput string
}

// Prepared is one call read from its arguments: what it is, and how to run
// it or answer it without running.
type Prepared struct {
	Call Call
	// Run runs the call, once. live, if non-nil, receives its output as it
	// arrives. Every failure the model should hear about (bad arguments, a
	// spawn error, an aborted command) is a Result with IsError set.
	Run func(ctx context.Context, live Live) Result
	// Skip answers the call without running it (it was refused, or the turn
	// ended first): text is what the model reads and the result is an error.
	// Nil means Skipped's default.
	Skip func(text string) Result
}

// Skipped is the result of a call answered without running: p.Skip's, or an
// error result whose raw output says only that it is one.
func (p Prepared) Skipped(text string) Result {
	if p.Skip != nil {
		return p.Skip(text)
	}
	return Result{Text: text, IsError: true, Raw: ErrorOutput{IsError: true}}
}

// Result is what a call produced: the model's text and, beside it, what the
// editor shows, built by the same code.
type Result struct {
	// Text is exactly what the model sees.
	Text string
	// IsError marks infrastructure and argument failures and calls that did
	// not run; a non-zero exit is not an error.
	IsError bool
	// Failed: the call ran but did not succeed (a non-zero exit, a signal, a
	// timeout). The model reads Text either way; the editor marks the call
	// failed, as it does an error result.
	Failed bool
	// Exit is how a Live call's process ended, for an editor's terminal; nil
	// when none ended (an error result, a call that never ran).
	Exit *Exit
	// Raw is the structured outcome for the editor (ACP's rawOutput); it
	// must marshal to JSON. Nil means none.
	Raw any
	// Notes are the lines of Text that a terminal showing the live output
	// cannot show by itself (a timeout, where the full output went), in
	// Text's order, each exactly as Text has it. Empty when there are none.
	Notes []string
	// Images are images the call returned (an MCP tool's image content),
	// which Text notes; a model that reads images is sent them too.
	Images []Image
	// Plan, when set, is the session's whole plan from now on: the editor
	// shows it in its plan panel and the session keeps it.
	Plan *Plan
	// Changes is what the call changed in the files, for the editor only
	// (the model reads Text alone), in the order shown. Empty when nothing
	// changed or nothing was measured.
	Changes []Change
	// Locations are the changed files the editor may open, each once.
	Locations []Location
	// Changed is what /undo needs of the same changes: every changed file
	// (those past the editor's cut too), in Changes' order.
	Changed []FileChange
}

// FileChange is one file a call changed, as /undo takes it back: what it
// was before, when that was kept, and what the call left, to tell whether
// someone changed it since.
type FileChange struct {
	// Path is absolute.
	Path string
	// Existed: the file was there before the call. Exists: after it.
	Existed, Exists bool
	// Before is the file's text before the call, when it Existed and the
	// text was kept; nil otherwise.
	Before *string
	// NotKept says why a file that Existed has no Before, for a person
	// ("binary", "larger than 256 KiB", …).
	NotKept string
	// AfterSize is the size the call left the file at (Exists).
	AfterSize int64
	// AfterSum is the SHA-256 (hex) of the content the call left, when it
	// was read; empty when only AfterSize tells the version apart.
	AfterSum string
}

// ChangeRecord is what one call changed, kept by its session for /undo.
type ChangeRecord struct {
	// CallID is the tool call's id; Title the title the editor showed.
	CallID, Title string
	Files         []FileChange
	// Undid, when not 0, makes this the record of an /undo that took back
	// that many records (which stay below it, undone): undoing it puts
	// their changes back.
	Undid int
}

// Noticed is what a background task changed, shown to the editor with the
// completion notice that reported its end (when no bash_output call did
// first). Result's Text is the notice, as the model reads it.
type Noticed struct {
	TaskID string
	Result
}

// Change is one entry of what a call changed: a text file's diff, or a
// line said instead (a binary or large file, the files past the cut).
type Change struct {
	// Path is the file's absolute path; empty for a line about no one file.
	Path string
	// Line, when set, is shown instead of a diff.
	Line string
	// OldText is the file before; nil for a file the call created.
	OldText *string
	// NewText is the file after; "" for a file the call deleted.
	NewText string
}

// Location is a file the editor may open, at a line.
type Location struct {
	// Path is absolute.
	Path string
	// Line is 0-based (a row, as Zed reads it); nil means none (a binary
	// file).
	Line *int
}

// Image is an image a tool returned.
type Image struct {
	// MimeType is the image's type ("image/png").
	MimeType string
	// Data is the image, base64 (standard encoding).
	Data string
}

// Plan is a session's task plan, always whole: each one replaces the last.
type Plan struct {
	Explanation string      `json:"explanation,omitempty"`
	Entries     []PlanEntry `json:"entries"`
}

// PlanEntry is one step of a Plan.
type PlanEntry struct {
	Step string `json:"step"`
	// Status is one of the Plan* statuses.
	Status string `json:"status"`
}

// The statuses of a plan step, as the model and ACP spell them.
const (
	PlanPending    = "pending"
	PlanInProgress = "in_progress"
	PlanCompleted  = "completed"
)

// PlanMark is how a text view marks a step of each status: [x] done, [>]
// in progress, [ ] the rest.
func PlanMark(status string) string {
	switch status {
	case PlanCompleted:
		return "[x]"
	case PlanInProgress:
		return "[>]"
	}
	return "[ ]"
}

// PlanBlock is a plan as a terminal shows it where it happens: a "• Plan"
// line, then a step a line, indented and marked (PlanMark).
func PlanBlock(entries []PlanEntry) string {
	var b strings.Builder
	b.WriteString("• Plan")
	for _, e := range entries {
		b.WriteString("\n  " + PlanMark(e.Status) + " " + e.Step)
	}
	return b.String()
}

// Exit is how a process ended.
type Exit struct {
	// Code is the exit status; nil when a signal ended the process.
	Code *int
	// Signal names the signal that ended the process ("SIGTERM"); empty if
	// it exited.
	Signal string
}

// ErrorOutput is the raw output of a result that has nothing structured to
// say but whether it is an error.
type ErrorOutput struct {
	IsError bool `json:"isError,omitempty"`
}

// Tool is one model-facing tool.
type Tool interface {
	Name() string
	// Description is written for the model.
	Description() string
	// Schema is the JSON Schema of the arguments object.
	Schema() json.RawMessage
	// Prepare reads a call's raw arguments, once, for the caller. It never
	// fails: arguments that do not validate still get a title, no Subject
	// (nothing would run) and a Run that tells the model what is wrong.
	Prepare(caller Caller, args json.RawMessage) Prepared
}
