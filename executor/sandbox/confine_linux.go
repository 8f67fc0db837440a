package sandbox

import (
	"encoding/json"
	"errors"
	"os"

	"github.com/dsh-acp/dsh-acp/executor"
)

// start runs the command in owner's zygote for p, starting one if there is
// none (or the last one died).
func (c *Confiner) start(owner string, p Policy, command string, env []string, stdout, stderr *os.File) (executor.Process, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	key := owner + "\x00" + string(b)
	c.mu.Lock()
	z, _ := c.zygotes[key].(*Zygote)
	c.mu.Unlock()
	if z == nil || !z.alive() {
		old := z
		if z, err = c.newZygote(key, p, old); err != nil {
			return nil, err
		}
		if old != nil && old != z {
			_ = old.Close() // dead already: this reaps it
		}
	}
	return z.Start(command, env, stdout, stderr)
}

// newZygote replaces old (nil, or dead) as key's zygote, unless another
// command already did.
func (c *Confiner) newZygote(key string, p Policy, old *Zygote) (*Zygote, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("confiner closed")
	}
	if z, _ := c.zygotes[key].(*Zygote); z != old {
		return z, nil
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
