package signin

import (
	"os"
	"path/filepath"
)

// SelfPath is the running binary's absolute path, for an editor to run it
// again in a terminal; "dsh-acp" (found in PATH) when it is unknown.
func SelfPath() string {
	exe, err := os.Executable()
	if err != nil {
		return "dsh-acp"
	}
	if abs, err := filepath.Abs(exe); err == nil {
		return abs
	}
	return exe
}

// terminalEnvNames are the variables a terminal sign-in must see as this
// process sees them: which endpoint (the settings the endpoint may come
// from) and where keys are kept. An editor may have set them for the agent
// only; none of them holds a key.
func terminalEnvNames() []string { return []string{"DSH_BASE_URL", "XDG_CONFIG_HOME", "HOME"} }

// TerminalEnv is what of getenv a terminal sign-in is given (the editor
// runs it with this environment added).
func TerminalEnv(getenv func(string) string) map[string]string {
	out := map[string]string{}
	if getenv == nil {
		return out
	}
	for _, n := range terminalEnvNames() {
		if v := getenv(n); v != "" {
			out[n] = v
		}
	}
	return out
}
