package config

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// vals is what a test table reads into.
type vals struct {
	name    string
	mode    string
	n       int
	share   float64
	wait    time.Duration
	on      bool
	list    []string
	only    bool
	oneRun  bool
	checked []string
}

func testTable(v *vals) Table {
	check := func(name string, err func() error) func() error {
		return func() error { v.checked = append(v.checked, name); return err() }
	}
	return Table{
		{Name: "name", Env: "T_NAME", Kind: String, Var: &v.name, Usage: "a `NAME`"},
		{Name: "mode", Env: "T_MODE", Kind: String, Var: &v.mode, Default: "ask", Usage: "a mode",
			Check: check("mode", func() error {
				if v.mode == "bad" {
					return errors.New("--mode must not be bad, see --name")
				}
				return nil
			})},
		{Name: "n", Kind: Int, Var: &v.n, Default: 3, Usage: "a count",
			Check: check("n", func() error {
				if v.n < 0 {
					return Because("share", errors.New("--n below zero: --share says so"))
				}
				return nil
			})},
		{Name: "share", Kind: Float, Var: &v.share, Default: 0.5, Usage: "a share"},
		{Name: "wait", Kind: Duration, Var: &v.wait, Default: time.Second, Usage: "a wait"},
		{Name: "on", Kind: Bool, Var: &v.on, Usage: "a switch"},
		{Name: "list", Kind: List, Var: &v.list, Usage: "repeatable"},
		{Name: "only", Kind: Bool, Var: &v.only, Command: "exec", Usage: "exec's"},
		{Name: "once", Kind: Bool, Var: &v.oneRun, OneRun: true, Usage: "one run's"},
	}
}

// write puts a config.toml of text in a new directory and returns its path.
func write(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestEveryValueKnowsItsSource: flag > environment > file > default, each
// value recorded with where it came from, the file's with its line; a
// variable set to the default's own text is still the environment's.
func TestEveryValueKnowsItsSource(t *testing.T) {
	t.Parallel()
	path := write(t, "# settings\nname = \"from-file\"\nmode = \"file-mode\"\nn = 0x10\nlist = [\"a\"]\nwait = \"2m\"\nonly = true\n")
	var v vals
	p, err := testTable(&v).Parse(Request{Name: "t", FilePath: path,
		Getenv: envOf(map[string]string{"T_MODE": "ask"}), Args: []string{"word", "--wait", "3s", "--list", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if v.name != "from-file" || v.mode != "ask" || v.n != 16 || v.wait != 3*time.Second || !slices.Equal(v.list, []string{"a", "b"}) || v.share != 0.5 {
		t.Errorf("values %+v", v)
	}
	if v.only {
		t.Error("exec's setting was applied to another command")
	}
	want := map[string]string{
		"name":  "config file, line 2",
		"mode":  "environment",
		"n":     "config file, line 4",
		"list":  "flag + config file, line 5",
		"wait":  "flag",
		"share": "default",
	}
	for name, w := range want {
		if got := p.Source(name).String(); got != w {
			t.Errorf("source of %s = %q, want %q", name, got, w)
		}
	}
	if !slices.Equal(p.Args, []string{"word"}) || !p.Given("list") || p.Given("name") {
		t.Errorf("args %q, given list %v name %v", p.Args, p.Given("list"), p.Given("name"))
	}
}

// TestCheckErrorsNameTheirSource: a check's error names the file's line or
// the variable that set the value checked, never a setting its text only
// mentions, and nothing when the flag gave it; Because moves the blame.
func TestCheckErrorsNameTheirSource(t *testing.T) {
	t.Parallel()
	path := write(t, "name = \"x\"\nmode = \"bad\"\nshare = 0.25\nn = -1\n")
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, nil, "--mode must not be bad, see --name (set in " + path + ":2)"},
		{nil, map[string]string{"T_MODE": "bad"}, "--mode must not be bad, see --name (set in the environment: T_MODE)"},
		{[]string{"--mode", "bad"}, nil, "--mode must not be bad, see --name"},
		{[]string{"--mode", "ok"}, nil, "--n below zero: --share says so (set in " + path + ":3)"},
		{[]string{"--mode", "ok", "--share", "0.1"}, nil, "--n below zero: --share says so"},
	}
	for _, tc := range cases {
		var v vals
		_, err := testTable(&v).Parse(Request{Name: "t", FilePath: path, Getenv: envOf(tc.env), Args: tc.args})
		var e *Error
		if !errors.As(err, &e) || err.Error() != tc.want {
			t.Errorf("%q %v: error %v, want %q", tc.args, tc.env, err, tc.want)
		}
	}
}

// TestFileMistakes: each mistake in config.toml is a FileError naming the
// file and its line, found in one pass over the document.
func TestFileMistakes(t *testing.T) {
	t.Parallel()
	cases := []struct{ text, want string }{
		{"name = \"a\"\nname = \"b\"\n", ":2: toml: key \"name\" is already defined (line 1)"},
		{"name = \"a\"\nwait = \n", ":2: toml:"},
		{"name = \"a\"\n[t]\nx = 1\n", ":2: t: is a table"},
		{"t.x = 1\n", ":1: t: is a table"},
		{"t = {x = 1}\n", ":1: t: is a table"},
		{"name = 1979-05-27\n", ":1: name: a date is not a value"},
		{"n = 99999999999999999999\n", ":1: n: integer \"99999999999999999999\" is out of range"},
		{"list = [[\"a\"]]\n", ":1: list: array element: an array is not a value"},
		{"frob = 1\n", ":1: unknown key \"frob\""},
		{"once = true\n", ":1: \"once\" is not a setting"},
		{"\n\nAPI_KEY = \"sk\"\n", ":3: \"API_KEY\": the API key is not a setting"},
		{"wait = 5\n", ":1: wait: is an integer (\"5\"), want a duration"},
		{"n = 1.5\n", ":1: n: is a float (\"1.5\"), want a whole number"},
		{"list = \"a\"\n", ":1: list: takes an array of strings"},
		{"list = [\"a\", 2]\n", ":1: list: element 2 is an integer (\"2\"), want a string"},
		{"name = [\"a\"]\n", ":1: name: takes one value, not an array"},
		{"on = \"yes\"\n", ":1: on: takes true or false"},
		{"name = true\n", ":1: name: takes a value, not a boolean"},
		{"wait = \"5\"\n", ":1: wait: bad value \"5\": want a duration"},
	}
	for _, tc := range cases {
		path := write(t, tc.text)
		var v vals
		_, err := testTable(&v).Parse(Request{Name: "t", FilePath: path})
		var fe *FileError
		if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %s%s…", tc.text, err, path, tc.want)
		}
	}
}

// TestFileValues: TOML's number forms, signs, infinities and NaN are read
// as TOML says; a key of another command's setting is kept, not refused;
// the environment's setting ignores the file's.
func TestFileValues(t *testing.T) {
	t.Parallel()
	path := write(t, "n = 1_000\nshare = -inf\nonly = true\non = true\nname = \"a\\tb\"\n")
	var v vals
	if _, err := testTable(&v).For("exec").Parse(Request{Command: "exec", Name: "t", FilePath: path}); err != nil {
		t.Fatal(err)
	}
	if v.n != 1000 || !math.IsInf(v.share, -1) || !v.only || !v.on || v.name != "a\tb" {
		t.Errorf("values %+v", v)
	}
	// A byte-order mark at the start is no part of the document, and
	// lines are counted as before.
	path = write(t, "\ufeffn = 2\nname = 7\n")
	v = vals{}
	if _, err := testTable(&v).Parse(Request{Name: "t", FilePath: path}); err == nil || !strings.Contains(err.Error(), ":2: name:") {
		t.Errorf("after a BOM: %v %+v", err, v)
	}
	path = write(t, "\ufeffn = 2\n")
	v = vals{}
	if _, err := testTable(&v).Parse(Request{Name: "t", FilePath: path}); err != nil || v.n != 2 {
		t.Errorf("after a BOM: %v %+v", err, v)
	}
	path = write(t, "share = nan\nname = 7\n")
	v = vals{}
	_, err := testTable(&v).Parse(Request{Name: "t", FilePath: path, Getenv: envOf(map[string]string{"T_NAME": "env"})})
	if err != nil || !math.IsNaN(v.share) || v.name != "env" {
		t.Errorf("nan and an environment's name: %v %+v", err, v)
	}
}

// TestChecksRunInTableOrderAfterEveryValue: a check sees every value (the
// command line's included) and the checks run in the table's order; a
// positional error comes before any check.
func TestChecksRunInTableOrderAfterEveryValue(t *testing.T) {
	t.Parallel()
	var v vals
	if _, err := testTable(&v).Parse(Request{Name: "t", Args: []string{"--n", "4"}}); err != nil || !slices.Equal(v.checked, []string{"mode", "n"}) || v.n != 4 {
		t.Errorf("checked %q, n %d, err %v", v.checked, v.n, err)
	}
	v = vals{}
	stray := errors.New("takes no words")
	_, err := testTable(&v).Parse(Request{Name: "t", Args: []string{"--mode", "bad", "word"}, Positional: func(rest []string) error {
		if len(rest) > 0 {
			return stray
		}
		return nil
	}})
	if !errors.Is(err, stray) || len(v.checked) != 0 {
		t.Errorf("positional: err %v, checked %q", err, v.checked)
	}
}

// TestHelpAndFlagErrors: --help is a HelpError with the header, every flag
// and the footer; a flag error is a sentence with the fix.
func TestHelpAndFlagErrors(t *testing.T) {
	t.Parallel()
	var v vals
	_, err := testTable(&v).Parse(Request{Name: "t", Header: "Usage: t\n", Footer: "footer\n", Args: []string{"--help"}})
	var h *HelpError
	if !errors.As(err, &h) || !strings.HasPrefix(h.Text, "Usage: t\n") || !strings.Contains(h.Text, "\n  --name NAME\n") || !strings.HasSuffix(h.Text, "footer\n") || strings.Contains(h.Text, "--only") {
		t.Errorf("help: %v %q", err, h)
	}
	_, err = testTable(&v).Parse(Request{Name: "t", Args: []string{"--wayt", "1s"}})
	if err == nil || err.Error() != "there is no flag --wayt; did you mean --wait?" {
		t.Errorf("typo: %v", err)
	}
	_, err = testTable(&v).Parse(Request{Name: "t", Args: []string{"--wait", "2d"}})
	if err == nil || !strings.Contains(err.Error(), "Go has no d") {
		t.Errorf("days: %v", err)
	}
}
