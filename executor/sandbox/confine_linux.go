package sandbox

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// maxZygotes bounds the zygotes kept for one session (see newZygote).
const maxZygotes = 4

// ownerZygotes are one session's zygotes. The Confiner's mu guards them.
type ownerZygotes struct {
	// live holds the zygote serving each policy, keyed by the policy's
	// JSON (a Policy holds slices, so it cannot be a key itself).
	live map[string]*Zygote
	// retired take no new command: each ends with its last one, and is
	// kept here for Release and Close to find meanwhile.
	retired []*Zygote
}

// retire takes the zygote of policy out of service.
func (o *ownerZygotes) retire(policy string) {
	z := o.live[policy]
	delete(o.live, policy)
	z.retire()
	o.retired = append(o.retired, z)
}

// pruneEnded drops the retired zygotes that have exited (reaped already:
// see Zygote.read).
func (o *ownerZygotes) pruneEnded() {
	o.retired = slices.DeleteFunc(o.retired, (*Zygote).ended)
}

// leastUsed is the policy of the live zygote whose last command is the
// oldest.
func (o *ownerZygotes) leastUsed() string {
	var lru string
	var lruZ *Zygote
	for k, z := range o.live {
		if lruZ == nil || z.used.Load() < lruZ.used.Load() {
			lru, lruZ = k, z
		}
	}
	return lru
}

// close ends every zygote of the session.
func (o *ownerZygotes) close() error {
	var errs []error
	for _, z := range o.live {
		errs = append(errs, z.Close())
	}
	for _, z := range o.retired {
		errs = append(errs, z.Close())
	}
	return errors.Join(errs...)
}

// start runs the command in owner's zygote for p, starting one if there is
// none (or the last one died).
func (c *Confiner) start(owner string, p Policy, dir, command string, env []string, stdout, stderr *os.File) (executor.Process, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	policy := string(b)
	var last error
	for range 2 {
		c.mu.Lock()
		var z *Zygote
		if o := c.zygotes[owner]; o != nil {
			z = o.live[policy]
		}
		c.mu.Unlock()
		if z == nil || !z.usable() {
			if z, err = c.newZygote(owner, policy, p, z); err != nil {
				return nil, err
			}
		}
		z.used.Store(time.Now().UnixNano())
		pr, err := z.StartIn(dir, command, env, stdout, stderr)
		if err == nil || z.usable() {
			return pr, err
		}
		// Retired as the command reached it (another command found its
		// rules stale), or dead (killed, or it could not set up): once
		// more in a new one, which for a zygote that cannot set up fails
		// again with its reason.
		last = err
	}
	return nil, last
}

// newZygote replaces old (nil, dead or stale) as owner's zygote for
// policy (p as JSON), unless another command already did. The old one is
// retired: it ends with its last command.
func (c *Confiner) newZygote(owner, policy string, p Policy, old *Zygote) (*Zygote, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("confiner closed")
	}
	o := c.zygotes[owner]
	if o == nil {
		o = &ownerZygotes{live: map[string]*Zygote{}}
		c.zygotes[owner] = o
	}
	// Another command may have replaced old already; or old may be gone
	// from the map (retired as the least recently used, or released),
	// and then there is nothing to retire and a new one is made.
	cur := o.live[policy]
	if cur != nil && cur != old {
		return cur, nil
	}
	for _, other := range c.zygotes {
		other.pruneEnded()
	}
	if cur != nil {
		o.retire(policy)
	}
	// A session whose commands use many workdirs (one policy each) keeps
	// only its most recently used zygotes: each is a process (and with
	// namespaces a set of them), 1.7 MiB of its own.
	for len(o.live) >= maxZygotes {
		o.retire(o.leastUsed())
	}
	// Started under the lock: concurrent first commands of a session get
	// one zygote, not one each. Starting costs one fork and exec.
	z, err := c.opts.Launcher.Zygote(p)
	if err != nil {
		return nil, err
	}
	o.live[policy] = z
	return z, nil
}
