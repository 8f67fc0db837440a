package transcript_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/tools/txtar"
)

// scenario is one parsed testdata/transcripts/*.txtar file.
//
//	comment        what the scenario shows (the txtar comment)
//	flags          extra dsh-acp flags, one per line (optional)
//	script.jsonl   the model turns, given to --script
//	restart.jsonl  the model turns after a restart step (optional)
//	models         GET /v1/models's answer from a local endpoint, or 404
//	               (optional; the binary gets --base-url pointing at it)
//	steps          what the client does, one JSON object per line
//	files/<path>   files created under $TMP before the binary starts
//	editor/<path>  buffers the client serves for fs/read_text_file ($TMP/<path>)
//
// "$TMP" in flags, script.jsonl, steps and files is replaced by the
// scenario's temporary root before anything runs.
type scenario struct {
	name    string
	comment string
	flags   []string
	script  []byte
	// restartScript is the script the binary gets after a restart step
	// (a new process starts every tag's cursor again); nil means script.
	restartScript []byte
	steps         []step
	// models is what a local endpoint answers to GET /v1/models ("404" for
	// no such route); nil means no endpoint (no --base-url).
	models []byte
	files  map[string][]byte
	// editor holds the client's open buffers, by path under $TMP: what it
	// answers to fs/read_text_file (any other path is an error).
	editor map[string][]byte
	// dockerHost, when set, runs the binary's commands in containers of
	// the engine at that address (TestFileToolsRemoteEngine).
	dockerHost string
}

// step is one line of the steps file; which fields apply depends on Op
// (see README.md).
type step struct {
	Op string `json:"op"`
	// line is the steps file line, for messages.
	line int

	As      string `json:"as,omitempty"`
	Session string `json:"session,omitempty"`
	Cwd     string `json:"cwd,omitempty"`
	Mode    string `json:"mode,omitempty"`
	Text    string `json:"text,omitempty"`
	// Blocks, when set, is a prompt's content blocks instead of Text.
	Blocks  json.RawMessage `json:"blocks,omitempty"`
	ID      string          `json:"id,omitempty"`
	Wait    *bool           `json:"wait,omitempty"`
	Match   json.RawMessage `json:"match,omitempty"`
	Answer  string          `json:"answer,omitempty"`
	Line    string          `json:"line,omitempty"`
	ReplyID json.RawMessage `json:"reply_id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Code    *int            `json:"code,omitempty"`
	Path    string          `json:"path,omitempty"`
	Content *string         `json:"content,omitempty"`
	// Mark names processes by a word in their command lines (await_procs,
	// expect_gone); Count is how many await_procs waits for (0 means 1).
	Mark   string `json:"mark,omitempty"`
	Count  int    `json:"count,omitempty"`
	Equals string `json:"equals_cmd,omitempty"`
	// Values is what an accepted elicitation's form holds (elicit).
	Values json.RawMessage `json:"values,omitempty"`
	// MCPServers is new_session's mcpServers list; absent means [].
	MCPServers json.RawMessage `json:"mcp_servers,omitempty"`
	// Roots are new_session's and fork's additionalDirectories, made
	// like the cwd; absent means none sent.
	Roots []string `json:"roots,omitempty"`
}

func (s step) String() string {
	b, _ := json.Marshal(s)
	return fmt.Sprintf("steps:%d %s", s.line, b)
}

// tmpRef matches the $TMP placeholder but not $TMPDIR.
var tmpRef = regexp.MustCompile(`\$TMP\b`)

func expandTmp(b []byte, root string) []byte {
	return tmpRef.ReplaceAllLiteral(b, []byte(root))
}

// parseScenario reads a txtar scenario, with $TMP expanded to root.
func parseScenario(name string, data []byte, root string) (*scenario, error) {
	ar := txtar.Parse(data)
	sc := &scenario{name: name, comment: strings.TrimSpace(string(ar.Comment)), files: map[string][]byte{}}
	seen := map[string]bool{}
	for _, f := range ar.Files {
		if seen[f.Name] {
			return nil, fmt.Errorf("%s: file %q appears twice", name, f.Name)
		}
		seen[f.Name] = true
		body := expandTmp(f.Data, root)
		switch {
		case f.Name == "flags":
			for _, l := range strings.Split(string(body), "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					sc.flags = append(sc.flags, l)
				}
			}
		case f.Name == "script.jsonl":
			sc.script = body
		case f.Name == "models":
			sc.models = bytes.TrimSpace(body)
		case f.Name == "restart.jsonl":
			sc.restartScript = body
		case f.Name == "steps":
			steps, err := parseSteps(body)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			sc.steps = steps
		case strings.HasPrefix(f.Name, "files/"):
			sc.files[strings.TrimPrefix(f.Name, "files/")] = body
		case strings.HasPrefix(f.Name, "editor/"):
			if sc.editor == nil {
				sc.editor = map[string][]byte{}
			}
			sc.editor[strings.TrimPrefix(f.Name, "editor/")] = body
		default:
			return nil, fmt.Errorf("%s: unknown section %q (want flags, script.jsonl, steps, files/…, editor/…)", name, f.Name)
		}
	}
	if sc.script == nil || sc.steps == nil {
		return nil, fmt.Errorf("%s: needs both script.jsonl and steps", name)
	}
	// A mark no command carries would make expect_gone hold vacuously.
	for _, s := range sc.steps {
		if s.Op != "await_procs" && s.Op != "expect_gone" {
			continue
		}
		if s.Mark == "" {
			return nil, fmt.Errorf("%s: %v needs a mark", name, s)
		}
		if !hasWord(string(sc.script), s.Mark) && !hasWord(string(sc.restartScript), s.Mark) {
			return nil, fmt.Errorf("%s: %v: no command of the script carries the mark", name, s)
		}
	}
	return sc, nil
}

var knownOps = map[string]bool{
	"initialize": true, "new_session": true, "fork": true, "set_mode": true, "prompt": true, "wait": true,
	"cancel": true, "close_session": true, "await_update": true, "permission": true, "raw": true,
	"request": true, "close_stdin": true, "expect_exit": true, "write_file": true, "wait_file": true,
	"expect_no_file": true, "await_procs": true, "expect_gone": true, "check_spill": true, "restart": true, "tear": true, "wait_log": true,
	"elicit": true,
}

func parseSteps(b []byte) ([]step, error) {
	var steps []step
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := bytes.TrimSpace(sc.Bytes())
		if len(l) == 0 || l[0] == '#' || bytes.HasPrefix(l, []byte("//")) {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.DisallowUnknownFields()
		var s step
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("steps:%d: %w", n, err)
		}
		if !knownOps[s.Op] {
			return nil, fmt.Errorf("steps:%d: unknown op %q", n, s.Op)
		}
		s.line = n
		steps = append(steps, s)
	}
	return steps, sc.Err()
}
