package docker

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/api/types/mount"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
)

// createTimeout bounds making a session's container: an engine that does
// not answer fails the command rather than hang the turn.
const createTimeout = 60 * time.Second

// answerTimeout bounds the helper's answer to a start or a liveness
// question. The helper answers in milliseconds; none in a minute is an
// engine that stopped relaying (hung, or an ssh tunnel gone quiet): the
// tether is cut, which ends everything waiting on the container, and the
// session's next command gets a new one.
const answerTimeout = time.Minute

// box is one session's container and the tether to its helper.
type box struct {
	d      *Confiner
	owner  string
	root   string   // the session's directory, mounted at its own path
	roots  []string // its other project roots, mounted likewise
	spill  string   // the session's spill directory, mounted read-only
	logger *zap.Logger

	ready chan struct{} // closed when creation ended; err says how
	// life is cancelled by end: a creation still waiting for the engine
	// gives up, so that closing the session or the agent does not wait.
	life   context.Context
	cancel context.CancelFunc
	err    error
	id     string
	conn   hijacked
	fw     *frameWriter
	done   chan struct{} // closed when the tether is cut: no helper any more

	// mu guards the fields below.
	mu      sync.Mutex
	next    uint32                     // the last command or query id given
	cmds    map[uint32]*remoteProc     // commands not yet ended
	queries map[uint32]chan bool       // Alive queries not yet answered
	files   map[uint32]chan fileAnswer // file operations not yet answered
	ended   bool                       // end was asked
}

func newBox(d *Confiner, owner, root string, roots []string, spill string) *box {
	life, cancel := context.WithCancel(context.Background())
	return &box{
		life: life, cancel: cancel,
		d: d, owner: owner, root: root, roots: roots, spill: spill,
		logger:  d.logger.With(zap.String("session", owner)),
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
		cmds:    map[uint32]*remoteProc{},
		queries: map[uint32]chan bool{},
		files:   map[uint32]chan fileAnswer{},
	}
}

// create makes the container, and then serves its tether until it is cut.
// It runs on its own goroutine, counted in d.wg.
func (b *box) create() {
	defer b.d.wg.Done()
	ctx, cancel := context.WithTimeout(b.life, createTimeout)
	b.err = b.make(ctx)
	cancel()
	close(b.ready)
	if b.err != nil {
		b.cancel()
		close(b.done)
		return
	}
	b.serve()
}

// make creates the container, puts the helper in, attaches its stdio and
// starts it. On failure nothing of it is left.
func (b *box) make(ctx context.Context) error {
	start := time.Now()
	cfg := b.config()
	if err := b.d.guardSocket(cfg.HostConfig.Mounts); err != nil {
		return err
	}
	id, err := b.d.cli.createContainer(ctx, cfg)
	if notFound(err) {
		// As `docker run` does: pull a missing image once, then create.
		if perr := b.d.pull(b.life); perr != nil {
			return perr
		}
		// The pull may have taken most of ctx's time (it has its own):
		// the creation and the boot get theirs afresh.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(b.life, createTimeout)
		defer cancel()
		id, err = b.d.cli.createContainer(ctx, cfg)
	}
	if err != nil {
		return b.d.explain(err, b.root, b.roots)
	}
	b.id = id
	err = b.boot(ctx)
	if err != nil {
		b.remove()
		return err
	}
	b.logger.Info("session container started", zap.String("container", shortID(b.id)), zap.Duration("took", time.Since(start)))
	return nil
}

func (b *box) boot(ctx context.Context) error {
	if err := b.copyHelper(ctx); err != nil {
		return fmt.Errorf("docker: put the helper into the container: %w", err)
	}
	att, err := b.d.cli.attach(ctx, b.id)
	if err != nil {
		return fmt.Errorf("docker: attach to the container: %w", err)
	}
	b.conn = att
	b.fw = newFrameWriter(b.conn.Conn)
	if err := b.d.cli.startContainer(ctx, b.id); err != nil {
		b.conn.Close()
		return fmt.Errorf("docker: start the container: %w", b.d.explain(err, b.root, b.roots))
	}
	return nil
}

// config is the session's container: the helper as its main process under
// the engine's init, stdin open once (the tether), the session's directory
// at its own path, the user's uid:gid, removed by the engine when it ends.
func (b *box) config() createRequest {
	labels := map[string]string{labelAgent: b.d.agent, labelSession: b.owner}
	for k, v := range b.d.opts.Labels {
		labels[k] = v
	}
	var mounts []mount.Mount
	for _, r := range b.d.opts.Read {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: r, Target: r, ReadOnly: true})
	}
	// The engine mounts parents first, so the session's directory is
	// writable inside a --docker-read tree.
	mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: b.root, Target: b.root})
	for _, r := range b.roots {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: r, Target: r})
	}
	if b.spill != "" && !b.d.remote {
		// Only this session's: the model is told these paths, and the
		// next command may read them. A remote engine's host has no such
		// directory.
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: b.spill, Target: b.spill, ReadOnly: true})
	}
	init := true
	host := hostConfig{
		// The tether carries every byte of output: the engine's log
		// driver would keep a second copy on its disk (json-file: 1 GiB
		// of output is gigabytes of JSON) and slow the stream tenfold.
		LogConfig:   logConfig{Type: "none"},
		AutoRemove:  true,
		Init:        &init,
		Mounts:      mounts,
		SecurityOpt: []string{"no-new-privileges"},
	}
	if b.d.opts.Network != "" {
		host.NetworkMode = b.d.opts.Network
	}
	return createRequest{
		Image:        b.d.opts.Image,
		User:         strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid()),
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		OpenStdin:    true,
		StdinOnce:    true,
		WorkingDir:   b.root,
		Entrypoint:   []string{helperDir + "/dsh-acp"},
		Cmd:          []string{HelperMode, "--grace", b.d.opts.KillGrace.String()},
		Labels:       labels,
		HostConfig:   host,
	}
}

// copyHelper puts the helper binary into the created container: a copy,
// not a mount, so it works the same with a remote engine and a rebuilt
// binary is never half-seen by a running container.
func (b *box) copyHelper(ctx context.Context) error {
	f, err := os.Open(b.d.opts.Helper)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: helperDir[1:] + "/", Mode: 0o755})
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: helperDir[1:] + "/dsh-acp", Mode: 0o755, Size: fi.Size()})
		}
		if err == nil {
			_, err = io.Copy(tw, f)
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	err = b.d.cli.copyTo(ctx, b.id, "/", pr)
	_ = pr.CloseWithError(errors.New("copy ended"))
	return err
}

// pullTimeout bounds pulling a missing image (a session's first command
// waits for it).
const pullTimeout = 10 * time.Minute

// pull pulls the image anonymously; a private registry's credentials are
// the docker CLI's business (pull it there first).
func (d *Confiner) pull(life context.Context) error {
	ctx, cancel := context.WithTimeout(life, pullTimeout)
	defer cancel()
	d.logger.Info("pulling the image", zap.String("image", d.opts.Image))
	if err := d.cli.pullImage(ctx, d.opts.Image); err != nil {
		return fmt.Errorf("docker: image %s is not on the engine (%s) and could not be pulled (a private registry's: pull it there with the docker CLI first): %w", d.opts.Image, d.host, err)
	}
	return nil
}

// guardSocket refuses mounts that would put the engine's own socket in
// reach of commands: whoever can talk to it is root on the engine's host.
func (d *Confiner) guardSocket(mounts []mount.Mount) error {
	u, err := url.Parse(d.host)
	if err != nil || u.Scheme != "unix" {
		return nil
	}
	sock := filepath.Clean(u.Path)
	for _, m := range mounts {
		if rel, err := filepath.Rel(m.Source, sock); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return fmt.Errorf("docker: mounting %s would put the engine's socket %s in reach of commands; not done (choose a session directory or --docker-read path that does not hold it)", m.Source, sock)
		}
	}
	return nil
}

// explain turns the engine's answers a user can act on into sentences.
func (d *Confiner) explain(err error, root string, roots []string) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "bind source path does not exist"):
		missing := missingSource(msg)
		if slices.Contains(roots, missing) {
			// One of the project's roots: said as its directory is.
			root = missing
		}
		if missing != "" && missing != root {
			// Not the project's directory: blaming it would send the user
			// looking in the wrong place.
			what := "the session's spill directory"
			if slices.Contains(d.opts.Read, missing) {
				what = "--docker-read " + missing
			}
			return fmt.Errorf("docker: %s does not exist on the Docker engine's host (%s), so it cannot be mounted: %w", what, d.host, err)
		}
		if d.remote {
			return fmt.Errorf("docker: the session's directory %s does not exist on the Docker engine's host (%s): commands run in the engine host's files, so the project must be on a file system both share (syncing a tree to a remote engine is not supported yet)", root, d.host)
		}
		return fmt.Errorf("docker: the engine (%s) cannot see the session's directory %s: it runs where that path does not exist (another host, a VM or a mount namespace); the project must be on a file system both share", d.host, root)
	case notFound(err) && strings.Contains(msg, "image"):
		return fmt.Errorf("docker: image %s not found on the engine (%s): pull or build it there first: %w", d.opts.Image, d.host, err)
	case connFailed(err):
		return fmt.Errorf("docker: the engine at %s does not answer (is it running? DOCKER_HOST chooses another): %w", d.host, err)
	}
	return fmt.Errorf("docker: %w", err)
}

// missingSource is the path an engine's "bind source path does not exist:
// PATH" error names, or "".
func missingSource(msg string) string {
	_, path, ok := strings.Cut(msg, "bind source path does not exist: ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(path)
}

// serve reads the helper's frames until the tether is cut, then ends every
// command still waited for: the container is gone, and its processes with it.
func (b *box) serve() {
	fr := newFrameReader(&demux{r: b.conn.Reader, logger: b.logger})
	var err error
	for {
		var f frame
		if f, err = fr.read(); err != nil {
			break
		}
		b.handle(f)
	}
	if !errors.Is(err, io.EOF) && !b.ending() {
		b.logger.Warn("session container's helper gone", zap.Error(err))
	}
	b.conn.Close()
	b.mu.Lock()
	cmds := b.cmds
	b.cmds = map[uint32]*remoteProc{}
	b.mu.Unlock()
	close(b.done)
	for _, p := range cmds {
		p.cut()
	}
}

func (b *box) handle(f frame) {
	if f.kind == kindFileRes {
		b.fileAnswered(f)
		return
	}
	if f.kind == kindIsAlive {
		b.mu.Lock()
		ch := b.queries[f.id]
		delete(b.queries, f.id)
		b.mu.Unlock()
		if ch != nil {
			ch <- len(f.payload) == 1 && f.payload[0] == 1
		}
		return
	}
	b.mu.Lock()
	p := b.cmds[f.id]
	b.mu.Unlock()
	if p != nil && p.handle(f) {
		b.forget(f.id)
	}
}

func (b *box) ending() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ended
}

// start hands one command to the helper and waits until it started.
func (b *box) start(c executor.Confinement, env []string) (executor.Process, error) {
	out, err := dupFile(c.Stdout)
	if err != nil {
		return nil, err
	}
	errf, err := dupFile(c.Stderr)
	if err != nil {
		_ = out.Close()
		return nil, err
	}
	p := &remoteProc{b: b, out: out, err: errf, started: make(chan struct{}), exited: make(chan struct{})}
	b.mu.Lock()
	if b.ended {
		b.mu.Unlock()
		p.closeFiles()
		return nil, errors.New("docker: the session's container is ending")
	}
	b.next++
	p.id = b.next
	b.cmds[p.id] = p
	b.mu.Unlock()
	req, err := json.Marshal(executor.StartRequest{Command: c.Spec.Command, Dir: c.Spec.Workdir, Env: env})
	if err == nil {
		err = b.fw.write(kindStart, p.id, req)
	}
	if err != nil {
		b.forget(p.id)
		p.closeFiles()
		if b.cutSoon() {
			return nil, errContainerGone
		}
		return nil, fmt.Errorf("docker: send the command to the session's container: %w", err)
	}
	b.logger.Debug("command sent to the container", zap.Uint32("id", p.id))
	timer := time.NewTimer(answerTimeout)
	defer timer.Stop()
	select {
	case <-p.started:
	case <-b.done:
	case <-c.Stop:
		b.abandon(p)
		return nil, errStopped
	case <-timer.C:
		b.silent("start a command")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.startErr != "":
		p.closeFilesLocked()
		return nil, errors.New(p.startErr)
	case p.pid == 0:
		p.closeFilesLocked()
		if b.ending() {
			return nil, errors.New("docker: the session's container ended before the command started")
		}
		return nil, errContainerGone
	}
	return p, nil
}

// errContainerGone: the session's container ended under it; the next
// command makes a new one.
var errContainerGone = errors.New("docker: the session's container is gone (removed, killed, or its engine restarted); the next command starts a new one")

// cut reports whether the box was made and its tether is cut since: its
// container is gone, and no command can run in it any more.
func (b *box) cut() bool {
	select {
	case <-b.ready:
	default:
		return false
	}
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// cutSoon reports whether the tether is cut, or is cut within a second: a
// write that failed because the engine closed the connection is followed
// at once by serve's read failing, which cuts it.
func (b *box) cutSoon() bool {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-b.done:
		return true
	case <-t.C:
		return false
	}
}

func (b *box) forget(id uint32) {
	b.mu.Lock()
	delete(b.cmds, id)
	b.mu.Unlock()
}

// query asks the helper whether a command's group (or session) is alive.
func (b *box) query(cmd uint32, session bool) bool {
	ch := make(chan bool, 1)
	b.mu.Lock()
	b.next++
	id := b.next
	b.queries[id] = ch
	b.mu.Unlock()
	payload := binary.BigEndian.AppendUint32(nil, cmd)
	payload = append(payload, boolByte(session))
	if err := b.fw.write(kindAlive, id, payload); err != nil {
		b.mu.Lock()
		delete(b.queries, id)
		b.mu.Unlock()
		return false // the tether is cut: nothing of the container is left
	}
	timer := time.NewTimer(answerTimeout)
	defer timer.Stop()
	select {
	case alive := <-ch:
		return alive
	case <-b.done:
		return false
	case <-timer.C:
		b.silent("say whether a command is alive")
		return false // the tether is cut: nothing of the container is left
	}
}

// silent cuts the tether of a container whose helper did not answer in
// answerTimeout, and waits until serve saw it: every command of the
// container is then cut, and its session's next command gets a new one.
func (b *box) silent(what string) {
	b.logger.Warn("session container did not answer: its tether is cut", zap.String("asked", what), zap.Duration("waited", answerTimeout))
	b.conn.Close()
	<-b.done
}

// abandon gives up a command stopped (cancelled, its session closing)
// before the helper said it started: the helper reads frames in order, so
// the kill sent now ends it as soon as it runs.
func (b *box) abandon(p *remoteProc) {
	_ = b.fw.write(kindSignal, p.id, []byte{byte(unix.SIGKILL), 1})
	b.forget(p.id)
	p.closeFiles()
}

// end cuts the tether the clean way: the helper sees its stdin end, ends
// every command (SIGTERM, its grace, then the container's end kills the
// rest), and the engine removes the container. What the engine did not
// remove is removed by force.
func (b *box) end() {
	b.cancel()
	<-b.ready
	if b.err != nil {
		return
	}
	b.mu.Lock()
	b.ended = true
	b.mu.Unlock()
	if err := b.conn.CloseWrite(); err != nil {
		b.conn.Close()
	}
	t := time.NewTimer(b.d.opts.KillGrace + 5*time.Second)
	defer t.Stop()
	select {
	case <-b.done:
		if b.removed() {
			return
		}
	case <-t.C:
		b.logger.Warn("session container did not end; removing it by force", zap.String("container", shortID(b.id)))
		b.conn.Close()
	}
	b.remove()
}

// removed waits until the engine removed the ended container (AutoRemove)
// and reports whether it did in time.
func (b *box) removed() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := b.d.cli.waitRemoved(ctx, b.id)
	// Gone before the wait began: as good.
	return err == nil || notFound(err)
}

// remove removes the container by force; gone already is fine.
func (b *box) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := b.d.cli.removeContainer(ctx, b.id)
	if err != nil && !notFound(err) && !removing(err) {
		b.logger.Warn("remove session container", zap.String("container", shortID(b.id)), zap.Error(err))
	}
}

func shortID(id string) string { return id[:min(12, len(id))] }

func dupFile(f *os.File) (*os.File, error) {
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("docker: dup output pipe: %w", err)
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// demux reads the helper's stdout out of the engine's multiplexed attach
// stream (an 8-byte header per chunk: stream, 0, 0, 0, size); what the
// helper writes to stderr is logged.
type demux struct {
	r      *bufio.Reader
	logger *zap.Logger
	left   int // bytes of stdout left in the current chunk
	hdr    [8]byte
}

func (m *demux) Read(p []byte) (int, error) {
	for m.left == 0 {
		if _, err := io.ReadFull(m.r, m.hdr[:]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = io.EOF
			}
			return 0, err
		}
		n := int(binary.BigEndian.Uint32(m.hdr[4:]))
		if m.hdr[0] == 1 {
			m.left = n
			continue
		}
		line := make([]byte, n)
		if _, err := io.ReadFull(m.r, line); err != nil {
			return 0, io.EOF
		}
		m.logger.Warn("helper", zap.String("stderr", strings.TrimSpace(string(line))))
	}
	n, err := m.r.Read(p[:min(len(p), m.left)])
	m.left -= n
	return n, err
}

// remoteProc is a command the helper runs: the executor's Process, whose
// group it signals and asks about through the helper.
type remoteProc struct {
	b       *box
	id      uint32
	started chan struct{} // closed on the helper's started or failed
	exited  chan struct{} // closed on the helper's exit, or the tether's cut

	// mu guards the fields below.
	mu       sync.Mutex
	pid      int
	startErr string
	status   syscall.WaitStatus
	out, err *os.File // our copies of the capture pipes; nil once closed
	doneOnce bool     // started closed
	exitOnce bool     // exited closed
}

var _ executor.RemoteProcess = (*remoteProc)(nil)

func (p *remoteProc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

func (p *remoteProc) Wait() (syscall.WaitStatus, error) {
	<-p.exited
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status, nil
}

func (p *remoteProc) Signal(sig syscall.Signal, session bool) error {
	select {
	case <-p.b.done:
		return nil
	default:
	}
	if p.b.ending() {
		// The helper is ending every command itself (its stdin closed).
		return nil
	}
	if err := p.b.fw.write(kindSignal, p.id, []byte{byte(sig), boolByte(session)}); err != nil {
		return fmt.Errorf("docker: signal through the helper: %w", err)
	}
	return nil
}

func (p *remoteProc) Alive(session bool) bool { return p.b.query(p.id, session) }

// handle applies one frame of the helper's; it reports whether the command
// is over (it ended and its output did, or it never started).
func (p *remoteProc) handle(f frame) bool {
	switch f.kind {
	case kindStdout:
		p.write(&p.out, f.payload)
		return false
	case kindStderr:
		p.write(&p.err, f.payload)
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch f.kind {
	case kindStarted:
		if len(f.payload) == 4 {
			p.pid = int(binary.BigEndian.Uint32(f.payload))
		}
		p.markStarted()
	case kindFailed:
		p.startErr = "docker: " + string(f.payload)
		p.markStarted()
	case kindOutEOF:
		p.out = closeFile(p.out)
	case kindErrEOF:
		p.err = closeFile(p.err)
	case kindExit:
		if len(f.payload) == 4 {
			p.status = syscall.WaitStatus(binary.BigEndian.Uint32(f.payload))
		}
		p.markExited()
	}
	return p.startErr != "" || (p.exitOnce && p.out == nil && p.err == nil)
}

// cut: the helper is gone, and every process of its container with it
// (the container ended: its PID namespace was killed).
func (p *remoteProc) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeFilesLocked()
	p.markStarted()
	if !p.exitOnce {
		p.status = syscall.WaitStatus(unix.SIGKILL)
		p.markExited()
	}
}

func (p *remoteProc) markStarted() {
	if !p.doneOnce {
		p.doneOnce = true
		close(p.started)
	}
}

func (p *remoteProc) markExited() {
	if !p.exitOnce {
		p.exitOnce = true
		close(p.exited)
	}
}

func (p *remoteProc) closeFiles() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeFilesLocked()
}

func (p *remoteProc) closeFilesLocked() {
	p.out = closeFile(p.out)
	p.err = closeFile(p.err)
}

// write writes output to one of our capture pipes, without holding p.mu:
// the write blocks while the pipe is full, and the executor starts reading
// only once start, which takes p.mu, has returned. Once the executor stopped
// reading (a leftover held the stream past its grace) the write fails and
// the rest of the stream is dropped.
func (p *remoteProc) write(which **os.File, b []byte) {
	p.mu.Lock()
	f := *which
	p.mu.Unlock()
	if f == nil {
		return
	}
	if _, err := f.Write(b); err != nil {
		p.mu.Lock()
		if *which == f {
			*which = closeFile(f)
		}
		p.mu.Unlock()
	}
}

func closeFile(f *os.File) *os.File {
	if f != nil {
		_ = f.Close()
	}
	return nil
}
