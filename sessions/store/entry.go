package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Header is the first line of a session file.
type Header struct {
	// Format is always the constant Format; a file without it is not ours.
	Format string `json:"format"`
	// Version is the format version the file was created with.
	Version int    `json:"version"`
	ID      string `json:"id"`
	// Cwd is the working directory the session was created in; a later Cwd
	// entry changes it.
	Cwd     string    `json:"cwd"`
	Created time.Time `json:"created"`
}

// Kind names what an entry records.
type Kind string

// The kinds of entries. A reader that meets a kind it does not know skips
// the entry with a warning.
const (
	KindPrompt      Kind = "prompt"
	KindAssistant   Kind = "assistant"
	KindToolResult  Kind = "tool_result"
	KindNotice      Kind = "notice"
	KindConfig      Kind = "config"
	KindTitle       Kind = "title"
	KindUsage       Kind = "usage"
	KindCompaction  Kind = "compaction"
	KindTaskStarted Kind = "task_started"
	KindTaskEnded   Kind = "task_ended"
	KindAlwaysAllow Kind = "always_allow"
	KindMode        Kind = "mode"
	KindCwd         Kind = "cwd"
	KindPlan        Kind = "plan"
	KindNoticed     Kind = "noticed"
	KindChanges     Kind = "changes"
	KindRoots       Kind = "roots"
)

// Entry is one line of a session file after the header.
type Entry struct {
	// Seq numbers the entries of a session from 1, in the order they were
	// appended; a Compaction refers to entries by it.
	Seq  int64     `json:"seq"`
	Kind Kind      `json:"kind"`
	Time time.Time `json:"time"`
	// Data is the payload of Kind, one of the payload types of this file.
	Data json.RawMessage `json:"data"`
}

// Payload is the typed content of an entry: one of the types below.
type Payload interface {
	Kind() Kind
}

// Prompt is a user prompt.
type Prompt struct {
	// Text is the prompt as the model is given it.
	Text string `json:"text"`
	// Blocks is optional, opaque JSON: the prompt as the editor sent it
	// (content blocks), for replay. The store does not look inside.
	Blocks json.RawMessage `json:"blocks,omitempty"`
	// Images are the prompt's images, stored beside the log (PutImage).
	Images []Image `json:"images,omitempty"`
}

// Assistant is one message of the model: its text, its reasoning and the
// tool calls it made, in the order the model produced them.
type Assistant struct {
	// MessageID is the id the editor was given for this message's chunks;
	// empty if none.
	MessageID string `json:"messageId,omitempty"`
	Text      string `json:"text,omitempty"`
	Reasoning string `json:"reasoning,omitempty"`
	// ReasoningField is the field the endpoint sent Reasoning in, when it
	// was not reasoning_content.
	ReasoningField string     `json:"reasoningField,omitempty"`
	ToolCalls      []ToolCall `json:"toolCalls,omitempty"`
}

// ToolCall is a tool call as the model made it.
type ToolCall struct {
	// ID is the model's call id, sent back with the result.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the arguments text exactly as the model produced it (it
	// need not be valid JSON).
	Arguments string `json:"arguments"`
}

// ToolResult is the result of one tool call: what the model was given and
// what the editor saw when the call ended.
type ToolResult struct {
	CallID string `json:"callId"`
	// Text is the result text the model was given.
	Text    string `json:"text"`
	IsError bool   `json:"isError,omitempty"`

	// What the editor saw, for replay (all optional).
	Title    string `json:"title,omitempty"`
	ToolKind string `json:"toolKind,omitempty"`
	// RawInput and Content are opaque JSON (the tool call's rawInput and its
	// final content blocks).
	RawInput json.RawMessage `json:"rawInput,omitempty"`
	// Status is the call's final status ("completed", "failed").
	Status  string          `json:"status,omitempty"`
	Content json.RawMessage `json:"content,omitempty"`
	// Hidden: the editor was shown no tool call for it (a plan update, shown
	// by its Plan entry).
	Hidden bool `json:"hidden,omitempty"`
	// Locations is opaque JSON: the files the call changed (ACP's
	// locations), for the editor to follow.
	Locations json.RawMessage `json:"locations,omitempty"`
	// Images are the images the tool returned with Text (an MCP tool's),
	// stored beside the log (PutImage) like a prompt's.
	Images []Image `json:"images,omitempty"`
}

// Notice states. A notice is queued when a task ends and delivered when it
// is added to a model request.
const (
	NoticeQueued    = "queued"
	NoticeDelivered = "delivered"
)

// Notice records a completion notice being queued for the next model
// request, or being delivered in one.
type Notice struct {
	// ID tells notices apart (a delivered entry names a queued one).
	ID string `json:"id"`
	// State is NoticeQueued or NoticeDelivered.
	State string `json:"state"`
	// Text is the notice's text; set when queued.
	Text string `json:"text,omitempty"`
}

// Config is a change of a session config option.
type Config struct {
	OptionID string `json:"optionId"`
	Value    string `json:"value"`
}

// Title is the session's title, set or changed.
type Title struct {
	Title string `json:"title"`
}

// Usage is the context usage after a model response, in tokens.
type Usage struct {
	// Used is the tokens of the last request (prompt + completion).
	Used int64 `json:"used"`
	// Size is the model's context window.
	Size int64 `json:"size"`
	// Estimated: the endpoint reported no usage; Used is an estimate.
	Estimated bool `json:"estimated,omitempty"`
	// Cost is the session's cumulative cost so far, in Currency (an ISO
	// 4217 code; empty when no cost is known).
	Cost     float64 `json:"cost,omitempty"`
	Currency string  `json:"currency,omitempty"`
}

// Compaction records that the history before KeptFromSeq was replaced by a
// summary. The model's history after it is: Summary, then the prompt of
// PromptSeq if set, then the messages of the entries from KeptFromSeq on.
type Compaction struct {
	Summary string `json:"summary"`
	// Replaced is how many messages the summary replaced.
	Replaced int `json:"replaced"`
	// KeptFromSeq is the Seq of the first entry kept verbatim; 0 means none
	// was kept (every earlier entry is summarized).
	KeptFromSeq int64 `json:"keptFromSeq"`
	// PromptSeq, when not 0, is the Seq of the prompt in hand when the
	// compaction happened, kept verbatim right after the summary although
	// it lies before KeptFromSeq (a prompt is never summarized).
	PromptSeq int64 `json:"promptSeq,omitempty"`
	// PreTokens and PostTokens are the history's size before and after.
	PreTokens  int64 `json:"preTokens"`
	PostTokens int64 `json:"postTokens"`
	// Trigger is "auto" or "manual"; Focus is the /compact focus, if any.
	Trigger string `json:"trigger,omitempty"`
	Focus   string `json:"focus,omitempty"`
	// CallID is the id of the tool call the editor was shown for it.
	CallID string `json:"callId,omitempty"`
}

// TaskStarted records that a background task of this session started.
type TaskStarted struct {
	// ID is the task id ("bash-7").
	ID      string `json:"id"`
	Command string `json:"command,omitempty"`
}

// TaskEnded records that a background task of this session ended.
type TaskEnded struct {
	ID string `json:"id"`
	// State is how it ended (e.g. "exited", "killed", "failed").
	State string `json:"state,omitempty"`
}

// AlwaysAllow records a key the user chose to always allow.
type AlwaysAllow struct {
	Key string `json:"key"`
}

// Mode is a change of the session's permission mode.
type Mode struct {
	Mode string `json:"mode"`
}

// Plan is the session's whole plan, replacing the previous one.
type Plan struct {
	Explanation string      `json:"explanation,omitempty"`
	Entries     []PlanEntry `json:"entries"`
}

// PlanEntry is one step of a Plan.
type PlanEntry struct {
	Step   string `json:"step"`
	Status string `json:"status"`
}

// Cwd is a change of the session's working directory (a load with another
// cwd).
type Cwd struct {
	Cwd string `json:"cwd"`
}

// Roots are the session's extra project roots from this entry on (ACP's
// additionalDirectories, as the last session/new, load, resume or fork
// gave them); empty: none.
type Roots struct {
	Roots []string `json:"roots"`
}

// Noticed is a finished tool call the editor was shown for a completion
// notice (a background task's end, with what it changed), that no model
// call made: kept for replay, in its place in the turn.
type Noticed struct {
	// CallID is the id the editor was given for the call.
	CallID string `json:"callId"`
	// TaskID is the task whose end the notice reported.
	TaskID string `json:"taskId,omitempty"`
	// Text is the notice as the model read it.
	Text     string `json:"text"`
	Title    string `json:"title,omitempty"`
	ToolKind string `json:"toolKind,omitempty"`
	Status   string `json:"status,omitempty"`
	// Content, Locations and RawOutput are opaque JSON, as the editor got
	// them; Content and Locations are left out of an entry that would
	// exceed its cap (the notice's text is shown instead).
	Content   json.RawMessage `json:"content,omitempty"`
	Locations json.RawMessage `json:"locations,omitempty"`
	RawOutput json.RawMessage `json:"rawOutput,omitempty"`
}

func (Prompt) Kind() Kind      { return KindPrompt }
func (Assistant) Kind() Kind   { return KindAssistant }
func (ToolResult) Kind() Kind  { return KindToolResult }
func (Notice) Kind() Kind      { return KindNotice }
func (Config) Kind() Kind      { return KindConfig }
func (Title) Kind() Kind       { return KindTitle }
func (Usage) Kind() Kind       { return KindUsage }
func (Compaction) Kind() Kind  { return KindCompaction }
func (TaskStarted) Kind() Kind { return KindTaskStarted }
func (TaskEnded) Kind() Kind   { return KindTaskEnded }
func (AlwaysAllow) Kind() Kind { return KindAlwaysAllow }
func (Mode) Kind() Kind        { return KindMode }
func (Cwd) Kind() Kind         { return KindCwd }
func (Plan) Kind() Kind        { return KindPlan }
func (Noticed) Kind() Kind     { return KindNoticed }
func (Changes) Kind() Kind     { return KindChanges }
func (Roots) Kind() Kind       { return KindRoots }

// ErrUnknownKind is returned by Decode for a kind this version does not know.
var ErrUnknownKind = errors.New("unknown entry kind")

// decoders holds, for each kind this version knows, the decoder of its
// payload into a value of its type: the closed set of kinds, in one place.
var decoders = map[Kind]func(data []byte) (Payload, error){
	KindPrompt:      decodeAs[Prompt],
	KindAssistant:   decodeAs[Assistant],
	KindToolResult:  decodeAs[ToolResult],
	KindNotice:      decodeAs[Notice],
	KindConfig:      decodeAs[Config],
	KindTitle:       decodeAs[Title],
	KindUsage:       decodeAs[Usage],
	KindCompaction:  decodeAs[Compaction],
	KindTaskStarted: decodeAs[TaskStarted],
	KindTaskEnded:   decodeAs[TaskEnded],
	KindAlwaysAllow: decodeAs[AlwaysAllow],
	KindMode:        decodeAs[Mode],
	KindCwd:         decodeAs[Cwd],
	KindPlan:        decodeAs[Plan],
	KindNoticed:     decodeAs[Noticed],
	KindChanges:     decodeAs[Changes],
	KindRoots:       decodeAs[Roots],
}

func decodeAs[T Payload](data []byte) (Payload, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// knownKind reports whether this version knows entries of kind k.
func knownKind(k Kind) bool {
	_, ok := decoders[k]
	return ok
}

// Decode returns the entry's payload as a value of its type (Prompt,
// Assistant, …, not a pointer), for a type switch.
func (e Entry) Decode() (Payload, error) {
	decode := decoders[e.Kind]
	if decode == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownKind, e.Kind)
	}
	p, err := decode(e.Data)
	if err != nil {
		return nil, fmt.Errorf("decode %s entry %d: %w", e.Kind, e.Seq, err)
	}
	return p, nil
}

// Changes is a step of the session's undo journal (what its calls changed,
// for /undo), replayed in order on load: a call's changes (Undid 0), the
// record of an /undo that took back the newest Undid records, or (Redo)
// the /undo of that /undo, which drops its record.
type Changes struct {
	CallID string        `json:"callId,omitempty"`
	Title  string        `json:"title,omitempty"`
	Files  []ChangedFile `json:"files,omitempty"`
	Undid  int           `json:"undid,omitempty"`
	Redo   bool          `json:"redo,omitempty"`
}

// ChangedFile is one file of a Changes record.
type ChangedFile struct {
	Path string `json:"path"`
	// Existed and Exists: the file was there before the call, and after.
	Existed bool `json:"existed,omitempty"`
	Exists  bool `json:"exists,omitempty"`
	// Before is its text before the call, when kept; NotKept says why not.
	Before  *string `json:"before,omitempty"`
	NotKept string  `json:"notKept,omitempty"`
	// AfterSize and AfterSum (SHA-256, hex) are what the call left.
	AfterSize int64  `json:"afterSize,omitempty"`
	AfterSum  string `json:"afterSum,omitempty"`
}
