package executor

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"
)

// ServiceSpec describes a service: a long-lived child of a session that
// talks over its stdin and stdout (a stdio MCP server). It has no timeout
// and ends with its owner (KillOwned), Stop, or the executor's Close —
// with everything it started, what left its session (setsid) included.
// It is never confined: it is the editor's configured program, run as the
// user, as the editor would run it.
type ServiceSpec struct {
	// Owner is the session the service belongs to. Required.
	Owner string
	// Path is the program's absolute path; Args its argv, Args[0]
	// included.
	Path string
	Args []string
	// Dir is the absolute directory it runs in.
	Dir string
	// Env is its whole environment: the executor adds only its markers
	// (Options.RunMarker and the service's own).
	Env []string
	// Stderr receives its stderr; nil means /dev/null. The caller closes
	// its copy once StartService returned.
	Stderr *os.File
}

// Service is a started service. Its stdin and stdout are the caller's to
// use and close; the process is the executor's.
type Service struct {
	owner  string
	p      *proc
	stdin  *os.File
	stdout *os.File
	done   chan struct{} // closed once no process of the service is left
}

// Pid is the service's pid, which is also its process group and session.
func (s *Service) Pid() int { return s.p.pgid }

// Stdin is the write end of the service's stdin.
func (s *Service) Stdin() io.WriteCloser { return s.stdin }

// Stdout is the read end of the service's stdout.
func (s *Service) Stdout() io.ReadCloser { return s.stdout }

// Stop starts ending the service: SIGTERM to its group, session and marked
// processes, SIGKILL after the kill grace. It returns at once; Done says
// when it is over. A second Stop does not restart the grace.
func (s *Service) Stop() { s.p.terminate(false) }

// Close ends the service as MCP asks a client to end a stdio server: its
// stdin is closed (its connection's end), it has the kill grace to exit,
// then it is stopped (Stop), and Close returns once no process of it is
// left. A Close after Stop waits for the end Stop began.
func (s *Service) Close() error {
	_ = s.stdin.Close()
	t := time.NewTimer(s.p.l.opts.KillGrace)
	select {
	case <-s.p.exited:
	case <-t.C:
	}
	t.Stop()
	s.Stop()
	<-s.done
	return nil
}

// Wait returns once the service's own process has ended, with Err; what
// it started may still be ending (Done).
func (s *Service) Wait() error {
	<-s.p.exited
	return s.Err()
}

// Exited is closed when the service's own process has ended: Err is then
// final, while what it started may still be ending (Done).
func (s *Service) Exited() <-chan struct{} { return s.p.exited }

// Done is closed when no process of the service is left, whether it ended
// by itself, by Stop, by KillOwned or by the executor's Close.
func (s *Service) Done() <-chan struct{} { return s.done }

// Err is how the service's own process ended, once it has: nil for exit
// status 0 (and before the end), else "exit status N" or "signal: NAME",
// as os/exec words it.
func (s *Service) Err() error {
	select {
	case <-s.p.exited:
	default:
		return nil
	}
	if s.p.waitErr != nil {
		return s.p.waitErr
	}
	ws := s.p.status
	switch {
	case ws.Signaled():
		return errors.New("signal: " + ws.Signal().String())
	case ws.ExitStatus() != 0:
		return fmt.Errorf("exit status %d", ws.ExitStatus())
	}
	return nil
}

// StartService starts spec. The service joins the executor's processes: the
// watchdog is told of it, KillOwned(spec.Owner) and Close end it.
func (l *Local) StartService(spec ServiceSpec) (*Service, error) {
	switch {
	case spec.Owner == "":
		return nil, errors.New("start service: no owner")
	case !filepath.IsAbs(spec.Path) || !filepath.IsAbs(spec.Dir):
		return nil, fmt.Errorf("start service: path %q and directory %q must be absolute", spec.Path, spec.Dir)
	}
	if err := l.begin(); err != nil {
		return nil, err
	}
	svc, err := l.startService(spec)
	if err != nil {
		l.wg.Done()
		return nil, err
	}
	go func() {
		defer l.wg.Done()
		p := svc.p
		p.waitLeader(nil, nil, nil)
		// The service is over once its own process is: what it left
		// behind goes too, its setsid children included.
		p.terminate(false)
		p.reap()
		l.mu.Lock()
		delete(l.services, svc)
		l.mu.Unlock()
		close(svc.done)
	}()
	return svc, nil
}

// startService spawns the service. The caller holds a wg count for the
// supervisor it starts when this succeeds.
func (l *Local) startService(spec ServiceSpec) (*Service, error) {
	inR, inW, outR, outW, err := stdioPipes()
	if err != nil {
		return nil, fmt.Errorf("start service: %w", err)
	}
	p := newProc(l)
	svc := &Service{owner: spec.Owner, p: p, stdin: inW, stdout: outR, done: make(chan struct{})}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		closeAll(inR, inW, outR, outW)
		return nil, ErrClosed
	}
	p.marker = l.ownMarker("SVC")
	l.procs[p] = struct{}{}
	l.services[svc] = struct{}{}
	l.mu.Unlock()

	env := append(slices.Clip(spec.Env), p.marker)
	if l.opts.RunMarker != "" {
		env = append(env, l.opts.RunMarker)
	}
	process, err := StartCmd(sessionCmd(spec.Path, spec.Args, spec.Dir, env, inR, outW, spec.Stderr))
	closeAll(inR, outW)
	if err != nil {
		closeAll(inW, outR)
		l.mu.Lock()
		delete(l.services, svc)
		l.mu.Unlock()
		l.forget(p)
		return nil, fmt.Errorf("start service: %w", err)
	}
	pid := l.track(p, process)
	l.logger.Debug("service started", zap.String("owner", spec.Owner), zap.Int("pgid", pid), zap.String("path", spec.Path))
	return svc, nil
}

// ownMarker returns a new service's or background task's own environment
// entry (kind SVC or TASK): every process it starts inherits it, those that
// leave its session (setsid) included, so its end can find them. The name,
// not the value, is unique (per executor and process), so a service of an
// agent run by another's service keeps both marks. l.mu must be held.
func (l *Local) ownMarker(kind string) string {
	if l.markTag == "" {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		l.markTag = hex.EncodeToString(b)
	}
	l.nextMark++
	return "DSH_ACP_" + kind + "_" + l.markTag + "_" + strconv.Itoa(l.nextMark) + "=1"
}

// ownedServices returns the services of owner still running. l.mu must be
// held.
func (l *Local) ownedServices(owner string) []*Service {
	var out []*Service
	for s := range l.services {
		if s.owner == owner {
			out = append(out, s)
		}
	}
	return out
}
