package executor

import (
	"slices"
	"strings"
)

// secretMarkers are matched case-insensitively against variable names. A
// coding agent's commands rarely need a credential, and a model that can run
// `env` must not be able to read one. Not "PASS" alone: GIT_ASKPASS and
// SSH_AUTH_SOCK are what tools need to work without a prompt.
var secretMarkers = []string{"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE_KEY"}

// agentEnv is forced on top of the base: no colours or pagers to confuse the
// model, and nothing that waits for a human to type (stdin is /dev/null and
// nobody is watching). GIT_EDITOR=true makes `git commit` without -m abort
// on an empty message instead of opening an editor that never returns.
var agentEnv = []string{
	"NO_COLOR=1",
	"TERM=dumb",
	"PAGER=cat",
	"GIT_PAGER=cat",
	"GIT_TERMINAL_PROMPT=0",
	"GCM_INTERACTIVE=never",
	"GIT_EDITOR=true",
}

// agentUnset are removed so no helper pops up a password dialog.
var agentUnset = []string{"GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS"}

// minContainedSecret is the length from which a secret value is also
// searched for inside other values (e.g. "Bearer <key>"); shorter ones only
// match exactly, so a one-letter secret cannot wipe half the environment.
const minContainedSecret = 8

// buildEnv computes the environment every command gets, and the names of
// the credential variables it withheld (keyNames and agentUnset are not
// listed: they are never passed). It is computed once: the base is a
// snapshot taken at construction. keyNames (the variables that hold the
// model API key) are removed whatever keep says.
func buildEnv(base, keep, keyNames, secrets []string) (env, withheld []string) {
	always := make(map[string]bool, len(keyNames)+len(agentUnset))
	for _, n := range keyNames {
		if n != "" {
			always[n] = true
		}
	}
	for _, n := range agentUnset {
		always[n] = true
	}
	forced := make(map[string]bool, len(agentEnv))
	for _, kv := range agentEnv {
		name, _, _ := strings.Cut(kv, "=")
		forced[name] = true
	}

	out := make([]string, 0, len(base)+len(agentEnv))
	seen := make(map[string]bool, len(base))
	for _, kv := range base {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		// The first occurrence wins, as getenv(3) reads it; a later
		// duplicate could otherwise smuggle a secret past the checks.
		if seen[name] {
			continue
		}
		seen[name] = true
		switch {
		case always[name], forced[name]:
			continue
		case holdsSecret(value, secrets):
			continue
		case (LooksSecret(name) || LooksSecretValue(value)) && !slices.Contains(keep, name):
			withheld = append(withheld, name)
			continue
		}
		out = append(out, kv)
	}
	return append(out, agentEnv...), withheld
}

// LooksSecretValue reports whether a variable's value holds a URL with a
// password in it (scheme://user:password@host…, as DATABASE_URL often
// does), anywhere in the value.
func LooksSecretValue(value string) bool {
	for rest := value; ; {
		i := strings.Index(rest, "://")
		if i < 0 {
			return false
		}
		rest = rest[i+3:]
		// The authority ends at the first '/', '?', '#' or blank; its
		// userinfo, if any, before the last '@' in it.
		end := strings.IndexAny(rest, "/?# \t\n")
		if end < 0 {
			end = len(rest)
		}
		auth := rest[:end]
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			if _, pw, ok := strings.Cut(auth[:at], ":"); ok && pw != "" {
				return true
			}
		}
	}
}

// LooksSecret reports whether an environment variable's name marks it as a
// credential (it contains KEY, SECRET, TOKEN, PASSWORD, PASSWD, CREDENTIAL
// or PRIVATE_KEY, in any case).
// Such variables are removed from every command's environment.
func LooksSecret(name string) bool {
	upper := strings.ToUpper(name)
	for _, m := range secretMarkers {
		if strings.Contains(upper, m) {
			return true
		}
	}
	return false
}

func holdsSecret(value string, secrets []string) bool {
	for _, s := range secrets {
		if s == "" {
			continue
		}
		if value == s || (len(s) >= minContainedSecret && strings.Contains(value, s)) {
			return true
		}
	}
	return false
}
