package sandbox

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// maxZygotes bounds the zygotes kept for one session (see newZygote).
const maxZygotes = 4

// start runs the command in owner's zygote for p, starting one if there is
// none (or the last one died).
func (c *Confiner) start(owner string, p Policy, dir, command string, env []string, stdout, stderr *os.File) (executor.Process, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	key := owner + "\x00" + string(b)
	var last error
	for range 2 {
		c.mu.Lock()
		z, _ := c.zygotes[key].(*Zygote)
		c.mu.Unlock()
		if z == nil || !z.usable() {
			if z, err = c.newZygote(key, p, z); err != nil {
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

// newZygote replaces old (nil, dead or stale) as key's zygote, unless
// another command already did. The old one is retired: it ends with its
// last command, and stays in the map (under a key of its own) for Release
// and Close to find meanwhile.
func (c *Confiner) newZygote(key string, p Policy, old *Zygote) (*Zygote, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("confiner closed")
	}
	// Another command may have replaced old already; or old may be gone
	// from the map (retired as the least recently used, or released),
	// and then there is nothing to retire and a new one is made.
	cur, _ := c.zygotes[key].(*Zygote)
	if cur != nil && cur != old {
		return cur, nil
	}
	for k, v := range c.zygotes {
		if z, ok := v.(*Zygote); ok && z.ended() && strings.Contains(k, "\x00retired\x00") {
			delete(c.zygotes, k) // reaped already (see Zygote.read)
		}
	}
	retire := func(k string, z *Zygote) {
		z.retire()
		c.retired++
		delete(c.zygotes, k)
		c.zygotes[key+"\x00retired\x00"+strconv.Itoa(c.retired)] = z
	}
	if cur != nil {
		retire(key, cur)
	}
	// A session whose commands use many workdirs (one policy each) keeps
	// only its most recently used zygotes: each is a process (and with
	// namespaces a set of them), 1.7 MiB of its own.
	owner, _, _ := strings.Cut(key, "\x00")
	for {
		var lru string
		var lruZ *Zygote
		live := 0
		for k, v := range c.zygotes {
			z, ok := v.(*Zygote)
			if !ok || !strings.HasPrefix(k, owner+"\x00") || strings.Contains(k, "\x00retired\x00") {
				continue
			}
			live++
			if lruZ == nil || z.used.Load() < lruZ.used.Load() {
				lru, lruZ = k, z
			}
		}
		if live < maxZygotes {
			break
		}
		retire(lru, lruZ)
	}
	// Started under the lock: concurrent first commands of a session get
	// one zygote, not one each. Starting costs one fork and exec.
	z, err := c.opts.Launcher.Zygote(p)
	if err != nil {
		return nil, err
	}
	c.zygotes[key] = z
	return z, nil
}
