package sandbox

import "time"

// SetStartTimeout shortens how long a start waits for its zygote's answer;
// the returned func restores it. Tests only, not in parallel with others
// that start commands.
func SetStartTimeout(d time.Duration) (restore func()) {
	old := startTimeout
	startTimeout = d
	return func() { startTimeout = old }
}
