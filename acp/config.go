package acp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
)

// Config option ids.
const (
	configMode     = "mode"
	configModel    = "model"
	configThinking = sessions.ConfigThinking
)

// ModelLister lists the models the endpoint serves (GET /models).
type ModelLister interface {
	ListModels(ctx context.Context) ([]string, error)
}

// modelListTimeout bounds the one listing of a process: a slow or absent
// endpoint costs the first session/new at most this.
const modelListTimeout = 3 * time.Second

// models is the model option's values, listed once per process — and
// again after a sign-in: a listing that failed for want of a key (no key
// yet, or a key the endpoint refused) is tried again at the next need,
// and reset forgets the list (after authenticate and logout).
type models struct {
	lister ModelLister
	def    string
	log    *zap.Logger

	// mu guards list and listed; it is held across a listing, so
	// concurrent callers wait for one request instead of each sending one.
	mu sync.Mutex
	// list is the default first, then the endpoint's; listed says it is
	// final until reset.
	list   []string
	listed bool
}

func (m *models) get(ctx context.Context) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.listed {
		return m.list
	}
	m.list = []string{m.def}
	m.listed = true
	if m.lister == nil {
		return m.list
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), modelListTimeout)
	defer cancel()
	names, err := m.lister.ListModels(ctx)
	if err != nil {
		// Without a key there is no list yet, but there will be one once
		// the user signs in (in a terminal the agent hears nothing of).
		m.listed = !errors.Is(err, agent.ErrAuthRequired)
		m.log.Warn("listing models failed; offering the configured one only", zap.Error(err))
		return m.list
	}
	for _, n := range names {
		if n != "" && n != m.def {
			m.list = append(m.list, n)
		}
	}
	return m.list
}

// relist lists the models again; changed says the list is not the one
// offered before.
func (m *models) relist(ctx context.Context) (changed bool) {
	m.mu.Lock()
	before := m.list
	m.listed = false
	m.mu.Unlock()
	return !slices.Equal(before, m.get(ctx))
}

// modelsMaybeChanged lists the models again after a sign-in or a sign-out
// and, when the list is another, sends every live session its config
// options again, so the picker of an open thread shows the endpoint's
// models without a restart.
func (a *Agent) modelsMaybeChanged(ctx context.Context) {
	if !a.models.relist(ctx) {
		return
	}
	for _, s := range a.opts.Sessions.Live() {
		a.sendUpdate(ctx, s.ID, acpsdk.SessionUpdate{ConfigOptionUpdate: &acpsdk.SessionConfigOptionUpdate{ConfigOptions: a.configOptions(ctx, s)}})
	}
}

func (m *models) has(ctx context.Context, name string) bool {
	for _, n := range m.get(ctx) {
		if n == name {
			return true
		}
	}
	return false
}

// sessionModel is the model a session asks: its option, else the default.
func (a *Agent) sessionModel(s *sessions.Session) string { return a.opts.Turns.Model(s) }

// configOptions is the full list of a session's config options.
func (a *Agent) configOptions(ctx context.Context, s *sessions.Session) []acpsdk.SessionConfigOption {
	modes := a.modes()
	modeOpts := make(acpsdk.SessionConfigSelectOptionsUngrouped, 0, len(modes))
	for _, m := range modes {
		modeOpts = append(modeOpts, acpsdk.SessionConfigSelectOption{Value: acpsdk.SessionConfigValueId(m.Id), Name: m.Name, Description: m.Description})
	}
	names := a.models.get(ctx)
	modelOpts := make(acpsdk.SessionConfigSelectOptionsUngrouped, 0, len(names))
	for _, n := range names {
		modelOpts = append(modelOpts, acpsdk.SessionConfigSelectOption{Value: acpsdk.SessionConfigValueId(n), Name: n})
	}
	current := a.sessionModel(s)
	list := []acpsdk.SessionConfigOption{
		{Select: &acpsdk.SessionConfigOptionSelect{
			Id: configMode, Name: "Mode", Type: "select",
			Category:     acpsdk.Ptr(acpsdk.SessionConfigOptionCategoryMode),
			Description:  acpsdk.Ptr("When to ask before running a command."),
			CurrentValue: acpsdk.SessionConfigValueId(s.Mode()),
			Options:      acpsdk.SessionConfigSelectOptions{Ungrouped: &modeOpts},
		}},
		{Select: &acpsdk.SessionConfigOptionSelect{
			Id: configModel, Name: "Model", Type: "select",
			Category:     acpsdk.Ptr(acpsdk.SessionConfigOptionCategoryModel),
			Description:  acpsdk.Ptr("The model asked from the next request on."),
			CurrentValue: acpsdk.SessionConfigValueId(current),
			Options:      acpsdk.SessionConfigSelectOptions{Ungrouped: &modelOpts},
		}},
	}
	if level := a.sessionThinking(s); level != "" {
		list = append(list, thinkingOption(level))
	}
	return list
}

// thinkingOffered reports whether the session's model gets the
// thought_level option (turn.Runner.ThinkingOffered).
func (a *Agent) thinkingOffered(model string) bool { return a.opts.Turns.ThinkingOffered(model) }

// sessionThinking is the thought level a session's requests carry; empty
// when the option is not offered for its model.
func (a *Agent) sessionThinking(s *sessions.Session) string {
	return a.opts.Turns.ThinkingFor(s, a.sessionModel(s))
}

func thinkingOption(current string) acpsdk.SessionConfigOption {
	names := map[string]string{agent.ThinkingOff: "Off", agent.ThinkingHigh: "High", agent.ThinkingMax: "Max"}
	opts := make(acpsdk.SessionConfigSelectOptionsUngrouped, 0, len(agent.ThinkingLevels))
	for _, v := range agent.ThinkingLevels {
		opts = append(opts, acpsdk.SessionConfigSelectOption{Value: acpsdk.SessionConfigValueId(v), Name: names[v]})
	}
	return acpsdk.SessionConfigOption{Select: &acpsdk.SessionConfigOptionSelect{
		Id: configThinking, Name: "Thinking", Type: "select",
		Category:     acpsdk.Ptr(acpsdk.SessionConfigOptionCategoryThoughtLevel),
		Description:  acpsdk.Ptr("How much the model thinks before it answers, from the next request on."),
		CurrentValue: acpsdk.SessionConfigValueId(current),
		Options:      acpsdk.SessionConfigSelectOptions{Ungrouped: &opts},
	}}
}

func (a *Agent) modeState(s *sessions.Session) *acpsdk.SessionModeState {
	return &acpsdk.SessionModeState{AvailableModes: a.modes(), CurrentModeId: acpsdk.SessionModeId(s.Mode())}
}

// SetSessionConfigOption sets mode or model from the next model request,
// persists it and answers the full list; a mode change is also announced
// as current_mode_update for clients that follow modes.
func (a *Agent) SetSessionConfigOption(ctx context.Context, p acpsdk.SetSessionConfigOptionRequest) (resp acpsdk.SetSessionConfigOptionResponse, err error) {
	defer a.recoverTo("session/set_config_option", &err)
	v := p.ValueId
	if v == nil {
		return resp, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("config options %q and %q take a value id", configMode, configModel)})
	}
	s, err := a.opts.Sessions.Get(string(v.SessionId))
	if err != nil {
		return resp, toRequestError(err)
	}
	value := string(v.Value)
	switch string(v.ConfigId) {
	case configMode:
		if err := s.SetMode(sessions.Mode(value)); err != nil {
			return resp, acpsdk.NewInvalidParams(map[string]any{
				"error": fmt.Sprintf("unknown value %q of config option %q: valid values are %s", value, configMode, strings.Replace(a.modeList(), " or ", " and ", 1)),
			})
		}
		a.sendUpdate(ctx, s.ID, acpsdk.SessionUpdate{CurrentModeUpdate: &acpsdk.SessionCurrentModeUpdate{CurrentModeId: acpsdk.SessionModeId(value)}})
	case configModel:
		if !a.models.has(ctx, value) {
			return resp, acpsdk.NewInvalidParams(map[string]any{
				"error": fmt.Sprintf("unknown value %q of config option %q: valid values are %s", value, configModel, quoteAll(a.models.get(ctx))),
			})
		}
		s.SetModel(value)
	case configThinking:
		if !a.thinkingOffered(a.sessionModel(s)) || !slices.Contains(agent.ThinkingLevels, value) {
			return resp, acpsdk.NewInvalidParams(map[string]any{
				"error": fmt.Sprintf("unknown value %q of config option %q: valid values are %s", value, configThinking, thinkingChoices(a.thinkingOffered(a.sessionModel(s)))),
			})
		}
		s.SetThinking(value)
	default:
		return resp, acpsdk.NewInvalidParams(map[string]any{
			"error": fmt.Sprintf("unknown config option %q: valid options are %q, %q and %q", v.ConfigId, configMode, configModel, configThinking),
		})
	}
	a.sessionLogger(s.ID).Info("config option set", zap.String("option", string(v.ConfigId)), zap.String("value", value))
	return acpsdk.SetSessionConfigOptionResponse{ConfigOptions: a.configOptions(ctx, s)}, nil
}

// thinkingChoices names the thought levels, or says why there are none.
func thinkingChoices(offered bool) string {
	if !offered {
		return "none for this model (start dsh-acp with --thinking if it takes reasoning_effort)"
	}
	return strings.Replace(quoteAll(agent.ThinkingLevels), ", \"max\"", " and \"max\"", 1)
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// sendUpdate sends one session/update outside a turn.
func (a *Agent) sendUpdate(ctx context.Context, sid string, up acpsdk.SessionUpdate) {
	conn := a.client()
	if conn == nil {
		return
	}
	if err := conn.SessionUpdate(context.WithoutCancel(ctx), acpsdk.SessionNotification{SessionId: acpsdk.SessionId(sid), Update: up}); err != nil {
		a.sessionLogger(sid).Debug("session update not delivered", zap.Error(err))
	}
}
