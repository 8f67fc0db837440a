package sandbox

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Access right sets used by the rules.
const (
	// dirOnly lets a directory on the way to a denied path be listed and
	// entered, and nothing else, in a write tree too: a right granted on a
	// directory is inherited by everything beneath, so file rights here
	// would open the denied path again, and a creation right would let a
	// command plant a file or a link inside it (the agent's state
	// directory, another session's temporary directory) for the unconfined
	// agent to follow. The entries of such a directory get rules of their
	// own (see ruleSet.grant): existing files stay writable, other
	// subdirectories wholly so.
	dirOnly = landlock.AccessFSSet(ll.AccessFSReadDir)
)

// ruleset is a Landlock ruleset built once, to confine threads with.
type ruleset struct {
	fd    int
	flags uint32
	// net, when set, denies the IP network beyond what Landlock governs
	// (the network denied and no network namespace: see netFilter).
	net []unix.SockFilter
}

// newRuleset builds w's ruleset, in best-effort mode down to the kernel's
// ABI. Probe has already refused a kernel without Landlock; this refuses
// again rather than run bash unconfined. Signal scoping is left out where
// the commands have a PID namespace of their own: there they cannot name
// a process outside it anyway, and commands confined by separate
// restrictions could not signal one another (a later command's `kill` of
// what an earlier one started).
func newRuleset(w wirePolicy, hidden map[string]bool) (ruleset, error) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return ruleset{}, fmt.Errorf("landlock unavailable (abi %d): %v", abi, err)
	}
	cfg := landlock.V11
	if w.Network {
		cfg.HandledAccessNet = 0
	}
	if w.Namespaces {
		cfg.Scoped &^= landlock.ScopedSet(ll.ScopeSignal)
	}
	fd, flags, err := cfg.BestEffort().NewRulesetFD(fsRules(w.Policy, hidden)...)
	if err != nil {
		return ruleset{}, fmt.Errorf("landlock: %w", err)
	}
	if fd < 0 {
		return ruleset{}, errors.New("landlock: nothing to enforce")
	}
	rs := ruleset{fd: fd, flags: flags}
	if !w.Network && !(w.Namespaces && w.NetNS) {
		p, err := netFilter(abi >= 4)
		if err == nil {
			rs.net, err = sockFilter(p)
		}
		if err != nil {
			_ = unix.Close(fd)
			return ruleset{}, fmt.Errorf("seccomp: %w", err)
		}
	}
	return rs, nil
}

// restrict confines the calling thread, which the caller has locked
// (runtime.LockOSThread) and must never unlock: what it forks inherits the
// thread's domain, its no_new_privs and its capability sets, all per
// thread. The other threads of the process stay as they are.
func (r ruleset) restrict() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(r.fd, r.flags); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if r.net != nil {
		if err := denyNet(r.net); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear capabilities: %w", err)
	}
	if os.Getuid() == 0 {
		return dropBounding()
	}
	return nil
}

// dropBounding empties the calling thread's capability bounding set, so
// that a shell it starts as root gets no capability at exec: it could
// otherwise ptrace the zygote (CAP_SYS_PTRACE overrides non-dumpable),
// undo its mounts, or load a kernel module.
func dropBounding() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	return nil
}

// fsRules turns p into Landlock rules: read-only trees, write trees and
// devices, each descended around the denied paths, since Landlock only
// grants (a grant on / cannot exclude one directory beneath it). Denied
// paths in hidden are already covered by a mount (see hideDenied) and need
// no descent.
func fsRules(p Policy, hidden map[string]bool) []landlock.Rule {
	return buildRules(p, hidden).rules(p)
}

// buildRules sorts p's paths by the rights they get.
func buildRules(p Policy, hidden map[string]bool) *ruleSet {
	var deny []string
	for _, d := range resolveAll(p.Deny) {
		if !hidden[d] {
			deny = append(deny, d)
		}
	}
	r := new(ruleSet)
	for _, root := range resolveAll(p.readTrees()) {
		r.grant(root, deny, false, true)
	}
	for _, root := range resolveAll(p.writeTrees()) {
		r.grant(root, deny, true, true)
	}
	return r
}

// descended lists the directories whose entries became rules one by one:
// an entry made there later has no rule.
func (r *ruleSet) descended() []string {
	return append(append([]string{}, r.roList...), r.rwList...)
}

func (r *ruleSet) rules(p Policy) []landlock.Rule {
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
		landlock.PathAccess(dirOnly, r.descended()...).IgnoreIfMissing(),
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
	denied, below := deniedAt(root, deny, top)
	if denied {
		return
	}
	fi, err := os.Stat(root)
	if err != nil {
		return // missing: nothing to grant
	}
	if below {
		r.descend(root, deny, write)
		return
	}
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
}

// descend grants root's entries one by one, around the denied paths
// beneath it; root itself gets only dirOnly (see rules).
func (r *ruleSet) descend(root string, deny []string, write bool) {
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

// hideDenied covers, inside the zygote's mount namespace, every denied
// path: a denied directory gets an empty read-only tmpfs, a denied file a
// read-only /dev/null. Landlock then needs no descent around them (see
// fsRules), which would both list the names beside them and freeze that
// listing for the zygote's life: an entry made later in /tmp or $HOME
// would be unreadable to the session. What the policy keeps inside a
// denied directory (the session's own temporary directory and spill
// files) is bound back into the tmpfs, from a descriptor opened before it
// was covered. Commands have no capabilities and Landlock forbids them
// mount operations, so none can be undone. It returns the paths covered.
func hideDenied(p Policy) (map[string]bool, error) {
	keep := resolveAll(append(append([]string{p.Workdir, p.TempDir}, p.Write...), p.Read...))
	deny := resolveAll(p.Deny)
	// Outer paths first: an inner one is then gone (nothing to hide) unless
	// it lies in something bound back, whose view it must not reveal.
	// (A path named twice, say /var/run/dbus and /run/dbus, is covered
	// once: a second mount would cover the first's blank file.)
	slices.SortFunc(deny, func(a, b string) int { return cmp.Or(len(a)-len(b), strings.Compare(a, b)) })
	deny = slices.Compact(deny)
	if err := pinAncestors(deny, resolveAll(append([]string{p.Workdir, p.TempDir}, p.Write...))); err != nil {
		return nil, err
	}
	hidden := make(map[string]bool)
	var files []string
	blank := "" // an empty file nobody may open, in the first tmpfs
	for _, d := range deny {
		fi, err := os.Stat(d)
		if err != nil {
			continue
		}
		if !fi.IsDir() {
			files = append(files, d)
			continue
		}
		var inside []string
		for _, k := range keep {
			if within(k, d) {
				inside = append(inside, k)
			}
		}
		// The blank file goes where nothing is kept, so nobody can list it.
		b, err := hideDir(d, inside, blank == "" && len(inside) == 0)
		if err != nil {
			return nil, err
		}
		if b != "" {
			blank = b
		}
		hidden[d] = true
	}
	for _, f := range files {
		if err := hideFile(f, blank); err != nil {
			return nil, err
		}
		hidden[f] = true
	}
	return hidden, nil
}

// pinAncestors makes each directory between a write tree and a denied
// path inside it a mount point (bound onto itself), which rename and
// rmdir refuse (EBUSY). Otherwise a command with cwd $HOME could move
// ~/.local away with the agent's state directory in it — the agent
// would then make its next files wherever the command put a directory
// of that name — or plant a link there for the next zygote to follow.
// Everything else in them stays as writable as the rest of the tree.
func pinAncestors(deny, write []string) error {
	var pins []string
	for _, d := range deny {
		for _, w := range write {
			if !within(d, w) {
				continue
			}
			for a := filepath.Dir(d); a != w && within(a, w); a = filepath.Dir(a) {
				pins = append(pins, a)
			}
		}
	}
	slices.SortFunc(pins, func(a, b string) int { return cmp.Or(len(a)-len(b), strings.Compare(a, b)) })
	for _, a := range slices.Compact(pins) {
		if fi, err := os.Lstat(a); err != nil || !fi.IsDir() {
			continue
		}
		if err := unix.Mount(a, a, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("pin %s: %w", a, err)
		}
	}
	return nil
}

// blankName is the file hideDir makes for hideFile: mode 000, so that a
// denied file reads as one ("Permission denied"), not as an empty one.
const blankName = ".dsh-acp-denied"

// hideFile covers path with blank (or, without one, a read-only /dev/null).
func hideFile(path, blank string) error {
	if blank != "" {
		if err := unix.Mount(blank, path, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("hide %s: %w", path, err)
		}
		return nil
	}
	if err := unix.Mount("/dev/null", path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("hide %s: %w", path, err)
	}
	if err := unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("hide %s: %w", path, err)
	}
	return nil
}

// hideDir covers dir with a tmpfs and binds each path of keep (inside dir)
// back at its place. With makeBlank it also leaves the blank file there
// and returns its path.
func hideDir(dir string, keep []string, makeBlank bool) (blank string, err error) {
	// Opened before the tmpfs covers them: afterwards their paths name
	// the tmpfs.
	held := holdAll(keep)
	defer held.close()
	// Without anything to keep nobody may even enter it; with, the way to
	// what is kept must be walkable (and shows only its names).
	mode := os.FileMode(0)
	if len(held) > 0 {
		mode = 0o711
	}
	// Made 0700 for the zygote to fill (it may have no capability to
	// override a mode), then given its mode.
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, "size=64k,mode=700"); err != nil {
		return "", fmt.Errorf("hide %s: %w", dir, err)
	}
	for _, h := range held {
		if err := h.bindBack(); err != nil {
			return "", err
		}
	}
	if makeBlank {
		blank = filepath.Join(dir, blankName)
		if err := writeBlank(blank); err != nil {
			return "", fmt.Errorf("hide %s: %w", dir, err)
		}
	}
	if err := os.Chmod(dir, mode); err != nil {
		return "", fmt.Errorf("hide %s: %w", dir, err)
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY|flags, ""); err != nil {
		return "", fmt.Errorf("hide %s: %w", dir, err)
	}
	return blank, nil
}

// heldPath is a path kept inside a hidden directory, held by an O_PATH
// descriptor opened before the directory was covered.
type heldPath struct {
	path string
	fd   int
}

type heldPaths []heldPath

// holdAll opens each path of keep that exists.
func holdAll(keep []string) heldPaths {
	var held heldPaths
	for _, k := range keep {
		fd, err := unix.Open(k, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone: nothing to keep
		}
		held = append(held, heldPath{path: k, fd: fd})
	}
	return held
}

func (hs heldPaths) close() {
	for _, h := range hs {
		_ = unix.Close(h.fd)
	}
}

// bindBack makes h's path again inside the tmpfs now covering it (a
// directory or an empty file, as it was) and binds what it held there.
func (h heldPath) bindBack() error {
	var st unix.Stat_t
	if err := unix.Fstat(h.fd, &st); err != nil {
		return fmt.Errorf("keep %s: %w", h.path, err)
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o711); err != nil {
		return fmt.Errorf("keep %s: %w", h.path, err)
	}
	var err error
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		err = os.Mkdir(h.path, 0o700)
	} else {
		err = os.WriteFile(h.path, nil, 0o600)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("keep %s: %w", h.path, err)
	}
	if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(h.fd), h.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("keep %s: %w", h.path, err)
	}
	return nil
}

// writeBlank makes the blank file (see blankName): empty, mode 000.
func writeBlank(path string) error {
	if err := os.WriteFile(path, nil, 0); err != nil {
		return err
	}
	return os.Chmod(path, 0)
}

// readOnlyMounts makes p's read-only trees (Policy.ReadOnly) read-only
// mounts, but for the policy's write trees inside them (bound back
// writable). A write there then fails as on any read-only file system
// ("Read-only file system"); everywhere else Landlock's "Permission
// denied" stands, and the metadata of the user's own files outside the
// write trees stays changeable (see README).
func readOnlyMounts(p Policy) error {
	ro := readOnlyTrees(p)
	for _, t := range ro {
		if err := unix.Mount(t, t, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", t, err)
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, t, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("read-only %s: %w", t, err)
		}
	}
	for _, w := range resolveAll(append([]string{p.Workdir, p.TempDir}, p.Write...)) {
		inside := slices.ContainsFunc(ro, func(t string) bool { return w == t || within(w, t) })
		if _, err := os.Stat(w); err != nil || !inside {
			continue
		}
		if err := unix.Mount(w, w, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", w, err)
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, w, 0, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("writable %s: %w", w, err)
		}
	}
	return nil
}

// readOnlyTrees are p's read-only trees (SystemTrees by default) that
// exist and are directories, resolved, each once.
func readOnlyTrees(p Policy) []string {
	trees := p.ReadOnly
	if trees == nil {
		trees = SystemTrees
	}
	var ro []string
	for _, t := range resolveAll(trees) {
		if fi, err := os.Stat(t); err != nil || !fi.IsDir() || slices.Contains(ro, t) {
			continue
		}
		ro = append(ro, t)
	}
	return ro
}
