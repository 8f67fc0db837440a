package transcript_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A process belongs to a scenario when it descends from the scenario's
// dsh-acp process (by parent chain, or by a process group that such a
// descendant led — orphans keep their group after they are re-parented)
// and carries the scenario's DSH_TRANSCRIPT_RUN token in its environment.
// The token guards against pid reuse: a recycled pid is someone else's
// process without the token. One shared scanner walks /proc for every
// running scenario, so many parallel scenarios cost one scan per tick.

const scanInterval = 25 * time.Millisecond

// procStat is what we read of /proc/<pid>/stat.
type procStat struct {
	pid, ppid, pgrp int
	state           byte
	start           uint64 // clock ticks since boot
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// The command name is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procStat{}, false
	}
	st := procStat{pid: pid, state: f[0][0]}
	st.ppid, _ = strconv.Atoi(f[1])
	st.pgrp, _ = strconv.Atoi(f[2])
	st.start, _ = strconv.ParseUint(f[19], 10, 64)
	return st, true
}

func listProcs() map[int]procStat {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make(map[int]procStat, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			out[pid] = st
		}
	}
	return out
}

// tracker records every process a scenario's binary spawned.
type tracker struct {
	root     int
	rootPgrp int
	token    string

	// mu guards seen and pgrps.
	mu    sync.Mutex
	seen  map[int]procStat
	pgrps map[int]bool
}

func newTracker(root int, token string) *tracker {
	t := &tracker{root: root, token: token, seen: map[int]procStat{}, pgrps: map[int]bool{}}
	if st, ok := readStat(root); ok {
		t.rootPgrp = st.pgrp
	}
	return t
}

// observe adds the descendants found in one snapshot of /proc.
func (t *tracker) observe(snap map[int]procStat) {
	children := map[int][]int{}
	for pid, st := range snap {
		children[st.ppid] = append(children[st.ppid], pid)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	queue := []int{t.root}
	for pid, st := range snap {
		if t.pgrps[st.pgrp] && pid != t.root {
			queue = append(queue, pid)
		}
	}
	visited := map[int]bool{}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if visited[pid] {
			continue
		}
		visited[pid] = true
		if st, ok := snap[pid]; ok && pid != t.root {
			if _, known := t.seen[pid]; !known {
				t.seen[pid] = st
			}
			if st.pgrp != t.rootPgrp {
				t.pgrps[st.pgrp] = true
			}
		}
		queue = append(queue, children[pid]...)
	}
}

// seenPids returns every descendant observed so far.
func (t *tracker) seenPids() map[int]procStat {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[int]procStat, len(t.seen))
	for k, v := range t.seen {
		out[k] = v
	}
	return out
}

// alive reports whether pid still runs as one of the scenario's processes:
// it exists (kill(pid, 0) does not fail with ESRCH), is not a zombie
// (nobody may be left to reap an orphan), has the start time we saw (if we
// saw one) and carries the scenario's token.
func (t *tracker) alive(pid int, start uint64) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	st, ok := readStat(pid)
	if !ok || st.state == 'Z' || st.state == 'X' {
		return false
	}
	if start != 0 && st.start != start {
		return false // the pid was reused
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return true // cannot tell: count it
	}
	return bytes.Contains(env, []byte("DSH_TRANSCRIPT_RUN="+t.token+"\x00"))
}

func describePid(pid int) string {
	cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return fmt.Sprintf("pid %d (%s)", pid, strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))))
}

// scanner is the one goroutine walking /proc while any tracker is
// registered.
var scanner struct {
	mu       sync.Mutex
	trackers map[*tracker]bool
	stop     chan struct{}
	done     chan struct{}
}

func startTracking(t *tracker) {
	scanner.mu.Lock()
	defer scanner.mu.Unlock()
	if scanner.trackers == nil {
		scanner.trackers = map[*tracker]bool{}
	}
	scanner.trackers[t] = true
	if len(scanner.trackers) == 1 {
		stop, done := make(chan struct{}), make(chan struct{})
		scanner.stop, scanner.done = stop, done
		go scanLoop(stop, done)
	}
}

// stopTracking unregisters t after one last scan; the scan goroutine ends
// with the last tracker.
func stopTracking(t *tracker) {
	t.observe(listProcs())
	scanner.mu.Lock()
	delete(scanner.trackers, t)
	var done chan struct{}
	if len(scanner.trackers) == 0 && scanner.stop != nil {
		close(scanner.stop)
		done = scanner.done
		scanner.stop, scanner.done = nil, nil
	}
	scanner.mu.Unlock()
	if done != nil {
		<-done
	}
}

func scanLoop(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(scanInterval)
	defer tick.Stop()
	for {
		snap := listProcs()
		scanner.mu.Lock()
		ts := make([]*tracker, 0, len(scanner.trackers))
		for t := range scanner.trackers {
			ts = append(ts, t)
		}
		scanner.mu.Unlock()
		for _, t := range ts {
			t.observe(snap)
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// A scenario names the processes it wants checked with a mark: a word its
// command puts into their command lines — the shell has it in its
// `bash -c` text, a child gets it as its name (`exec -a fg-job sleep 30`).
// The harness finds them in the host's /proc whatever PID namespace they
// run in (a pid a command prints is the namespace's, not the host's): a
// process is the scenario's when it runs as the test's user and carries one
// of the scenario's DSH_TRANSCRIPT_RUN tokens in its environment.

// ourProc is a live process of the scenario found in /proc.
type ourProc struct {
	pid  int
	argv []string
}

func (p ourProc) String() string {
	return fmt.Sprintf("pid %d (%s)", p.pid, strings.Join(p.argv, " "))
}

// findProcs returns the live (not zombie) processes of the test's user
// whose environment carries one of tokens and, when mark is not empty,
// one of whose arguments holds mark as a word.
func findProcs(tokens []string, mark string) []ourProc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	uid := os.Getuid()
	var out []ourProc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := "/proc/" + e.Name()
		// The command line first: readable for every process, and it rules
		// out nearly all of them.
		cmdline, err := os.ReadFile(dir + "/cmdline")
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
		if mark != "" && !slices.ContainsFunc(argv, func(a string) bool { return hasWord(a, mark) }) {
			continue
		}
		if fi, err := os.Stat(dir); err != nil || !ownedBy(fi, uid) {
			continue
		}
		if st, ok := readStat(pid); !ok || st.state == 'Z' || st.state == 'X' {
			continue
		}
		env, err := os.ReadFile(dir + "/environ")
		if err != nil {
			continue // gone, or not ours to read
		}
		env = append([]byte{0}, env...)
		if !slices.ContainsFunc(tokens, func(t string) bool {
			return bytes.Contains(env, []byte("\x00DSH_TRANSCRIPT_RUN="+t+"\x00"))
		}) {
			continue
		}
		out = append(out, ourProc{pid: pid, argv: argv})
	}
	return out
}

func ownedBy(fi os.FileInfo, uid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

// hasWord reports whether s holds w with no letter, digit, '-' or '_' on
// either side: the mark fg-job is not in fg-job2.
func hasWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(w)
		if (start == 0 || !wordByte(s[start-1])) && (end == len(s) || !wordByte(s[end])) {
			return true
		}
		i = start + 1
	}
}

func wordByte(c byte) bool {
	return c == '-' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
