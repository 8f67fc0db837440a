package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"go.uber.org/zap"
)

// Compaction triggers.
const (
	TriggerAuto   = "auto"
	TriggerManual = "manual"
)

// Compaction is one replacement of the older part of a conversation by a
// summary the model wrote of it.
//
// The conversation it applies to is the one the turn sends the model: the
// turn's History followed by every message added since (Outcome.Messages so
// far), with earlier compactions of the turn applied. After it, that
// conversation is Message(), then the prompt in hand when PromptKept
// (never summarized: the model answers the user's words, not a summary of
// them), then its messages from KeptFrom on.
type Compaction struct {
	// ID is the tool call id the editor is shown for it.
	ID string
	// Trigger is TriggerAuto or TriggerManual; Focus is the /compact focus,
	// if any.
	Trigger string
	Focus   string
	// Summary is the model's summary (set once it succeeded).
	Summary string
	// KeptFrom is the index of the first message kept verbatim; it is also
	// how many messages the summary replaced. len(conversation) when none
	// was kept.
	KeptFrom int
	// Kept is how many messages were kept verbatim from KeptFrom on.
	Kept int
	// PromptKept: the prompt in hand, at index PromptAt, lay before
	// KeptFrom and was kept verbatim right after the summary. Otherwise the
	// prompt, if any, is among the kept messages.
	PromptKept bool
	PromptAt   int
	// PreTokens and PostTokens are the conversation's estimated size before
	// and after, in tokens (system prompt and tools not counted).
	PreTokens  int
	PostTokens int
	// Spent is what the summary request counted, as the endpoint reported
	// it (also when its answer was of no use): it is paid for like any
	// other request.
	Spent Usage
}

// summaryIntro opens the user message that stands for the summarized part.
const summaryIntro = "The earlier part of this conversation was compacted to fit the context window. Summary of it:\n\n"

// Message is the user message that stands for the summarized messages.
func (c Compaction) Message() Message {
	return Message{Role: RoleUser, Content: summaryIntro + c.Summary}
}

// promptPlaceholder stands for the prompt in hand in a summary request:
// what the summary is of never includes it.
const promptPlaceholder = "(the user's current request: it is kept word for word after your summary, do not summarize it)"

// SummaryMessage builds the message a stored compaction stands for, for a
// session rebuilt from its store.
func SummaryMessage(summary string) Message {
	return Compaction{Summary: summary}.Message()
}

// ErrNothingToCompact: the conversation has nothing older than what is kept.
var ErrNothingToCompact = errors.New("nothing to compact yet")

// keepTurns is how many of the latest turns a compaction keeps verbatim when
// they fit keepShare of the window.
const (
	keepTurns = 2
	keepShare = 0.25
)

// cutPoint chooses where the kept part of conv starts: before a user
// message (a turn boundary) when the last turns fit budget, else before an
// assistant message of the last turn, else nothing is kept. Never before a
// tool result, so a tool call is never separated from its result; never 0,
// so something is summarized. 0 only for an empty conversation.
func cutPoint(conv []Message, budget int) int {
	var users []int
	for i, m := range conv {
		if i > 0 && m.Role == RoleUser {
			users = append(users, i)
		}
	}
	for j := max(0, len(users)-keepTurns); j < len(users); j++ {
		if EstimateMessages(conv[users[j]:]) <= budget {
			return users[j]
		}
	}
	start := 1
	if len(users) > 0 {
		start = users[len(users)-1] + 1
	}
	for i := start; i < len(conv); i++ {
		if conv[i].Role == RoleAssistant && EstimateMessages(conv[i:]) <= budget {
			return i
		}
	}
	return len(conv)
}

// summarySystem is the system prompt of a summary request.
const summarySystem = `You write the summary that replaces the older part of a conversation between a user and dsh, a coding agent working in the user's editor through a bash tool. The agent will continue the work from your summary alone: the messages you summarize are dropped.

Write a concise, factual summary with these parts:
1. The user's goals and requests, in their own words where the wording matters.
2. Decisions taken, constraints and preferences the user stated.
3. Files, directories and commands that matter: exact paths, exact commands, and what they showed (errors, versions, results).
4. Background tasks: every task id (bash-N) with its command and its last known state (running, finished with exit code N, killed).
5. What the user asked last and what remains to be done.

Leave out pleasantries and output that no longer matters. Do not call tools; answer with the summary only.`

// maxRenderedResult and maxRenderedMessage bound one tool result and one
// other message in the summary request, so that it fits even when a single
// message did not: their beginning and their end are kept.
const (
	maxRenderedResult  = 4000
	maxRenderedMessage = 16000
)

// summaryRequest asks the model to summarize msgs; msgs[pin] (pin >= 0)
// is the prompt in hand, which is not sent, only named.
func summaryRequest(msgs []Message, pin int, focus string) Request {
	var b strings.Builder
	b.WriteString("Summarize the conversation below.")
	if focus != "" {
		fmt.Fprintf(&b, " Focus on: %s", focus)
	}
	b.WriteString("\n\n<conversation>\n")
	for i, m := range msgs {
		switch {
		case i == pin:
			fmt.Fprintf(&b, "[%s]\n%s\n\n", m.Role, promptPlaceholder)
		case m.Role == RoleTool:
			fmt.Fprintf(&b, "[tool result %s]\n%s\n\n", m.ToolCallID, cutMiddle(m.Content, maxRenderedResult))
		default:
			fmt.Fprintf(&b, "[%s]\n", m.Role)
			if m.Content != "" {
				b.WriteString(cutMiddle(m.Content, maxRenderedMessage))
				b.WriteString("\n")
			}
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "[tool call %s: %s %s]\n", c.ID, c.Name, c.Arguments)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("</conversation>")
	return Request{Messages: []Message{
		{Role: RoleSystem, Content: summarySystem},
		{Role: RoleUser, Content: b.String()},
	}}
}

// cutMiddle keeps the first and last max/2 bytes of s (at rune
// boundaries), saying how much was cut.
func cutMiddle(s string, max int) string {
	if len(s) <= max {
		return s
	}
	head, tail := max/2, len(s)-max/2
	for head > 0 && !runeStart(s[head]) {
		head--
	}
	for tail < len(s) && !runeStart(s[tail]) {
		tail++
	}
	return fmt.Sprintf("%s\n[… %d bytes cut …]\n%s", s[:head], tail-head, s[tail:])
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

// compact summarizes the older part of conv (asking model, empty for the
// provider's own) and returns the new conversation. conv[pin] is the
// prompt in hand (pin < 0: none, as for /compact): it is never summarized,
// and stays word for word after the summary when the cut falls after it.
// The editor sees the compaction start and end (EventCompactionStart,
// EventCompactionEnd); on failure conv is returned unchanged with the error.
func (l *Loop) compact(ctx context.Context, model string, conv []Message, pin int, trigger, focus string, emit func(Event), log *zap.Logger) ([]Message, Compaction, error) {
	budget := int(float64(l.window()) * keepShare)
	k := cutPoint(conv, budget)
	if pin >= len(conv) {
		pin = -1
	}
	promptKept := pin >= 0 && pin < k
	// Summarized are conv[:k] but the prompt: something must be, and an
	// automatic compaction of a single message would not make room.
	summarized := k
	if promptKept {
		summarized--
	}
	if summarized == 0 || (trigger == TriggerAuto && summarized < 2) {
		return conv, Compaction{}, ErrNothingToCompact
	}
	c := Compaction{ID: "compact-" + uuid.NewString(), Trigger: trigger, Focus: focus, KeptFrom: k, PromptKept: promptKept, PromptAt: pin, PreTokens: EstimateMessages(conv)}
	emit(Event{Kind: EventCompactionStart, Compaction: c})
	fail := func(err error) ([]Message, Compaction, error) {
		log.Warn("compaction failed", zap.String("trigger", trigger), zap.Error(err))
		emit(Event{Kind: EventCompactionEnd, Compaction: c, Err: err})
		return conv, c, err
	}
	hidden := -1
	if promptKept {
		hidden = pin
	}
	req := summaryRequest(conv[:k], hidden, focus)
	req.Model = model
	resp, err := l.Provider.Stream(ctx, req, func(Delta) {})
	if err != nil {
		if ctx.Err() != nil {
			return fail(fmt.Errorf("compaction cancelled: %w", ctx.Err()))
		}
		if !errors.Is(err, ErrProvider) {
			err = fmt.Errorf("%w: summary request: %w", ErrProvider, err)
		}
		return fail(err)
	}
	c.Spent = resp.Usage
	summary := strings.TrimSpace(resp.Message.Content)
	if summary == "" {
		return fail(fmt.Errorf("%w: the model answered the summary request with no text", ErrProvider))
	}
	c.Summary = summary
	c.Kept = len(conv) - k
	next := make([]Message, 0, 2+len(conv)-k)
	next = append(next, c.Message())
	if promptKept {
		next = append(next, conv[pin])
	}
	next = append(next, conv[k:]...)
	c.PostTokens = EstimateMessages(next)
	log.Info("conversation compacted", zap.String("trigger", trigger), zap.Int("messages", summarized),
		zap.Int("pre_tokens", c.PreTokens), zap.Int("post_tokens", c.PostTokens))
	emit(Event{Kind: EventCompactionEnd, Compaction: c})
	return next, c, nil
}

// promptIndex is where the prompt that was at pin is in the conversation
// after c.
func (c Compaction) promptIndex(pin int) int {
	if c.PromptKept {
		return 1 // right after the summary
	}
	return pin - c.KeptFrom + 1
}

// Summarized is how many messages the summary replaced.
func (c Compaction) Summarized() int {
	if c.PromptKept {
		return c.KeptFrom - 1
	}
	return c.KeptFrom
}

// window is the context window in tokens.
func (l *Loop) window() int {
	if l.ContextWindow > 0 {
		return l.ContextWindow
	}
	return DefaultContextWindow
}

// threshold is the request size past which the request is compacted first.
func (l *Loop) threshold() int {
	share := l.CompactAt
	if share <= 0 || share > 1 {
		share = DefaultCompactAt
	}
	return int(float64(l.window()) * share)
}
