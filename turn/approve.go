package turn

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/permission"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/tools"
)

// ProjectRules are the keys the user allowed "always in this project",
// kept outside the repository and shared by every session of the project.
type ProjectRules interface {
	// Keys returns the keys allowed in the project of cwd.
	Keys(cwd string) (map[string]bool, error)
	// Allow remembers keys for the project of cwd.
	Allow(cwd string, keys ...string) error
}

// Asker asks the user whether a call may run (acp: session/request_permission).
type Asker interface {
	// Ask returns the user's answer; an error when no answer came (ctx
	// ended: the turn was cancelled).
	Ask(ctx context.Context, q Question) (Reply, error)
}

// Question is what the user is asked about a call.
type Question struct {
	Call agent.CallInfo
	// Cwd is the session's directory.
	Cwd string
	// Keys are what "always" remembers (permission.Answer.Keys, Plain);
	// none offers no "always".
	Keys  []string
	Plain bool
	// Project: "always in this project" can be offered too.
	Project bool
}

// Reply is the user's answer.
type Reply int

const (
	// Rejected: the call is not run.
	Rejected Reply = iota
	// AllowOnce: this call runs.
	AllowOnce
	// AllowSession: it runs, and the session remembers Question.Keys.
	AllowSession
	// AllowProject: it runs, and the project remembers Question.Keys.
	AllowProject
	// Withdrawn: the question was cancelled (the user did not answer).
	Withdrawn
	// Unattended: no one could be asked (dsh-acp exec with no terminal),
	// so nobody rejected it either.
	Unattended
)

// What the model is told when a call was not run.
const (
	rejectedText  = "Error: permission denied: the user rejected this command; it was not run"
	withdrawnText = "Error: permission request was cancelled; the command was not run"
	// unattendedText: the client had no one to ask; nobody rejected it.
	unattendedText = "Error: permission denied: it was not run: no one could be asked to approve it (dsh-acp exec without a terminal); do not retry it: tell the user what you wanted to run and why"
)

// approver asks before a call runs when permission.Decide says so, from
// the call's approval subject alone, and remembers what an "always" answer
// allows.
func (r *Runner) approver(s *sessions.Session, ask Asker, log *zap.Logger) agent.Approver {
	return agent.ApproverFunc(func(ctx context.Context, call agent.CallInfo) (agent.Approval, error) {
		sub := call.Call.Subject
		// The mode is read once: it decides both whether to ask and
		// whether the call runs confined.
		ans := permission.Decide(permission.Question{
			Mode: s.Mode(), Rules: r.opts.Rules, Remembered: r.remembered(s, log), Subject: sub, Cwd: s.Cwd,
			ReadOnly: sub.Kind == tools.ToolKey && r.opts.MCP.AllowReadOnly && readOnly(s, call),
		})
		switch ans.Action {
		case permission.Refuse:
			log.Info("call denied by rule", zap.String("rule", ans.Rule))
			return agent.Approval{Message: ans.Message}, nil
		case permission.RunSandboxed:
			return agent.Approval{Allowed: true, Sandboxed: true}, nil
		case permission.Run:
			return agent.Approval{Allowed: true}, nil
		}
		if ans.Unknown {
			log.Warn("unknown approval subject", zap.Stringer("kind", sub.Kind))
		}
		q := Question{Call: call, Cwd: s.Cwd, Keys: ans.Keys, Plain: ans.Plain, Project: r.opts.Project != nil}
		reply, err := ask.Ask(ctx, q)
		if err != nil {
			if ctx.Err() != nil {
				return agent.Approval{}, ctx.Err()
			}
			return agent.Approval{}, fmt.Errorf("request permission: %w", err)
		}
		return r.answered(s, q, reply, log), nil
	})
}

// answered is the approval the user's reply gives, remembering what an
// "always" answer allows.
func (r *Runner) answered(s *sessions.Session, q Question, reply Reply, log *zap.Logger) agent.Approval {
	switch {
	case reply == AllowOnce:
		return agent.Approval{Allowed: true}
	case reply == AllowSession:
		s.Remember(q.Keys...)
		log.Info("always allowed", zap.Strings("keys", q.Keys))
		return agent.Approval{Allowed: true}
	case reply == AllowProject:
		if err := r.allowInProject(s.Cwd, q.Keys); err != nil {
			// The call was allowed; only the remembering failed, so the
			// session remembers it at least.
			log.Warn("project rule not stored; remembered for this session", zap.Error(err))
		}
		s.Remember(q.Keys...)
		log.Info("always allowed in project", zap.Strings("keys", q.Keys))
		return agent.Approval{Allowed: true}
	case reply == Withdrawn:
		log.Info("permission request cancelled by client")
		return agent.Approval{Message: withdrawnText}
	case reply == Unattended:
		return agent.Approval{Message: unattendedText, Unattended: true}
	}
	return agent.Approval{Message: rejectedText}
}

// remembered is what "always" answers pass in s: the session's own, and
// its project's. Deny rules are checked before either.
func (r *Runner) remembered(s *sessions.Session, log *zap.Logger) map[string]bool {
	keys := s.Remembered()
	if r.opts.Project == nil {
		return keys
	}
	project, err := r.opts.Project.Keys(s.Cwd)
	if err != nil {
		// Asked, not allowed: a broken rules file grants nothing.
		log.Warn("project rules not readable", zap.Error(err))
		return keys
	}
	for k := range project {
		keys[k] = true
	}
	return keys
}

// allowInProject remembers keys for the project of cwd.
func (r *Runner) allowInProject(cwd string, keys []string) error {
	if r.opts.Project == nil {
		return errors.New("no project rules (--no-persist)")
	}
	return r.opts.Project.Allow(cwd, keys...)
}
