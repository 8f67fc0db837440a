package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Access right sets used by the rules.
const (
	// dirOnly lets a directory on the way to a denied path be listed and
	// entered, and nothing else: a right granted on a directory is inherited
	// by everything beneath, so file rights here would open the denied
	// path again.
	dirOnly = landlock.AccessFSSet(ll.AccessFSReadDir)
	// dirOnlyWrite is dirOnly for a writable tree with a denied path inside:
	// new entries may be made (and moved, which Landlock allows only when
	// the moved file gains no rights), existing ones not removed, since
	// removal would be inherited by the denied path too.
	dirOnlyWrite = landlock.AccessFSSet(ll.AccessFSReadDir | ll.AccessFSMakeChar | ll.AccessFSMakeDir |
		ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock |
		ll.AccessFSMakeSym | ll.AccessFSRefer)
)

// restrictThread confines the calling thread, which the caller has locked
// (runtime.LockOSThread) and must never unlock, to w with Landlock, in
// best-effort mode down to the kernel's ABI. Probe has already refused a
// kernel without Landlock; this refuses again rather than run bash
// unconfined.
//
// Only this thread: bash is started (or exec'd) from it and inherits its
// domain. Confining every thread would give each its own domain on kernels
// before ABI 8 (one landlock_restrict_self per thread), and then init's
// signal-forwarding thread could not signal bash (ScopeSignal).
func restrictThread(w wirePolicy, hidden map[string]bool) error {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return fmt.Errorf("landlock unavailable (abi %d): %v", abi, err)
	}
	cfg := landlock.V11
	if w.Network {
		cfg.HandledAccessNet = 0
	}
	fd, flags, err := cfg.BestEffort().NewRulesetFD(fsRules(w.Policy, hidden)...)
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if fd < 0 {
		return errors.New("landlock: nothing to enforce")
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// fsRules turns p into Landlock rules: read-only trees, write trees and
// devices, each descended around the denied paths, since Landlock only
// grants (a grant on / cannot exclude one directory beneath it). Denied
// paths in hidden are already covered by a mount (see hideDenied) and do
// not split the write trees.
func fsRules(p Policy, hidden map[string]bool) []landlock.Rule {
	deny := resolveAll(p.Deny)
	var writeDeny []string
	for _, d := range deny {
		if !hidden[d] {
			writeDeny = append(writeDeny, d)
		}
	}
	var r ruleSet
	read := p.Read
	if len(read) == 0 {
		read = []string{"/"}
	} else {
		read = append(append(append([]string{}, read...), SystemRead...), filepath.Dir(p.Shell))
	}
	for _, root := range resolveAll(read) {
		r.grant(root, deny, false, true)
	}
	write := append([]string{p.Workdir, p.TempDir}, p.Write...)
	for _, root := range resolveAll(write) {
		r.grant(root, writeDeny, true, true)
	}
	// Entries vanish between the listing and the ruleset (a shared /tmp):
	// a missing path has nothing to grant.
	ro := landlock.RODirs(r.roDirs...)
	if p.Network {
		// Connecting to a unix socket outside the writable trees is network
		// access (a daemon's socket). The right exists from ABI 9; best
		// effort drops it before.
		ro = ro.WithResolveUnix()
	}
	rules := []landlock.Rule{
		landlock.PathAccess(dirOnly, r.roList...).IgnoreIfMissing(),
		landlock.PathAccess(dirOnlyWrite, r.rwList...).IgnoreIfMissing(),
		ro.IgnoreIfMissing(),
		landlock.ROFiles(r.roFiles...).IgnoreIfMissing(),
		landlock.RWDirs(r.rwDirs...).WithRefer().WithIoctlDev().WithResolveUnix().IgnoreIfMissing(),
		landlock.RWFiles(r.rwFiles...).WithIoctlDev().IgnoreIfMissing(),
		landlock.RWFiles(Devices...).WithIoctlDev().IgnoreIfMissing(),
	}
	return rules
}

// ruleSet collects paths by the rights they get.
type ruleSet struct {
	roList, rwList   []string // directories on the way to a denied path
	roDirs, rwDirs   []string
	roFiles, rwFiles []string
	listed           map[string]bool // directories already descended (symlink loops)
}

// grant gives root (read, or read and write) minus the denied paths beneath
// it. An explicit root (top=true) strictly inside a denied path re-opens
// that subtree; one equal to a denied path stays denied.
func (r *ruleSet) grant(root string, deny []string, write, top bool) {
	var below bool
	for _, d := range deny {
		switch {
		case root == d:
			return
		case within(root, d) && !top:
			return
		case within(d, root):
			below = true
		}
	}
	fi, err := os.Stat(root)
	if err != nil {
		return // missing: nothing to grant
	}
	if !below {
		switch {
		case fi.IsDir() && write:
			r.rwDirs = append(r.rwDirs, root)
		case fi.IsDir():
			r.roDirs = append(r.roDirs, root)
		case write:
			r.rwFiles = append(r.rwFiles, root)
		default:
			r.roFiles = append(r.roFiles, root)
		}
		return
	}
	key := fmt.Sprint(write, root)
	if r.listed[key] {
		return
	}
	if r.listed == nil {
		r.listed = make(map[string]bool)
	}
	r.listed[key] = true
	if write {
		r.rwList = append(r.rwList, root)
	} else {
		r.roList = append(r.roList, root)
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		path := filepath.Join(root, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			// Landlock checks the real path, so a grant on a link is a
			// grant on its target: grant the target, around denied paths.
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				continue
			}
			path = real
		}
		r.grant(path, deny, write, false)
	}
}

// resolveAll cleans paths and resolves their symlinks; paths that do not
// exist are kept as they are (a missing grant is skipped; a missing deny
// entry hides nothing, so deny a directory, not files that come later).
func resolveAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p == "" {
			continue
		}
		p = filepath.Clean(p)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		} else if !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// hideDenied covers, inside the command's mount namespace, each denied path
// that lies within a write tree: Landlock could only keep it out by
// withholding file rights from every directory on the way, which would
// also forbid writing new files there (cwd = $HOME holding the agent's
// state). A denied directory gets an empty read-only tmpfs, a denied file a
// read-only /dev/null. Landlock then forbids undoing the mounts. It returns
// the paths covered.
func hideDenied(p Policy) (map[string]bool, error) {
	write := resolveAll(append([]string{p.Workdir, p.TempDir}, p.Write...))
	hidden := make(map[string]bool)
	for _, d := range resolveAll(p.Deny) {
		inWrite := false
		for _, w := range write {
			inWrite = inWrite || within(d, w)
		}
		fi, err := os.Stat(d)
		if !inWrite || err != nil {
			continue
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", d, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=000")
		} else {
			err = unix.Mount("/dev/null", d, "", unix.MS_BIND, "")
			if err == nil {
				err = unix.Mount("", d, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
			}
		}
		if err != nil {
			return nil, fmt.Errorf("hide %s: %w", d, err)
		}
		hidden[d] = true
	}
	return hidden, nil
}
