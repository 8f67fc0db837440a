// Package asktool is the ask_user tool: the model asks the user a question
// through the editor (ACP's elicitation/create, a form) and reads the
// answer as the tool's result. It is offered only to callers whose editor
// shows forms; declined and cancelled are answers the model can act on.
package asktool

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/tools"
)

// Name is the tool's name, as the model calls it.
const Name = "ask_user"

const description = `Ask the user a question and wait for the answer, when you cannot go on well without ` +
	`their decision: a choice between approaches, a requirement you cannot find out yourself. Give ` +
	`"options" for a choice (the user may still write their own answer); without them the user types ` +
	`one. Ask one clear question at a time. Never ask for passwords, API keys, tokens or other secrets: ` +
	`tell the user how to provide them instead.`

var schema = json.RawMessage(`{"type":"object","properties":{` +
	`"question":{"type":"string","description":"The question, complete in itself."},` +
	`"options":{"type":"array","items":{"type":"string"},"description":"Optional: the answers to choose from, each short."}},` +
	`"required":["question"]}`)

// Bounds on what one question may hold: a form is read by a person.
const (
	maxQuestion = 2000
	maxOptions  = 20
	maxOption   = 200
)

// The texts the model reads.
const (
	textDeclined    = "The user declined to answer."
	textCancelled   = "The user dismissed the question without answering."
	textNothing     = "The user answered nothing."
	textUnavailable = "Error: ask_user is not available: this editor cannot show questions. Ask in your reply instead."
	textSecret      = "Error: ask_user never asks for secrets (passwords, API keys, tokens, private keys): tell the user how to set it up themselves instead, without sending it to you."
)

// Tool returns the ask_user tool.
func Tool() tools.Tool { return askTool{} }

type askTool struct{}

func (askTool) Name() string            { return Name }
func (askTool) Description() string     { return description }
func (askTool) Schema() json.RawMessage { return schema }

// OfferedTo: only an editor that shows forms can answer.
func (askTool) OfferedTo(c tools.Caller) bool { return canAsk(c) }

func canAsk(c tools.Caller) bool {
	if c.Ask == nil {
		return false
	}
	form, _ := c.Ask.Modes()
	return form
}

// question is one call's arguments, read.
type question struct {
	Text    string   `json:"question"`
	Options []string `json:"options,omitempty"`
}

// output is the call's raw output for the editor.
type output struct {
	Question string   `json:"question"`
	Options  []string `json:"options,omitempty"`
	Action   string   `json:"action,omitempty"`
	Answer   string   `json:"answer,omitempty"`
	IsError  bool     `json:"isError,omitempty"`
}

func (askTool) Prepare(c tools.Caller, raw json.RawMessage) tools.Prepared {
	q, err := parse(raw)
	call := tools.Call{Title: title(q.Text), Kind: tools.KindOther}
	if err != nil {
		return tools.Prepared{Call: call, Run: failed(q, "Error: "+err.Error())}
	}
	if !canAsk(c) {
		return tools.Prepared{Call: call, Run: failed(q, textUnavailable)}
	}
	if asksForSecret(q.Text) {
		return tools.Prepared{Call: call, Run: failed(q, textSecret)}
	}
	return tools.Prepared{Call: call, Run: func(ctx context.Context, _ tools.Live) tools.Result {
		return ask(ctx, c.Ask, q)
	}}
}

func failed(q question, text string) func(context.Context, tools.Live) tools.Result {
	return func(context.Context, tools.Live) tools.Result {
		return tools.Result{Text: text, IsError: true, Raw: output{Question: q.Text, Options: q.Options, IsError: true}}
	}
}

// title is the call's one line: the question's first line, shown as is.
func title(q string) string {
	line, _, more := strings.Cut(strings.TrimSpace(q), "\n")
	line = tools.Visible(line)
	if r := []rune(line); len(r) > 120 {
		line, more = string(r[:119]), true
	}
	if more {
		line += "…"
	}
	if line == "" {
		return "Ask the user"
	}
	return "Ask: " + line
}

func ask(ctx context.Context, e tools.Elicitor, q question) tools.Result {
	a, err := e.Elicit(ctx, tools.Elicitation{
		ToolCallID: tools.CallID(ctx),
		Message:    q.Text,
		Schema:     formSchema(q.Options),
	})
	out := output{Question: q.Text, Options: q.Options, Action: a.Action}
	switch {
	case err != nil && ctx.Err() != nil:
		out.IsError = true
		return tools.Result{Text: "Error: the question was withdrawn: the turn ended", IsError: true, Raw: out}
	case err != nil:
		out.IsError = true
		return tools.Result{Text: "Error: the question could not be asked: " + err.Error(), IsError: true, Raw: out}
	}
	switch a.Action {
	case tools.AnswerAccept:
		out.Answer = answerText(a.Content)
		if out.Answer == "" {
			return tools.Result{Text: textNothing, Raw: out}
		}
		return tools.Result{Text: "The user answered: " + out.Answer, Raw: out}
	case tools.AnswerDecline:
		return tools.Result{Text: textDeclined, Raw: out}
	default:
		out.Action = tools.AnswerCancel
		return tools.Result{Text: textCancelled, Raw: out}
	}
}

// The form's fields: a choice among the options and, beside it, an answer
// of the user's own; or the one free answer.
const (
	fieldAnswer = "answer"
	fieldOther  = "other"
)

func formSchema(options []string) json.RawMessage {
	props := map[string]any{}
	var required []string
	if len(options) == 0 {
		props[fieldAnswer] = map[string]any{"type": "string", "title": "Answer"}
		required = []string{fieldAnswer}
	} else {
		props[fieldAnswer] = map[string]any{"type": "string", "title": "Choose one", "enum": options}
		props[fieldOther] = map[string]any{"type": "string", "title": "Or answer in your own words"}
	}
	s := map[string]any{"type": "object", "properties": props}
	if required != nil {
		s["required"] = required
	}
	b, _ := json.Marshal(s)
	return b
}

// answerText is what an accepted form says: the choice, the user's own
// words, or both.
func answerText(content map[string]any) string {
	choice := strings.TrimSpace(stringOf(content[fieldAnswer]))
	other := strings.TrimSpace(stringOf(content[fieldOther]))
	switch {
	case choice != "" && other != "":
		return choice + "\n(and added: " + other + ")"
	case choice != "":
		return choice
	}
	return other
}

// stringOf reads a form value: a client may send what it rendered as a
// number or a boolean.
func stringOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// parse validates the arguments; its errors are what the model reads.
func parse(raw json.RawMessage) (question, error) {
	var q question
	args, err := tools.ParseArgs(raw)
	if err != nil {
		return q, err
	}
	if q.Text, err = args.String("question", false); err != nil {
		return q, err
	}
	if strings.TrimSpace(q.Text) == "" {
		return q, fmt.Errorf(`"question" must be a non-empty string`)
	}
	if utf8.RuneCountInString(q.Text) > maxQuestion {
		return q, fmt.Errorf(`"question" is longer than %d characters: ask something shorter`, maxQuestion)
	}
	if v, ok := args.Lookup("options"); ok {
		if q.Options, err = parseOptions(v); err != nil {
			return q, err
		}
	}
	return q, nil
}

func parseOptions(v json.RawMessage) ([]string, error) {
	var opts []string
	if json.Unmarshal(v, &opts) != nil {
		return nil, fmt.Errorf(`"options" must be an array of strings`)
	}
	if len(opts) > maxOptions {
		return nil, fmt.Errorf(`"options" has %d answers; at most %d`, len(opts), maxOptions)
	}
	seen := make(map[string]bool, len(opts))
	for i, o := range opts {
		o = strings.TrimSpace(o)
		switch {
		case o == "":
			return nil, fmt.Errorf(`options[%d] is empty`, i)
		case utf8.RuneCountInString(o) > maxOption:
			return nil, fmt.Errorf(`options[%d] is longer than %d characters`, i, maxOption)
		case seen[o]:
			return nil, fmt.Errorf(`options[%d] repeats %q`, i, o)
		}
		seen[o] = true
		opts[i] = o
	}
	return opts, nil
}

// A question asks for a secret when it names one and asks the user for
// it. A form is no place for a secret (ACP forbids it: the answer goes into
// the model's context); a question about secrets ("keep the API key in
// .env?") is fine.
//
// Compiled on first use: every process of the binary (the sandbox's
// zygote, the watchdog) would pay for them at start otherwise.
var (
	secretWord = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(passwords?|passphrases?|passcodes?|api[ _-]?keys?|` +
			`(access|auth|authentication|api|bearer|github|gitlab|npm|personal access|refresh|session)[ _-]?tokens?|` +
			`client secrets?|secret[ _-]?(keys?|values?)|private[ _-]?keys?|ssh[ _-]?keys?|credentials?|` +
			`one[ -]time (codes?|passwords?)|otp|(2fa|mfa) codes?|recovery codes?|seed phrases?|` +
			`credit card( numbers?)?|card numbers?|cvv)\b`)
	})
	askingFor = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(your|enter|provide|paste|type|give|share|send|tell me|what is|what's|what are)\b`)
	})
)

func asksForSecret(q string) bool {
	return secretWord().MatchString(q) && askingFor().MatchString(q)
}
