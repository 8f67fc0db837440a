package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/agent/openai"
	settings "github.com/dsh-acp/dsh-acp/internal/config"
	"github.com/dsh-acp/dsh-acp/internal/keystore"
)

// configEnv is an environment whose config directory is a fresh one with
// config.toml holding file; extra adds variables.
func configEnv(t *testing.T, file string, extra map[string]string) (env, string) {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, "cfg", "dsh-acp")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "cfg"), "DSH_STATE_DIR": filepath.Join(home, "state")}
	for k, v := range extra {
		vars[k] = v
	}
	return func(k string) string { return vars[k] }, path
}

// TestConfigFilePrecedence: flag > environment > file > default, for
// scalars; repeatable flags add the command line's to the file's.
func TestConfigFilePrecedence(t *testing.T) {
	t.Parallel()
	const file = `# settings that stay
model = "from-file"
base-url = "http://127.0.0.1:1/v1"
allow = ["git status", "go test"]
timeout = "30s"
compact-at = 0.5
max-requests = 7
allow-mcp-readonly = true
yes = true          # exec's: not a mistake in a server's file
`
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		model   string
		baseURL string
		allow   []string
	}{
		{name: "file over default", model: "from-file", baseURL: "http://127.0.0.1:1/v1", allow: []string{"git status", "go test"}},
		{name: "environment over file", env: map[string]string{"DSH_MODEL": "from-env"}, model: "from-env", baseURL: "http://127.0.0.1:1/v1", allow: []string{"git status", "go test"}},
		{name: "flag over environment", env: map[string]string{"DSH_MODEL": "from-env"}, args: []string{"--model", "from-flag", "--allow", "ls"}, model: "from-flag", baseURL: "http://127.0.0.1:1/v1", allow: []string{"git status", "go test", "ls"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			getenv, _ := configEnv(t, file, tc.env)
			cfg, err := parseServe(tc.args, getenv)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.model != tc.model || cfg.baseURL != tc.baseURL || !slices.Equal(cfg.allow, tc.allow) {
				t.Errorf("model=%q base-url=%q allow=%q; want %q %q %q", cfg.model, cfg.baseURL, cfg.allow, tc.model, tc.baseURL, tc.allow)
			}
			if cfg.timeout.String() != "30s" || cfg.compactAt != 0.5 || cfg.maxRequests != 7 || !cfg.allowMCPReadOnly {
				t.Errorf("timeout=%v compact-at=%v max-requests=%d allow-mcp-readonly=%v", cfg.timeout, cfg.compactAt, cfg.maxRequests, cfg.allowMCPReadOnly)
			}
		})
	}
	getenv, _ := configEnv(t, file, nil)
	cfg, err := parseExec([]string{"hello"}, getenv)
	if err != nil || !cfg.yes {
		t.Errorf("exec: yes = true in the file: cfg.yes=%v err=%v", cfg != nil && cfg.yes, err)
	}
}

// TestConfigFileErrors: a broken file stops the agent with an error that
// names the file and the line, serve and exec alike.
func TestConfigFileErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		file string
		// want are substrings of the error; the file's path is always one.
		want []string
	}{
		{"unknown key", "model = \"m\"\n\nfrobnicate = 1\n", []string{":3:", `unknown key "frobnicate"`}},
		{"syntax", "model = \"m\"\ntimeout = \n", []string{":2:"}},
		{"duplicate key", "model = \"a\"\nmodel = \"b\"\n", []string{":2:"}},
		{"bad duration", "timeout = 5\n", []string{":1:", "timeout", "duration"}},
		{"bad number", "max-requests = \"many\"\n", []string{":1:", "max-requests", "whole number"}},
		{"array for one value", "model = [\"a\", \"b\"]\n", []string{":1:", "not an array"}},
		{"string for a switch", "no-persist = \"yes\"\n", []string{":1:", "true or false"}},
		{"table", "model = \"m\"\n[mcp]\nx = 1\n", []string{":2:", "table"}},
		{"not a setting", "version = true\n", []string{":1:", "not a setting"}},
		{"the API key", "model = \"m\"\napi-key = \"sk-in-a-file\"\n", []string{":2:", "API key is not a setting", "dsh-acp login"}},
		{"invalid value", "# a comment\ncompact-at = 2.0\n", []string{"--compact-at", ":2"}},
		{"bad mode", "default-mode = \"yolo\"\n", []string{"--default-mode", ":1"}},
		// Values of the wrong kind (issue 31): each names the key, its
		// line and the kind wanted.
		{"NaN for a share", "model = \"m\"\ncompact-at = nan\n", []string{"--compact-at", ":2", "NaN"}},
		{"infinity for a share", "compact-at = inf\n", []string{"--compact-at", ":1"}},
		{"a number for a list", "deny = 7\n", []string{":1:", "deny", "array of strings"}},
		{"a string for a list", "allow = \"git\"\n", []string{":1:", "allow", "array of strings"}},
		{"a number in a list", "deny = [\"rm\", 7]\n", []string{":1:", "deny", "element 2 is an integer", "want a string"}},
		{"a number for a string", "model = 7\n", []string{":1:", "model", "is an integer", "want a string"}},
		{"a decimal for a whole number", "max-requests = 1.5\n", []string{":1:", "max-requests", "whole number"}},
		{"a price of NaN", "price = \"in=nan,out=1\"\n", []string{":1", "price"}},
		{"a huge unknown key", strings.Repeat("k", 1<<19) + " = 1\n", []string{":1:", "unknown key", "(524288 bytes)"}},
		{"the line of the flag named", "model = \"m\"\nmodel-timeout = \"0s\"\n", []string{"--model-timeout must be positive", "config.toml:2)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			getenv, path := configEnv(t, tc.file, nil)
			for _, args := range [][]string{nil, {"exec", "--script", "x", "hi"}} {
				var out, errb bytes.Buffer
				code := run(context.Background(), args, nil, &out, &errb, getenv)
				if code != 2 {
					t.Errorf("%q: exit %d, want 2 (stderr %q)", args, code, errb.String())
				}
				for _, w := range append(tc.want, path) {
					if !strings.Contains(errb.String(), w) {
						t.Errorf("%q: stderr %q lacks %q", args, errb.String(), w)
					}
				}
				if out.Len() != 0 {
					t.Errorf("%q: stdout written: %q", args, out.String())
				}
				if strings.Contains(errb.String(), "sk-in-a-file") {
					t.Errorf("%q: the key's value was printed: %q", args, errb.String())
				}
			}
		})
	}
}

// TestConfigCommand: dsh-acp config says where each setting came from and
// never prints the key.
func TestConfigCommand(t *testing.T) {
	t.Parallel()
	const secret = "sk-do-not-print-me"
	getenv, path := configEnv(t, "model = \"from-file\"\ndeny = [\"rm\"]\n", map[string]string{"DSH_BASE_URL": "http://127.0.0.1:9/v1", "DSH_API_KEY": secret})
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"config", "--timeout", "1m", "--deny", "dd"}, nil, &out, &errb, getenv); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := out.String()
	if strings.Contains(got, secret) {
		t.Fatalf("config printed the API key:\n%s", got)
	}
	want := []string{
		"config file: " + path,
		"api key: set, from the environment (DSH_API_KEY)",
	}
	rows := map[string][]string{
		"model":        {"from-file", "config file, line 1"},
		"base-url":     {"http://127.0.0.1:9/v1", "environment"},
		"timeout":      {"1m0s", "flag"},
		"deny":         {"rm,dd", "flag + config file, line 2"},
		"default-mode": {"ask", "default"},
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("config output lacks %q:\n%s", w, got)
		}
	}
	for _, line := range strings.Split(got, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		if r, ok := rows[f[0]]; ok {
			if f[1] != r[0] || strings.Join(f[2:], " ") != r[1] {
				t.Errorf("row %q, want value %q from %q", line, r[0], r[1])
			}
			delete(rows, f[0])
		}
	}
	if len(rows) > 0 {
		t.Errorf("rows missing: %v\n%s", rows, got)
	}
}

// TestEveryFlagIsAKey: every flag of serve and exec, including ones added
// later, can be set in the file (bar the few that are one run's choice).
func TestEveryFlagIsAKey(t *testing.T) {
	t.Parallel()
	var file strings.Builder
	n := 0
	for _, st := range (&config{}).table() {
		if st.OneRun {
			continue
		}
		n++
		def := execFlagSet().Lookup(st.Name).DefValue
		switch st.TOMLKind() {
		case "string":
			if st.Kind == settings.List {
				file.WriteString(st.Name + " = []\n")
			} else {
				file.WriteString(st.Name + " = " + tomlString(def) + "\n")
			}
		default:
			// A number or a switch is written as one.
			file.WriteString(st.Name + " = " + def + "\n")
		}
	}
	getenv, _ := configEnv(t, file.String(), nil)
	if _, err := parseExec([]string{"hi"}, getenv); err != nil {
		t.Fatalf("a file of every flag at its default: %v\n%s", err, file.String())
	}
	if n < 20 {
		t.Errorf("only %d flags seen", n)
	}
}

func tomlString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// BenchmarkParseServeWithConfig is what the settings cost at start: the
// flag sets, a config.toml of a dozen keys, and the command line.
func BenchmarkParseServeWithConfig(b *testing.B) {
	home := b.TempDir()
	dir := filepath.Join(home, "dsh-acp")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	file := `model = "deepseek-chat"
base-url = "https://api.deepseek.com"
default-mode = "sandbox"
allow = ["git status", "go test", "go build", "ls", "cat"]
deny = ["git push", "rm -rf"]
timeout = "5m"
max-timeout = "20m"
compact-at = 0.7
max-requests = 50
allow-mcp-readonly = true
log-level = "info"
sandbox-network = false
`
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(file), 0o600); err != nil {
		b.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return home
		}
		return ""
	}
	for b.Loop() {
		if _, err := parseServe([]string{"--model", "x"}, getenv); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConfigCommandFlagOverFile: a single-value flag given on the command
// line replaces the file's value, so its source is the flag alone; and a
// key stored by dsh-acp login is reported as found there.
func TestConfigCommandFlagOverFile(t *testing.T) {
	t.Parallel()
	const secret = "sk-stored-not-printed"
	getenv, path := configEnv(t, "timeout = \"5m\"\nmodel = \"from-file\"\n", nil)
	st := &keystore.Store{Dir: filepath.Dir(path)}
	keyPath, err := st.Put(openai.DefaultBaseURL+"/v1", secret)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"config", "--timeout", "7m"}, nil, &out, &errb, getenv); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := out.String()
	if strings.Contains(got, secret) {
		t.Fatalf("config printed the API key:\n%s", got)
	}
	if want := "api key: set, stored by dsh-acp login for https://api.deepseek.com/v1 (" + keyPath + ")"; !strings.Contains(got, want) {
		t.Errorf("config output lacks %q:\n%s", want, got)
	}
	rows := map[string]string{"timeout": "7m0s flag", "model": "from-file config file, line 2"}
	for _, line := range strings.Split(got, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		if want, ok := rows[f[0]]; ok {
			if g := strings.Join(f[1:], " "); g != want {
				t.Errorf("row %q = %q, want %q", f[0], g, want)
			}
			delete(rows, f[0])
		}
	}
	if len(rows) > 0 {
		t.Errorf("rows missing: %v\n%s", rows, got)
	}
}

// TestConfigErrorBlamesTheRightPlace: a bad value given as a flag is not
// blamed on the file whose value it replaced, and a file's value refused
// only when used (a log file in a directory that is not there) names the
// file's line.
func TestConfigErrorBlamesTheRightPlace(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-such-dir", "agent.log")
	getenv, path := configEnv(t, "timeout = \"5m\"\nlog-file = "+tomlString(missing)+"\n", nil)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"exec", "--timeout", "-1s", "--script", "x", "hi"}, nil, &out, &errb, getenv)
	if code != 2 || !strings.Contains(errb.String(), "--timeout") || strings.Contains(errb.String(), path) {
		t.Errorf("--timeout -1s over the file's 5m: exit %d, stderr %q (the flag is at fault, not %s)", code, errb.String(), path)
	}
	errb.Reset()
	code = run(context.Background(), []string{"exec", "--script", "x", "hi"}, nil, &out, &errb, getenv)
	if want := "(set in " + path + ":2)"; code != 2 || !strings.Contains(errb.String(), "--log-file") || !strings.Contains(errb.String(), want) {
		t.Errorf("log-file in the file: exit %d, stderr %q, want it to name %q", code, errb.String(), want)
	}
	// A list's flags add to the file's list: an empty --allow given on
	// the command line is the flag's fault, not the file's; an empty
	// pattern in the file is the file's, although a flag added to it.
	getenv, path = configEnv(t, "allow = [\"ls\"]\nsandbox-read = [\"/\"]\n", nil)
	for _, args := range [][]string{{"exec", "--allow", "", "--script", "x", "hi"}, {"exec", "--sandbox-read", "relative", "--script", "x", "hi"}} {
		errb.Reset()
		code = run(context.Background(), args, nil, &out, &errb, getenv)
		if code != 2 || errb.Len() == 0 || strings.Contains(errb.String(), path) {
			t.Errorf("%q over the file's list: exit %d, stderr %q (the flag is at fault, not %s)", args, code, errb.String(), path)
		}
	}
	getenv, path = configEnv(t, "allow = [\"\"]\n", nil)
	errb.Reset()
	code = run(context.Background(), []string{"exec", "--allow", "ls", "--script", "x", "hi"}, nil, &out, &errb, getenv)
	if want := "(set in " + path + ":1)"; code != 2 || !strings.Contains(errb.String(), "empty pattern") || !strings.Contains(errb.String(), want) {
		t.Errorf("allow = [\"\"] with --allow ls: exit %d, stderr %q, want it to name %q", code, errb.String(), want)
	}
}

// TestConfigErrorBlamesWhatSetIt: a refused value is blamed on the line
// that set the setting whose check refused it, every time, although its
// message names another setting the file sets too; a check whose fix is
// another setting's names that one's line.
func TestConfigErrorBlamesWhatSetIt(t *testing.T) {
	t.Parallel()
	getenv, path := configEnv(t, "max-timeout = \"1m\"\ntimeout = \"5m\"\n", nil)
	want := "--timeout 5m0s is above --max-timeout 1m0s (set in " + path + ":2)\n"
	// The old reading searched a map of the file's lines for a flag the
	// message names: line 1 or line 2 by the map's order.
	for range 16 {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"exec", "--script", "x", "hi"}, nil, &out, &errb, getenv)
		if code != 2 || !strings.HasPrefix(errb.String(), "dsh-acp exec: "+want) {
			t.Fatalf("exit %d, stderr %q, want it to start %q", code, errb.String(), want)
		}
	}
	// The file lowers --max-timeout below the default --timeout: the
	// file's line is at fault, though --timeout's check finds it, and
	// stays so when a flag gives --timeout.
	getenv, path = configEnv(t, "max-timeout = \"1s\"\n", nil)
	for _, args := range [][]string{{"exec", "--script", "x", "hi"}, {"exec", "--timeout", "5s", "--script", "x", "hi"}} {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, nil, &out, &errb, getenv)
		if want := "is above --max-timeout 1s (set in " + path + ":1)"; code != 2 || !strings.Contains(errb.String(), want) {
			t.Errorf("%q over the file's max-timeout = \"1s\": exit %d, stderr %q, want %q", args, code, errb.String(), want)
		}
	}
	getenv, path = configEnv(t, "sandbox = \"off\"\n", nil)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--default-mode", "sandbox"}, nil, &out, &errb, getenv)
	if want := "drop --sandbox off (set in " + path + ":1)"; code != 2 || !strings.Contains(errb.String(), want) {
		t.Errorf("--default-mode sandbox over the file's sandbox = off: exit %d, stderr %q, want %q", code, errb.String(), want)
	}
}

// TestConfigCommandShowsEffectiveDefaults: a setting left to its default
// shows what a run would use (the endpoint, the model, the store), not "".
func TestConfigCommandShowsEffectiveDefaults(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	vars := map[string]string{"HOME": home}
	getenv := func(k string) string { return vars[k] }
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"config"}, nil, &out, &errb, getenv); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	rows := map[string]string{
		"base-url":       "https://api.deepseek.com default",
		"model":          "deepseek-flash default",
		"executor":       "local default",
		"context-window": "1000000 default",
		"state-dir":      filepath.Join(home, ".local", "state", "dsh-acp") + " default",
	}
	if runtime.GOOS == "darwin" {
		rows["state-dir"] = filepath.Join(home, "Library", "Application Support", "dsh-acp") + " default"
	}
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		if want, ok := rows[f[0]]; ok {
			if got := strings.Join(f[1:], " "); got != want {
				t.Errorf("row %q = %q, want %q", f[0], got, want)
			}
			delete(rows, f[0])
		}
	}
	if len(rows) > 0 {
		t.Errorf("rows missing: %v\n%s", rows, out.String())
	}
}

// TestEnvErrorNamesTheVariable: a bad value from the environment names
// the variable, since the person never typed the flag; every variable
// that sets a flag is DSH_ and its name.
func TestEnvErrorNamesTheVariable(t *testing.T) {
	t.Parallel()
	getenv, _ := configEnv(t, "", map[string]string{"DSH_EXECUTOR": "k8s"})
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"exec", "--script", "x", "hi"}, nil, &out, &errb, getenv)
	if code != 2 || !strings.Contains(errb.String(), "--executor must be local or docker") || !strings.Contains(errb.String(), "(set in the environment: DSH_EXECUTOR)") {
		t.Errorf("DSH_EXECUTOR=k8s: exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := run(context.Background(), []string{"exec", "--executor", "k9s", "--script", "x", "hi"}, nil, &out, &errb, getenv); code != 2 || strings.Contains(errb.String(), "DSH_EXECUTOR") {
		t.Errorf("--executor k9s over DSH_EXECUTOR: exit %d, stderr %q (the flag is at fault)", code, errb.String())
	}
	table := (&config{}).table()
	for _, name := range []string{"base-url", "model", "thinking", "state-dir", "executor", "docker-image", "docker-helper"} {
		st := table.Lookup(name)
		want := "DSH_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if st == nil || st.Env != want || !strings.Contains(st.Usage, "env "+want) {
			t.Errorf("--%s: its variable is not %s, or its usage does not name it", name, want)
		}
	}
}
