package turn

import (
	"cmp"
	"fmt"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
)

// DefaultModel is the configured model, which a session without a model
// option of its own asks.
func (r *Runner) DefaultModel() string { return r.opts.Model }

// Model is the model a session asks: its option, else the default.
func (r *Runner) Model(s *sessions.Session) string {
	if m := s.Model(); m != "" {
		return m
	}
	return r.opts.Model
}

// ThinkingOffered reports whether model gets a thought level: DeepSeek's
// models (recognised by id) always, any other only when the user said it
// takes reasoning_effort (--thinking).
func (r *Runner) ThinkingOffered(model string) bool {
	return agent.IsDeepSeek(model) || r.opts.Thinking != ""
}

// ThinkingFor is the thought level of s's requests to model (a turn asks
// the model it started with, whatever the option says by now): its option,
// else --thinking, else DeepSeek's own default (high); empty when model is
// not offered one, so nothing is sent.
func (r *Runner) ThinkingFor(s *sessions.Session, model string) string {
	if !r.ThinkingOffered(model) {
		return ""
	}
	return cmp.Or(s.Thinking(), r.opts.Thinking, agent.ThinkingHigh)
}

// readsImages reports whether model is sent images: --images on, or a
// model known to read them (unless --images off).
func (r *Runner) readsImages(model string) bool {
	switch r.opts.Images {
	case "on":
		return true
	case "off":
		return false
	}
	return agent.ReadsImages(model)
}

// imagesNote is what the user is told, once per session, when model is
// not sent images (of a prompt, or an MCP tool's); "" when there is
// nothing to tell.
func (r *Runner) imagesNote(s *sessions.Session, model string, images int) string {
	if images == 0 || r.readsImages(model) {
		return ""
	}
	if _, told := r.imagesNoted.LoadOrStore(s.ID, true); told {
		return ""
	}
	return fmt.Sprintf("(%s does not read images, so it is told only that an image was left out. Choose a model that reads them, such as %s, or start dsh-acp with --images on if this one does.)\n\n",
		model, agent.ModelDeepSeekFlash)
}

// Forget drops what the runner keeps of a closed session.
func (r *Runner) Forget(id string) { r.imagesNoted.Delete(id) }
