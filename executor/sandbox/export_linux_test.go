package sandbox

import (
	"encoding/json"
	"os"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// SetStartTimeout shortens how long a start waits for its zygote's answer;
// the returned func restores it. Tests only, not in parallel with others
// that start commands.
func SetStartTimeout(d time.Duration) (restore func()) {
	old := startTimeout
	startTimeout = d
	return func() { startTimeout = old }
}

// ReplaceReleased replays a start that found owner's only zygote unusable
// just as Release (or a retirement as the least recently used) took it out
// of the map: it releases owner, then asks for a new zygote in place of
// the one it had.
func ReplaceReleased(c *Confiner, owner string) (*Zygote, error) {
	c.mu.Lock()
	var policy string
	var old *Zygote
	if o := c.zygotes[owner]; o != nil {
		for k, z := range o.live {
			policy, old = k, z
		}
	}
	c.mu.Unlock()
	c.Release(owner)
	var p Policy
	if err := json.Unmarshal([]byte(policy), &p); err != nil {
		return nil, err
	}
	return c.newZygote(owner, policy, p, old)
}

// Zygotes counts owner's zygotes: those serving a policy, and those
// retired (ending with their last command) not yet seen to have ended.
func Zygotes(c *Confiner, owner string) (live, retired int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.zygotes[owner]
	if o == nil {
		return 0, 0
	}
	return len(o.live), len(o.retired)
}

// Start is StartIn in the policy's Workdir.
func (z *Zygote) Start(command string, env []string, stdout, stderr *os.File) (executor.Process, error) {
	return z.StartIn("", command, env, stdout, stderr)
}
