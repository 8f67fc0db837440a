package sessions

import (
	"errors"
	"fmt"
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// ForkSuffix ends a fork's title.
const ForkSuffix = " (fork)"

// storedSeq is the Seq of the last entry of the session's store; 0 without
// one.
func (s *Session) storedSeq() int64 {
	s.mu.Lock()
	st := s.stored
	s.mu.Unlock()
	if st == nil {
		return 0
	}
	return st.Seq()
}

// forkPoint is the session's stored log and the last Seq a fork of it
// takes: all of it between turns, what was committed before the turn in
// flight otherwise.
func (s *Session) forkPoint() (*store.Session, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current != nil {
		return s.stored, s.committed
	}
	return s.stored, math.MaxInt64
}

// Fork makes a new session that goes on from where session id is now, in
// cwd with the extra project roots given (not the original's: the
// request's list is the whole of them): the same history, plan, mode, model, thought level and context
// usage, titled "<title> (fork)", stored under its own id (and listed) when
// sessions are stored. The session may be live here or only stored (a
// fork after a restart). A turn running in the original is not part of the
// fork: what was committed before it is. Nothing else is shared or
// copied: the original's background tasks stay its own (the fork can
// neither read nor kill them), its MCP servers and its "always allow"
// answers stay with it, and its queued completion notices are its own.
func (r *Registry) Fork(id, cwd string, roots []string) (*Session, error) {
	cwd, roots, err := checkDirs(cwd, roots)
	if err != nil {
		return nil, err
	}
	src, liveErr := r.Get(id)
	if r.store == nil {
		if liveErr != nil {
			return nil, liveErr
		}
		return r.forkLive(src, cwd, roots), nil
	}
	var (
		from *store.Session
		upTo int64 = math.MaxInt64
		opts       = forkOptions{}
	)
	if liveErr == nil {
		from, upTo = src.forkPoint()
		if from == nil {
			return nil, fmt.Errorf("%w: %s", ErrClosed, id)
		}
		opts = forkOptions{title: src.Title(), mode: src.Mode(), model: src.Model(), thinking: src.Thinking(), live: true}
	} else {
		from, err = r.openToRead(id)
		if err != nil {
			return nil, err
		}
		defer from.Close()
		opts.title = from.State().Title
	}
	forkID := r.newID()
	if err := r.writeFork(from, upTo, forkID, cwd, opts); err != nil {
		return nil, err
	}
	l, err := r.Open(forkID, cwd, roots)
	if err != nil {
		return nil, fmt.Errorf("open the fork of %s: %w", id, err)
	}
	r.log.Info("session forked", zap.String("from", id), zap.String("session", forkID))
	return l.Session, nil
}

// forkOptions are what a live original says of itself beyond its log (its
// settings as they are now, also when changed during a turn).
type forkOptions struct {
	title           string
	mode            Mode
	model, thinking string
	live            bool
}

// openToRead opens stored session id (not live here) for a fork to read;
// its errors are those of a load.
func (r *Registry) openToRead(id string) (*store.Session, error) {
	st, err := r.store.OpenState(id)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrBadID):
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	case errors.Is(err, store.ErrLocked):
		return nil, BusyError{ID: id, Sentence: fmt.Sprintf("session %s is live in another dsh-acp process (another editor window?); fork it there", id)}
	case errors.Is(err, store.ErrOpen):
		return nil, BusyError{ID: id, Sentence: fmt.Sprintf("session %s is being loaded; fork it once it is", id)}
	case errors.Is(err, store.ErrForeign), errors.Is(err, store.ErrNewerVersion):
		return nil, fmt.Errorf("%w: %s: %w", ErrUnusable, id, err)
	case err != nil:
		return nil, fmt.Errorf("open stored session %s: %w", id, err)
	}
	return st, nil
}

// writeFork stores session forkID in cwd with the entries of from up to
// upTo that make the conversation and its settings (with their images),
// then the settings of opts and the fork's title. Left out: the tasks
// (the original's), "always allow" answers, notices not yet delivered and
// the original's moves and title.
func (r *Registry) writeFork(from *store.Session, upTo int64, forkID, cwd string, opts forkOptions) error {
	dst, err := r.store.Create(forkID, cwd)
	if err != nil {
		return fmt.Errorf("store the fork: %w", err)
	}
	var werr error
	err = from.Scan(func(e store.Entry) bool {
		if e.Seq > upTo {
			return false
		}
		if !forkKeeps(e) {
			return true
		}
		if werr = copyImages(from, dst, e); werr == nil {
			werr = dst.Copy(e)
		}
		return werr == nil
	})
	err = errors.Join(err, werr)
	if err == nil && opts.live {
		// The settings as they are now: one changed during a running turn
		// is past upTo.
		_, e1 := dst.Append(store.Mode{Mode: string(opts.mode)})
		_, e2 := dst.Append(store.Config{OptionID: ConfigModel, Value: opts.model})
		_, e3 := dst.Append(store.Config{OptionID: ConfigThinking, Value: opts.thinking})
		err = errors.Join(e1, e2, e3)
	}
	if err == nil && opts.title != "" {
		_, err = dst.Append(store.Title{Title: opts.title + ForkSuffix})
	}
	if err == nil {
		err = dst.Sync()
	}
	err = errors.Join(err, dst.Close())
	if err != nil {
		if derr := r.store.Delete(forkID); derr != nil {
			r.log.Warn("a fork that could not be written is left in the store", zap.String("session", forkID), zap.Error(derr))
		}
		return fmt.Errorf("store the fork: %w", err)
	}
	return nil
}

// forkKeeps reports whether a fork takes entry e of its original.
func forkKeeps(e store.Entry) bool {
	switch e.Kind {
	case store.KindPrompt, store.KindAssistant, store.KindToolResult, store.KindCompaction, store.KindPlan,
		store.KindUsage, store.KindConfig, store.KindMode, store.KindNoticed:
		return true
	case store.KindNotice:
		// A delivered notice is part of the conversation; a queued one is
		// news of the original's tasks, for the original.
		p, err := e.Decode()
		return err == nil && p.(store.Notice).State == store.NoticeDelivered
	}
	return false
}

// copyImages stores beside dst the images e names in from.
func copyImages(from, dst *store.Session, e store.Entry) error {
	var refs []store.Image
	switch e.Kind {
	case store.KindPrompt, store.KindToolResult:
		p, err := e.Decode()
		if err != nil {
			return nil
		}
		switch v := p.(type) {
		case store.Prompt:
			refs = v.Images
		case store.ToolResult:
			refs = v.Images
		}
	}
	for _, ref := range refs {
		data, err := from.ReadImage(ref.Ref)
		if err != nil {
			// As a load does: the conversation goes on without it.
			continue
		}
		if _, err := dst.PutImage(data); err != nil {
			return err
		}
	}
	return nil
}

// forkLive is Fork without a store: the live session's committed state,
// copied.
func (r *Registry) forkLive(src *Session, cwd string, roots []string) *Session {
	s := r.newSession(r.newID(), cwd)
	s.roots = roots
	src.mu.Lock()
	s.history = append(s.history, src.history...)
	s.usage = src.usage
	s.mode, s.model, s.thinking = src.mode, src.model, src.thinking
	s.plan = src.plan
	if src.title != "" {
		s.title = src.title + ForkSuffix
	}
	src.mu.Unlock()
	s.updated = time.Now()
	r.mu.Lock()
	r.byID[s.ID] = s
	r.mu.Unlock()
	return s
}
