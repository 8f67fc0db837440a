// Package registry_test checks the ACP registry entries under registry/ as
// the registry's own validation does (agentclientprotocol/registry:
// agent.schema.json, .github/workflows/build_registry.py for the format and
// the icon, client.py and verify_agents.py for the auth check), and that an
// entry names this release.
package registry_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-acp/dsh-acp/internal/releasetest"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// entryID is this project's entry. Ids others' entries or open proposals
// use (read 2026-12-06): ours must be none of them.
const entryID = "dsh-agent"

var takenIDs = []string{"dsh-acp", "deepseek-acp", "dsh-acp-interactive", "reasonix"}

// entry is agent.json as agent.schema.json has it.
type entry struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Version      string         `json:"version"`
	Description  string         `json:"description"`
	Repository   string         `json:"repository"`
	Website      string         `json:"website"`
	Authors      []string       `json:"authors"`
	License      string         `json:"license"`
	LicenseURL   string         `json:"license_url"`
	Icon         string         `json:"icon"`
	Distribution map[string]any `json:"distribution"`
}

type packageDist struct {
	Package string            `json:"package"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// formatErrors are what the registry's build says of an entry in dir.
func formatErrors(dir string) []string {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	raw, err := os.ReadFile(filepath.Join(dir, "agent.json"))
	if err != nil {
		return []string{err.Error()}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return []string{"agent.json is invalid JSON: " + err.Error()}
	}
	for _, f := range []string{"id", "name", "version", "description", "distribution"} {
		if _, ok := fields[f]; !ok {
			bad("missing required field %q", f)
		}
	}
	var e entry
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&e); err != nil {
		return append(errs, "a field has the wrong type: "+err.Error())
	}
	if !regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(e.ID) {
		bad("id %q: lowercase letters, digits and hyphens, starting with a letter", e.ID)
	}
	if e.ID != filepath.Base(dir) {
		bad("id %q must match the directory name %q", e.ID, filepath.Base(dir))
	}
	if e.Name == "" || e.Description == "" {
		bad("name and description must not be empty")
	}
	if parts := strings.Split(e.Version, "."); len(parts) < 3 || !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+`).MatchString(e.Version) {
		bad("version %q must be a semantic version (1.0.0)", e.Version)
	} else {
		for _, p := range parts[:3] {
			if !regexp.MustCompile(`^[0-9]+$`).MatchString(p) {
				bad("version %q must be a semantic version (1.0.0)", e.Version)
			}
		}
	}
	for name, u := range map[string]string{"repository": e.Repository, "website": e.Website, "license_url": e.LicenseURL} {
		if u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || p.Scheme == "" || p.Host == "" {
			bad("%s %q is not a URI", name, u)
		}
	}
	if len(e.Distribution) == 0 {
		bad("distribution must be a non-empty object")
	}
	for kind, v := range e.Distribution {
		switch kind {
		case "npx", "uvx":
			b, _ := json.Marshal(v)
			var d packageDist
			strict := json.NewDecoder(bytes.NewReader(b))
			strict.DisallowUnknownFields()
			if err := strict.Decode(&d); err != nil {
				bad("distribution.%s: %v", kind, err)
				continue
			}
			if d.Package == "" {
				bad("distribution.%s is missing package", kind)
			}
			if strings.Contains(strings.ToLower(d.Package), "@latest") {
				bad("%s package uses '@latest': use an explicit version", kind)
			}
			if kind == "npx" {
				if v := npmVersion(d.Package); v != "" && v != e.Version {
					bad("npx package version (%s) doesn't match the entry's (%s)", v, e.Version)
				}
			}
			for name := range d.Env {
				if reservedEnv(name) {
					bad("distribution.%s.env sets %s, which the registry drops", kind, name)
				}
			}
		case "binary":
			// The registry requires a binary for each of darwin, linux and
			// windows; dsh-acp has none for Windows, so it ships no binary
			// distribution (the npx launcher says what to do there).
			bad("distribution.binary needs a Windows build, which dsh-acp does not have")
		default:
			bad("unknown distribution type %q", kind)
		}
	}
	errs = append(errs, iconErrors(filepath.Join(dir, "icon.svg"))...)
	return errs
}

// npmVersion is the version of an npm spec (name@version, @scope/name@version).
func npmVersion(spec string) string {
	rest := spec
	if strings.HasPrefix(spec, "@") {
		rest = spec[1:]
	}
	if _, v, ok := strings.Cut(rest, "@"); ok {
		return v
	}
	return ""
}

// reservedEnv: the names the registry strips from an entry's env.
func reservedEnv(name string) bool {
	for _, p := range []string{"ACTIONS_", "AWS_", "AZURE_", "DYLD_", "GCLOUD_", "GITHUB_", "GOOGLE_", "LD_", "NODE_", "NPM_", "PIP_", "PYTHON_", "RUNNER_", "SSH_", "UV_", "XDG_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return slices.Contains([]string{"CI", "HOME", "PATH", "TMPDIR", "TEMP", "TMP", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE"}, name)
}

// iconErrors: a 16×16 square SVG that draws in currentColor only.
func iconErrors(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return []string{"icon.svg: " + err.Error()}
	}
	svg := string(b)
	var errs []string
	w := regexp.MustCompile(`<svg[^>]*\swidth=["'](\d+)`).FindStringSubmatch(svg)
	h := regexp.MustCompile(`<svg[^>]*\sheight=["'](\d+)`).FindStringSubmatch(svg)
	var width, height string
	if w != nil && h != nil {
		width, height = w[1], h[1]
	} else if vb := regexp.MustCompile(`viewBox=["'][\d.]+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)`).FindStringSubmatch(svg); vb != nil {
		width, height = vb[1], vb[2]
	} else {
		return []string{"icon.svg has neither width/height nor a viewBox"}
	}
	if width != "16" || height != "16" {
		errs = append(errs, fmt.Sprintf("icon.svg should be 16x16 (got %sx%s)", width, height))
	}
	allowed := []string{"currentcolor", "none", "inherit"}
	for _, attr := range []string{"fill", "stroke"} {
		for _, m := range regexp.MustCompile(`(?i)\b`+attr+`\s*=\s*["']([^"']+)["']`).FindAllStringSubmatch(svg, -1) {
			if !slices.Contains(allowed, strings.ToLower(strings.TrimSpace(m[1]))) {
				errs = append(errs, fmt.Sprintf("icon.svg has a hardcoded %s=%q", attr, m[1]))
			}
		}
		for _, m := range regexp.MustCompile(`(?i)\bstyle\s*=\s*["']([^"']+)["']`).FindAllStringSubmatch(svg, -1) {
			if s := regexp.MustCompile(`(?i)\b` + attr + `\s*:\s*([^;]+)`).FindStringSubmatch(m[1]); s != nil && !slices.Contains(allowed, strings.ToLower(strings.TrimSpace(s[1]))) {
				errs = append(errs, fmt.Sprintf("icon.svg has a hardcoded style %s: %s", attr, s[1]))
			}
		}
	}
	if !regexp.MustCompile(`(?i)currentColor`).MatchString(svg) {
		errs = append(errs, "icon.svg must use currentColor")
	}
	return errs
}

// TestEntryFormat: every entry passes the registry's format rules; ours is
// there, under an id no one else uses, and names this release: the
// version of CHANGELOG.md and the npm package of that version.
func TestEntryFormat(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("*/agent.json")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no registry/*/agent.json (%v)", err)
	}
	for _, f := range dirs {
		for _, e := range formatErrors(filepath.Dir(f)) {
			t.Errorf("%s: %s", filepath.Dir(f), e)
		}
	}
	var e entry
	raw, err := os.ReadFile(filepath.Join(entryID, "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(takenIDs, e.ID) {
		t.Errorf("id %q is another agent's", e.ID)
	}
	version := releasetest.ChangelogVersion(t, "..")
	if e.Version != version {
		t.Errorf("version %q, CHANGELOG.md's newest is %s", e.Version, version)
	}
	npx, _ := e.Distribution["npx"].(map[string]any)
	if npx["package"] != "dsh-acp@"+version {
		t.Errorf("distribution.npx.package %v, want dsh-acp@%s", npx["package"], version)
	}
	if e.License != "MIT" || e.Repository != "https://github.com/dsh-acp/dsh-acp" {
		t.Errorf("license %q, repository %q", e.License, e.Repository)
	}
	// The README's install lines name the same release.
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`dsh-acp@(\d+\.\d+\.\d+)|\bv=(\d+\.\d+\.\d+)|release is \*\*(\d+\.\d+\.\d+)\*\*`)
	found := 0
	for _, m := range re.FindAllStringSubmatch(string(readme), -1) {
		found++
		if v := m[1] + m[2] + m[3]; v != version {
			t.Errorf("README.md says %q, the release is %s", m[0], version)
		}
	}
	if found == 0 {
		t.Error("README.md names no release version (dsh-acp@X.Y.Z)")
	}
}

// TestFormatCheckRefuses: the format check is not one that passes
// anything: the registry's errors, each on a broken copy of our entry.
func TestFormatCheckRefuses(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile(filepath.Join(entryID, "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	icon, err := os.ReadFile(filepath.Join(entryID, "icon.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, from, to, icon, want string
	}{
		{"id", `"id": "dsh-agent"`, `"id": "DSH_agent"`, "", "lowercase"},
		{"version", `"version": "0.1.0"`, `"version": "0.1"`, "", "semantic version"},
		{"latest", `"package": "dsh-acp@0.1.0"`, `"package": "dsh-acp@latest"`, "", "@latest"},
		{"npx version", `"package": "dsh-acp@0.1.0"`, `"package": "dsh-acp@0.0.9"`, "", "doesn't match"},
		{"npx field", `"package": "dsh-acp@0.1.0"`, `"package": "dsh-acp@0.1.0", "cmd": "x"`, "", "unknown field"},
		{"no description", `"description": "A coding`, `"descriptionx": "A coding`, "", `missing required field "description"`},
		{"colour", "", "", `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><path fill="#000" d="M0 0h16v16H0z"/></svg>`, "hardcoded fill"},
		{"size", "", "", `<svg xmlns="http://www.w3.org/2000/svg" width="24" height="24"><path fill="currentColor" d="M0 0h1v1H0z"/></svg>`, "16x16"},
	} {
		dir := filepath.Join(t.TempDir(), entryID)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		j := string(good)
		if c.from != "" {
			if !strings.Contains(j, c.from) {
				t.Fatalf("%s: agent.json has no %q", c.name, c.from)
			}
			j = strings.Replace(j, c.from, c.to, 1)
		}
		svg := string(icon)
		if c.icon != "" {
			svg = c.icon
		}
		if err := os.WriteFile(filepath.Join(dir, "agent.json"), []byte(j), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "icon.svg"), []byte(svg), 0o644); err != nil {
			t.Fatal(err)
		}
		errs := formatErrors(dir)
		if !strings.Contains(strings.Join(errs, "\n"), c.want) {
			t.Errorf("%s: errors %q, want one saying %q", c.name, errs, c.want)
		}
	}
}

// authCheck is the registry's auth check of the agent cmd starts: HOME an
// empty directory, the registry's initialize; it must answer with a
// non-empty authMethods holding a terminal method.
func authCheck(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	ctx := testutil.WithTimeout(t, releasetest.Slow)
	result := releasetest.Initialize(t, ctx, cmd, releasetest.RegistryInitialize(), nil)
	methods := releasetest.AuthMethods(result)
	if !slices.ContainsFunc(methods, func(m releasetest.AuthMethod) bool { return m.Type == "terminal" }) {
		t.Errorf("authMethods %v: no terminal method (raw: %v)", methods, result["authMethods"])
	}
}

// TestAuthCheckFromSource: the registry's auth check passes for the agent
// built from this source, run with the entry's args and env.
func TestAuthCheckFromSource(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "dsh-acp")
	build := exec.Command("go", "build", "-o", bin, "../cmd/dsh-acp")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var e struct {
		Distribution struct{ Npx packageDist } `json:"distribution"`
	}
	raw, err := os.ReadFile(filepath.Join(entryID, "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.Command(bin, e.Distribution.Npx.Args...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TERM=dumb"}
	for k, v := range e.Distribution.Npx.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	authCheck(t, cmd)
}

// TestAuthCheckThroughNpx: the same check through the entry's distribution
// as a user gets it: the release's npm package, installed with no registry,
// run by npx, and it is the release's version that answers.
func TestAuthCheckThroughNpx(t *testing.T) {
	t.Parallel()
	dir, version := releasetest.Release(t, "..")
	if runtime.GOOS == "windows" {
		t.Skip("dsh-acp does not run on Windows")
	}
	home := t.TempDir()
	prefix := releasetest.Install(t, dir, version, home)
	cmd := releasetest.Npx(prefix, home)
	cmd.Env = append(cmd.Env, "TERM=dumb")
	authCheck(t, cmd)
	out, err := releasetest.Npx(prefix, home, "version").Output()
	if err != nil || string(out) != "dsh-acp "+version+"\n" {
		t.Errorf("npx dsh-acp version: %q, %v; want the entry's %s", out, err, version)
	}
}
