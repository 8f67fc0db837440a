package turn

import (
	"encoding/json"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/tools"
)

// recorder keeps one turn in its session as it happens: the prompt (naming
// the session on its first), each model message, each tool result with
// what the user was shown of it, the usage, compactions and the plan. It
// runs on the turn's goroutine only.
type recorder struct {
	s      *sessions.Session
	show   Show
	stored json.RawMessage
	about  string

	prompted bool
	// views are the finished calls' views, by call id, until their tool
	// message is recorded.
	views   map[string]*sessions.ToolView
	isError map[string]bool
}

// observe sees each event before the user does.
func (r *recorder) observe(e agent.Event) {
	switch {
	case e.Kind == agent.EventUsage:
		r.s.AddUsage(e.Usage)
		return
	case e.Kind == agent.EventCompactionEnd && e.Err == nil:
		r.s.AddCompaction(e.Compaction)
		return
	case e.Kind == agent.EventPlan:
		r.s.SetPlan(e.Plan)
		return
	case e.Kind != agent.EventToolResult:
		return
	}
	if r.views == nil {
		r.views, r.isError = map[string]*sessions.ToolView{}, map[string]bool{}
	}
	r.views[e.Call.ID] = r.show.View(e.Call, e.Result)
	r.isError[e.Call.ID] = e.Result.IsError
}

// record is the turn's Record.
func (r *recorder) record(m agent.Message) {
	if !r.prompted && m.Role == agent.RoleUser {
		r.prompted = true
		if title, set := r.s.AddPromptAbout(m.Content, r.about, r.stored, m.Images); set {
			r.show.Titled(title)
		}
		return
	}
	var view *sessions.ToolView
	isError := false
	if m.Role == agent.RoleTool {
		view = r.views[m.ToolCallID]
		isError = r.isError[m.ToolCallID]
		delete(r.views, m.ToolCallID)
	}
	r.s.AddMessage(m, view, isError)
}

// Noticed is what the turn needs of the bash tools to show what a
// background task changed with the notice that reported its end.
type Noticed interface {
	// NoticesDelivered: the session's notices queued so far went with a
	// model request.
	NoticesDelivered(sessionID string)
	// NoticedChanges takes what the tasks of delivered notices changed,
	// but what a bash_output call showed already.
	NoticedChanges(sessionID string) []tools.Noticed
}

// notices is a turn's Notices: the session's completion notices for the
// model, told to the bash tools as delivered.
func (r *Runner) notices(s *sessions.Session) func() []string {
	return func() []string {
		notes := s.DrainNotices()
		if len(notes) > 0 && r.opts.Noticed != nil {
			r.opts.Noticed.NoticesDelivered(s.ID)
		}
		return notes
	}
}

// showNoticed shows, at the end of a turn, each task whose end a notice of
// the turn reported and that changed files no bash_output call of the turn
// showed; each is kept with the session, for a replay to show it again.
func (r *Runner) showNoticed(s *sessions.Session, show Show) {
	if r.opts.Noticed == nil {
		return
	}
	for _, n := range r.opts.Noticed.NoticedChanges(s.ID) {
		s.AddNoticed(show.Noticed(n))
	}
}
