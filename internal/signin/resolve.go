package signin

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/dsh-acp/dsh-acp/agent/openai"
)

// resolveTimeout bounds the one lookup a failed keyless run makes.
const resolveTimeout = 3 * time.Second

// Unresolved says, for a run that failed with no API key and no script
// (the caller knows), whether the endpoint's host does not resolve either:
// that is what is wrong first (a typo in --base-url, no network), and a
// key would not fix it. Empty when the host resolves or there is nothing to look up.
// It runs only after a failure, so a working run never waits on DNS.
func Unresolved(ctx context.Context, baseURL string) string {
	if ctx.Err() != nil {
		return ""
	}
	raw := baseURL
	if raw == "" {
		raw = openai.DefaultBaseURL
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || net.ParseIP(u.Hostname()) != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	if _, err := net.DefaultResolver.LookupHost(ctx, u.Hostname()); err != nil {
		return fmt.Sprintf("the model endpoint's host %q does not resolve (%v): check --base-url (DSH_BASE_URL) and the network", u.Hostname(), err)
	}
	return ""
}
