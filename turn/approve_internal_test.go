package turn

import (
	"context"
	"errors"
	"slices"
	"testing"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/permission"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/tools"
)

// askerFunc answers every question with reply, and keeps the questions.
type askerFunc struct {
	reply Reply
	err   error
	asked []Question
}

func (a *askerFunc) Ask(_ context.Context, q Question) (Reply, error) {
	a.asked = append(a.asked, q)
	return a.reply, a.err
}

// projectMemory is ProjectRules in memory; fail makes Allow fail.
type projectMemory struct {
	keys map[string]bool
	fail bool
}

func (p *projectMemory) Keys(string) (map[string]bool, error) { return p.keys, nil }

func (p *projectMemory) Allow(_ string, keys ...string) error {
	if p.fail {
		return errors.New("read-only state directory")
	}
	for _, k := range keys {
		p.keys[k] = true
	}
	return nil
}

// TestApproverAsksOnlyWhenDecideSays: the turn applies permission.Decide
// and asks its Asker only for "ask"; the user's reply becomes the approval
// the model loop gets, and an "always" reply is remembered here (the
// session's or the project's), not by the protocol layer.
func TestApproverAsksOnlyWhenDecideSays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		mode        permission.Mode
		command     string
		reply       Reply
		projectFail bool
		want        agent.Approval
		wantAsked   bool
		wantSession bool // the keys are remembered in the session
		wantProject bool // … and in the project
	}{
		{name: "a denied command is not asked", mode: permission.ModeAuto, command: "rm -rf x", want: agent.Approval{Message: `Error: permission denied: the command matches the deny rule "rm"; it was not run`}},
		{name: "sandbox mode runs confined unasked", mode: permission.ModeSandbox, command: "go test ./...", want: agent.Approval{Allowed: true, Sandboxed: true}},
		{name: "allow once", mode: permission.ModeAsk, command: "go test ./...", reply: AllowOnce, want: agent.Approval{Allowed: true}, wantAsked: true},
		{name: "always in the session", mode: permission.ModeAsk, command: "go test ./...", reply: AllowSession, want: agent.Approval{Allowed: true}, wantAsked: true, wantSession: true},
		{name: "always in the project", mode: permission.ModeAsk, command: "go test ./...", reply: AllowProject, want: agent.Approval{Allowed: true}, wantAsked: true, wantSession: true, wantProject: true},
		{name: "a project that cannot remember: the session does", mode: permission.ModeAsk, command: "go test ./...", reply: AllowProject, projectFail: true, want: agent.Approval{Allowed: true}, wantAsked: true, wantSession: true},
		{name: "rejected", mode: permission.ModeAsk, command: "go test ./...", reply: Rejected, want: agent.Approval{Message: rejectedText}, wantAsked: true},
		{name: "withdrawn", mode: permission.ModeAsk, command: "go test ./...", reply: Withdrawn, want: agent.Approval{Message: withdrawnText}, wantAsked: true},
		{name: "unattended", mode: permission.ModeAsk, command: "go test ./...", reply: Unattended, want: agent.Approval{Message: unattendedText, Unattended: true}, wantAsked: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := sessions.New(sessions.Options{Sandbox: func() bool { return true }})
			t.Cleanup(reg.CloseAll)
			s, err := reg.Create(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SetMode(tc.mode); err != nil {
				t.Fatal(err)
			}
			project := &projectMemory{keys: map[string]bool{}, fail: tc.projectFail}
			r := &Runner{opts: Options{Sessions: reg, Rules: permission.Rules{Deny: []string{"rm"}}, Project: project}, log: zap.NewNop()}
			ask := &askerFunc{reply: tc.reply}
			call := agent.CallInfo{ID: "c1", Name: "bash", Call: tools.Call{Title: tc.command, Subject: tools.Shell(tc.command)}}
			got, err := r.approver(s, ask, zap.NewNop()).Approve(context.Background(), call)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("approval %+v, want %+v", got, tc.want)
			}
			if asked := len(ask.asked) > 0; asked != tc.wantAsked {
				t.Fatalf("asked %v, want %v", asked, tc.wantAsked)
			}
			if tc.wantAsked {
				q := ask.asked[0]
				if !slices.Equal(q.Keys, []string{"go test"}) || !q.Project || q.Call.ID != "c1" {
					t.Errorf("question %+v: want the keys [go test], the project offered, the call", q)
				}
			}
			if got := s.Remembered()["go test"]; got != tc.wantSession {
				t.Errorf("session remembers go test: %v, want %v", got, tc.wantSession)
			}
			if got := project.keys["go test"]; got != tc.wantProject {
				t.Errorf("project remembers go test: %v, want %v", got, tc.wantProject)
			}
		})
	}
}

// TestApproverAskFails: an Asker's error fails the call's approval, and a
// cancelled turn's is the turn's cancel.
func TestApproverAskFails(t *testing.T) {
	t.Parallel()
	reg := sessions.New(sessions.Options{})
	t.Cleanup(reg.CloseAll)
	s, err := reg.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{opts: Options{Sessions: reg}, log: zap.NewNop()}
	broken := errors.New("connection closed")
	call := agent.CallInfo{ID: "c1", Call: tools.Call{Subject: tools.Shell("make")}}
	if _, err := r.approver(s, &askerFunc{err: broken}, zap.NewNop()).Approve(context.Background(), call); !errors.Is(err, broken) {
		t.Errorf("error %v, want it to wrap %v", err, broken)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.approver(s, &askerFunc{err: broken}, zap.NewNop()).Approve(ctx, call); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled turn: error %v, want context.Canceled", err)
	}
}
