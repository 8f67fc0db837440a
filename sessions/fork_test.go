package sessions_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/sessions/store"
	"github.com/dsh-acp/dsh-acp/tools"
)

// A fork has the original's history, plan, mode, model, thought level and
// usage, and a title of its own; not its "always" answers nor its queued
// notices; a turn in flight is left out. With and without a store.
func TestFork(t *testing.T) {
	for _, stored := range []bool{true, false} {
		t.Run(map[bool]string{true: "stored", false: "memory"}[stored], func(t *testing.T) {
			opts := sessions.Options{}
			if stored {
				st, err := store.New(store.Options{Dir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				opts.Store = st
			}
			reg := sessions.New(opts)
			defer reg.CloseAll()
			s, err := reg.Create(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			committed := []agent.Message{{Role: agent.RoleUser, Content: "fix the build"}, {Role: agent.RoleAssistant, Content: "done"}}
			ctx, end, err := s.BeginTurn(context.Background(), 1)
			if err != nil || ctx.Err() != nil {
				t.Fatal(err)
			}
			s.AddPrompt(committed[0].Content, nil, nil)
			s.AddMessage(committed[1], nil, false)
			s.SetPlan(&tools.Plan{Entries: []tools.PlanEntry{{Step: "build", Status: "completed"}}})
			s.AddUsage(agent.ContextUsage{Used: 10, Size: 100})
			s.Finish(agent.Outcome{Messages: committed, Usage: agent.ContextUsage{Used: 10, Size: 100}})
			end()
			if err := s.SetMode(sessions.ModeAuto); err != nil {
				t.Fatal(err)
			}
			s.SetModel("other-model")
			s.SetThinking(agent.ThinkingMax)
			s.Remember("go test")
			reg.Notify(s.ID, "bash-1 finished")

			// A turn in flight: its prompt is not the fork's.
			_, end2, err := s.BeginTurn(context.Background(), 2)
			if err != nil {
				t.Fatal(err)
			}
			s.AddPrompt("in flight", nil, nil)

			f, err := reg.Fork(s.ID, s.Cwd, nil)
			end2()
			if err != nil {
				t.Fatal(err)
			}
			if f.ID == s.ID {
				t.Fatal("the fork has the original's id")
			}
			if got := f.History(); !reflect.DeepEqual(got, committed) {
				t.Errorf("fork history %+v, want %+v", got, committed)
			}
			if f.Title() != "fix the build (fork)" || f.Mode() != sessions.ModeAuto || f.Model() != "other-model" || f.Thinking() != agent.ThinkingMax {
				t.Errorf("fork title %q mode %q model %q thinking %q", f.Title(), f.Mode(), f.Model(), f.Thinking())
			}
			if p := f.Plan(); p == nil || len(p.Entries) != 1 || p.Entries[0].Step != "build" {
				t.Errorf("fork plan %+v", p)
			}
			if u := f.Usage(); u.Used != 10 || u.Size != 100 {
				t.Errorf("fork usage %+v", u)
			}
			if len(f.Remembered()) != 0 {
				t.Errorf("fork remembers %v", f.Remembered())
			}
			if n := f.DrainNotices(); len(n) != 0 {
				t.Errorf("fork has the original's notices %q", n)
			}
			if _, err := reg.Fork("no-such-session", s.Cwd, nil); err == nil {
				t.Error("fork of an unknown session succeeded")
			}
			if !stored {
				return
			}
			// After a restart: the original only stored.
			if err := reg.Close(s.ID); err != nil {
				t.Fatal(err)
			}
			g, err := reg.Fork(s.ID, s.Cwd, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := append(append([]agent.Message(nil), committed...), agent.Message{Role: agent.RoleUser, Content: "in flight"})
			if got := g.History(); len(got) < 3 || !reflect.DeepEqual(got[:3], want) {
				t.Errorf("fork of the stored session: history %+v, want it to start %+v", got, want)
			}
			if g.Model() != "other-model" || g.Thinking() != agent.ThinkingMax || g.Mode() != sessions.ModeAuto {
				t.Errorf("fork of the stored session: model %q thinking %q mode %q", g.Model(), g.Thinking(), g.Mode())
			}
			page, err := reg.List("", "")
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Sessions) != 3 {
				t.Errorf("listed %d sessions, want the original and two forks", len(page.Sessions))
			}
		})
	}
}
