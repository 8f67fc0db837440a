package sandbox

import (
	"encoding/json"
	"strings"
	"time"
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
	var key string
	var old *Zygote
	for k, v := range c.zygotes {
		if strings.HasPrefix(k, owner+"\x00") && !strings.Contains(k, "\x00retired\x00") {
			key, old = k, v.(*Zygote)
		}
	}
	c.mu.Unlock()
	c.Release(owner)
	var p Policy
	_, js, _ := strings.Cut(key, "\x00")
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		return nil, err
	}
	return c.newZygote(key, p, old)
}
