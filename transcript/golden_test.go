package transcript_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// Normalisation rules (README.md repeats them for people writing goldens):
//
//  1. The scenario's temporary root becomes $TMP.
//  2. The session's spill directory in the executor's private one
//     ($TMP/tmp/dsh-acp-spill-*/s-*) becomes $SPILL, and the random part of a spill file name becomes
//     "*": $SPILL/run-stdout-*.log.
//  3. Session ids (UUIDs) become $SESSION1, $SESSION2 … in order of first
//     appearance on the wire.
//  4. Ids of the agent's own requests (session/request_permission) become
//     $AGENT_REQ1 … in their order in the golden, in the request and in the
//     client's reply. The client's request ids are its own, deterministic
//     counter and are kept.
//  5. A string longer than longString bytes becomes
//     "$LONG{<bytes> bytes, sha256 <16 hex>}<head>…<tail>", hashed after
//     rules 1-3, so it is pinned exactly but stays readable.
//  6. Live-output updates are left out: a tool_call_update without a status
//     that carries content or _meta.terminal_output. Their number depends on
//     timing; checkLiveUpdates asserts that none follows a call's final
//     update. In Zed's terminal mode the updates carry increments, so their
//     data is merged and shown once, as "← live {toolCallId,
//     terminal_output}" just before the call's final update.
//  7. Model requests: the tool list is replaced by $TOOLS when it equals
//     model-tools.json (followed by ask_user and the session's MCP tools, mcp__…, shown
//     in full), and the system prompt by $SYSTEM_PROMPT(cwd=…) when
//     it equals system-prompt.txt with that cwd and today's date as $DATE
//     ($SYSTEM_PROMPT(cwd=…, git=…) in a repository, whose line is shown;
//     the project instructions are shown after it in full); a request repeating the
//     previous request of its tag says so instead of repeating the messages.
//
//  8. A session's updatedAt (session/list) becomes $TIME.
//
// Frames are grouped: the connection (initialize, session/new, frames
// naming no session) first, then each session in order of first
// appearance; within a group frames keep their order, and a response goes
// with its request. Sessions that run at once therefore cannot reorder the
// golden.

const longString = 2048

var (
	uuidRE      = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	spillDirRE  = regexp.MustCompile(`\$TMP/tmp/dsh-acp-spill-[^/"\s]+/s-[0-9]+`)
	spillFileRE = regexp.MustCompile(`(\$SPILL/[A-Za-z0-9_.-]+?)-[0-9]+\.log`)
	cwdRE       = regexp.MustCompile(`\n- Working directory: (.*?) \(every bash call`)
	// rootsRE is the other roots' line of the system prompt.
	rootsRE = regexp.MustCompile(`\n- Other project roots: (.*?) \(the user's project as much as the working directory[^\n]*\n`)
	// gitRE is the repository line of the system prompt.
	gitRE = regexp.MustCompile(`\n- Git repository: (.*)\n`)
	// dateRE is the day's date in the system prompt.
	dateRE = regexp.MustCompile(`\n- Date: [0-9]{4}-[0-9]{2}-[0-9]{2} \([A-Za-z]+\)\n`)
	// ageRE is a task's age in /tasks.
	ageRE = regexp.MustCompile(` · started [0-9hms.]+ ago · `)
)

type normaliser struct {
	root     string
	sessions map[string]string
	// ids labels the UUIDs that are not session ids, by the key they are
	// the value of ("messageId" → $MESSAGE1, …), numbered per session
	// (sessions run concurrently).
	ids map[string]string
	// counts numbers the labels: session label + prefix → last number.
	counts map[string]int
	// session is the label of the session of the frame being normalised.
	session string
}

// idLabels are the keys whose UUID values get labels of their own.
var idLabels = map[string]string{"messageId": "$MESSAGE", "toolCallId": "$CALL"}

// label replaces the UUIDs in s, the value of key, with labels of their
// kind, numbered in order of first appearance.
func (n *normaliser) label(key, s string) string {
	prefix := idLabels[key]
	return uuidRE.ReplaceAllStringFunc(s, func(id string) string {
		if v, ok := n.sessions[id]; ok {
			return v
		}
		if n.ids == nil {
			n.ids, n.counts = map[string]string{}, map[string]int{}
		}
		if v, ok := n.ids[id]; ok {
			return v
		}
		n.counts[n.session+prefix]++
		v := prefix + strconv.Itoa(n.counts[n.session+prefix])
		n.ids[id] = v
		return v
	})
}

func (n *normaliser) str(s string) string {
	s = strings.ReplaceAll(s, n.root, "$TMP")
	s = spillDirRE.ReplaceAllString(s, "$$SPILL")
	s = spillFileRE.ReplaceAllString(s, "$1-*.log")
	s = ageRE.ReplaceAllString(s, " · started $$AGE ago · ")
	s = uuidRE.ReplaceAllStringFunc(s, func(id string) string {
		if v, ok := n.sessions[id]; ok {
			return v
		}
		if v, ok := n.ids[id]; ok {
			return v
		}
		v := "$SESSION" + strconv.Itoa(len(n.sessions)+1)
		n.sessions[id] = v
		return v
	})
	return s
}

// value returns a normalised deep copy of v, walking object keys in sorted
// order so "first appearance" is deterministic.
func (n *normaliser) value(v any) any {
	switch x := v.(type) {
	case string:
		return n.str(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = n.value(x[i])
		}
		return out
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(x))
		for _, k := range keys {
			if _, ok := x[k].(string); ok && k == "updatedAt" {
				out[k] = "$TIME" // rule 8
				continue
			}
			if str, ok := x[k].(string); ok && idLabels[k] != "" {
				x[k] = n.label(k, str)
			}
			out[n.str(k)] = n.value(x[k])
		}
		// The agent's version is read from its build (module version or
		// VCS revision): only its presence is pinned.
		if _, ok := out["version"].(string); ok && out["name"] == "dsh-acp" {
			out["version"] = "$VERSION"
		}
		// An estimated usage depends on the length of $TMP (the system
		// prompt names the cwd): only its presence is pinned.
		if meta, _ := out["_meta"].(map[string]any); out["sessionUpdate"] == "usage_update" && meta["estimated"] == true {
			out["used"] = "$ESTIMATE"
		}
		return out
	}
	return v
}

// shorten applies rule 5.
func shorten(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) <= longString {
			return x
		}
		sum := sha256.Sum256([]byte(x))
		head := x[:runeCut(x, 200)]
		tail := x[runeCut(x, len(x)-600):]
		return fmt.Sprintf("$LONG{%d bytes, sha256 %s}%s…%s", len(x), hex.EncodeToString(sum[:8]), head, tail)
	case []any:
		for i := range x {
			x[i] = shorten(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = shorten(x[k])
		}
	}
	return v
}

// runeCut moves i back to the start of a rune.
func runeCut(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

func encode(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%q", fmt.Sprint(v))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// isLive reports a live-output update (rule 6).
func isLive(v any) bool {
	m, _ := v.(map[string]any)
	if m["method"] != "session/update" {
		return false
	}
	p, _ := m["params"].(map[string]any)
	u, _ := p["update"].(map[string]any)
	if u["sessionUpdate"] != "tool_call_update" {
		return false
	}
	if _, hasStatus := u["status"]; hasStatus {
		return false
	}
	if _, ok := u["content"]; ok {
		return true
	}
	meta, _ := u["_meta"].(map[string]any)
	_, ok := meta["terminal_output"]
	return ok
}

// checkLiveUpdates asserts what the golden cannot: every tool call that
// got a final update (completed or failed) got no live update after it.
func checkLiveUpdates(frames []frame) []error {
	final := map[string]bool{}
	var errs []error
	for _, f := range frames {
		if f.dir != fromAgent || !f.ok {
			continue
		}
		m, _ := f.val.(map[string]any)
		p, _ := m["params"].(map[string]any)
		u, _ := p["update"].(map[string]any)
		if m["method"] != "session/update" || u["sessionUpdate"] != "tool_call_update" {
			continue
		}
		key := fmt.Sprint(p["sessionId"], "/", u["toolCallId"])
		if isLive(f.val) && final[key] {
			errs = append(errs, fmt.Errorf("live update after the final update of %s: %s", key, f.line))
		}
		if st := u["status"]; st == "completed" || st == "failed" {
			final[key] = true
		}
	}
	return errs
}

// shared holds the model-visible texts every scenario shares, pinned once
// in testdata/transcripts: the tool list and the system prompt.
var shared struct {
	mu     sync.Mutex
	loaded bool
	tools  any    // decoded model-tools.json, nil if absent
	prompt string // system-prompt.txt
	// updated: written in this -update run already.
	toolsUpdated, promptUpdated bool
}

const (
	toolsFile  = "model-tools.json"
	promptFile = "system-prompt.txt"
)

func loadShared(dir string) {
	if shared.loaded {
		return
	}
	shared.loaded = true
	if b, err := os.ReadFile(filepath.Join(dir, toolsFile)); err == nil {
		shared.tools, _ = decodeJSON(b)
	}
	if b, err := os.ReadFile(filepath.Join(dir, promptFile)); err == nil {
		shared.prompt = string(b)
	}
}

// sharedTools reports whether tools equal the pinned list followed by
// extra, a session's MCP tools (named mcp__…), which it returns; in -update
// mode the first scenario pins the list without them.
func sharedTools(dir string, tools any, pin bool) (bool, []any, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	loadShared(dir)
	list, _ := tools.([]any)
	var extra []any
	for i, tl := range list {
		if m, ok := tl.(map[string]any); ok {
			if name, _ := m["name"].(string); strings.HasPrefix(name, "mcp__") || name == "ask_user" {
				tools, extra = list[:i], list[i:]
				break
			}
		}
	}
	if *update && pin && !shared.toolsUpdated {
		shared.toolsUpdated = true
		shared.tools = tools
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(tools); err != nil {
			return false, nil, err
		}
		return true, extra, os.WriteFile(filepath.Join(dir, toolsFile), b.Bytes(), 0o644)
	}
	return cmp.Equal(shared.tools, tools), extra, nil
}

// sharedPrompt reports whether prompt equals the pinned one, which it
// returns too.
func sharedPrompt(dir, prompt string, pin bool) (bool, string, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	loadShared(dir)
	if *update && pin && !shared.promptUpdated {
		shared.promptUpdated = true
		shared.prompt = prompt
		return true, prompt, os.WriteFile(filepath.Join(dir, promptFile), []byte(prompt), 0o644)
	}
	return shared.prompt == prompt, shared.prompt, nil
}

// pins reports whether a scenario's requests are compared with the shared
// texts (and pin them in -update mode): one run with --tools=bash offers
// other tools, and a prompt that says so, on purpose; its golden shows
// them in full.
func pins(sc *scenario) bool {
	return !slices.Contains(sc.flags, "--tools=bash")
}

// render builds the golden text of a scenario run.
func render(sc *scenario, root, dir string, frames []frame, records []byte) (string, []error) {
	n := &normaliser{root: root, sessions: map[string]string{}}
	var errs []error

	var items []gitem
	termOut := map[string]string{} // live terminal output so far, by session/toolCallId
	groupOrder := []string{"connection"}
	seenGroup := map[string]bool{"connection": true}
	clientReq := map[string]string{} // id → group of our requests
	agentReq := map[string]string{}  // id → group of the agent's requests
	for _, f := range frames {
		var v any = string(f.line)
		if f.ok {
			n.session = ""
			if m, ok := f.val.(map[string]any); ok {
				if p, ok := m["params"].(map[string]any); ok {
					if sid, ok := p["sessionId"].(string); ok {
						n.session = n.str(sid)
					}
				}
			}
			v = n.value(f.val)
		} else {
			v = n.str(string(f.line))
		}
		if f.ok && isLive(v) {
			if key, data, ok := terminalOutput(v); ok {
				termOut[key] += data
			}
			continue
		}
		m, _ := v.(map[string]any)
		if key, final := finalUpdate(v); final && termOut[key] != "" {
			// Rule 6: the terminal stream of the call, merged, just before
			// its final update.
			p, _ := m["params"].(map[string]any)
			sid, _ := p["sessionId"].(string)
			u, _ := p["update"].(map[string]any)
			items = append(items, gitem{dir: fromAgent, live: true, group: "session " + sid, v: map[string]any{
				"toolCallId": u["toolCallId"], "terminal_output": termOut[key],
			}})
			delete(termOut, key)
		}
		_, hasMethod := m["method"]
		idv, hasID := m["id"]
		id := fmt.Sprint(idv)
		group := "connection"
		if p, ok := m["params"].(map[string]any); ok {
			if s, ok := p["sessionId"].(string); ok && hasMethod {
				group = "session " + s
			}
		}
		switch {
		case f.raw || m == nil:
			group = "connection"
		case hasMethod && hasID && f.dir == toAgent:
			clientReq[id] = group
		case hasMethod && hasID && f.dir == fromAgent:
			agentReq[id] = group
		case !hasMethod && f.dir == fromAgent:
			if g, ok := clientReq[id]; ok && idv != nil {
				group = g
			}
		case !hasMethod && f.dir == toAgent:
			if g, ok := agentReq[id]; ok {
				group = g
			}
		}
		if !seenGroup[group] {
			seenGroup[group] = true
			groupOrder = append(groupOrder, group)
		}
		items = append(items, gitem{dir: f.dir, group: group, raw: f.raw, v: v})
	}
	byGroup := map[string][]gitem{}
	for _, it := range items {
		byGroup[it.group] = append(byGroup[it.group], it)
	}

	// Rule 4, in golden order.
	agentIDs := map[string]string{}
	var b strings.Builder
	fmt.Fprintf(&b, "# Golden transcript of %s.txtar — regenerate: go test ./transcript -run TestTranscript -update\n", sc.name)
	for _, g := range groupOrder {
		fmt.Fprintf(&b, "\n== %s\n", g)
		for _, it := range byGroup[g] {
			if m, ok := it.v.(map[string]any); ok && !it.raw {
				_, hasMethod := m["method"]
				if idv, ok := m["id"]; ok && idv != nil {
					id := fmt.Sprint(idv)
					_, isAgentReq := agentReq[id]
					if isAgentReq && ((hasMethod && it.dir == fromAgent) || (!hasMethod && it.dir == toAgent)) {
						if _, ok := agentIDs[id]; !ok {
							agentIDs[id] = "$AGENT_REQ" + strconv.Itoa(len(agentIDs)+1)
						}
						m["id"] = agentIDs[id]
					}
				}
			}
			prefix := it.dir
			if it.raw {
				prefix += " raw"
			}
			if it.live {
				prefix += " live"
			}
			fmt.Fprintf(&b, "%s %s\n", prefix, encode(shorten(it.v)))
		}
	}

	// Model requests, by tag.
	byTag := map[string][]map[string]any{}
	sc2 := bufio.NewScanner(bytes.NewReader(records))
	sc2.Buffer(nil, 64<<20)
	for sc2.Scan() {
		v, ok := decodeJSON(sc2.Bytes())
		if !ok {
			errs = append(errs, fmt.Errorf("model record is not JSON: %.200s", sc2.Bytes()))
			continue
		}
		rec, _ := n.value(v).(map[string]any)
		tag, _ := rec["tag"].(string)
		req, _ := rec["request"].(map[string]any)
		byTag[tag] = append(byTag[tag], req)
	}
	tags := make([]string, 0, len(byTag))
	for t := range byTag {
		tags = append(tags, t)
	}
	sort.Strings(tags)
	for _, tag := range tags {
		fmt.Fprintf(&b, "\n== model requests tagged %q\n", tag)
		var prev []any
		for i, req := range byTag[tag] {
			msgs, _ := req["messages"].([]any)
			for j, msg := range msgs {
				msgs[j] = systemPrompt(dir, msg, pins(sc), &errs)
			}
			var notes []string
			if tools, ok := req["tools"]; ok {
				same, extra, err := sharedTools(dir, tools, pins(sc))
				if err != nil {
					errs = append(errs, err)
				}
				switch {
				case same && len(extra) > 0:
					req["tools"] = "$TOOLS+mcp"
					notes = append(notes, "tools: $TOOLS then "+encode(extra))
				case same:
					req["tools"] = "$TOOLS"
					notes = append(notes, "tools: $TOOLS")
				default:
					if pins(sc) {
						errs = append(errs, fmt.Errorf("model request tagged %q #%d: tools differ from %s", tag, i+1, toolsFile))
					}
					notes = append(notes, "tools: "+encode(tools))
				}
			}
			start := 0
			if len(prev) > 0 && len(prev) <= len(msgs) && cmp.Equal(prev, msgs[:len(prev)]) {
				start = len(prev)
				notes = append(notes, fmt.Sprintf("messages 1-%d as in request %d", start, i))
			}
			// Sorted: a request carries more than one other field (model,
			// thinking), and a map's order is not the golden's.
			keys := make([]string, 0, len(req))
			for k := range req {
				if k != "messages" && k != "tools" {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				notes = append(notes, k+": "+encode(req[k]))
			}
			fmt.Fprintf(&b, "-- request %d (%s)\n", i+1, strings.Join(notes, "; "))
			for _, msg := range msgs[start:] {
				fmt.Fprintf(&b, "%s\n", encode(shorten(deepCopy(msg))))
			}
			prev = msgs
		}
	}
	return b.String(), errs
}

// gitem is a normalised frame with its group.
type gitem struct {
	dir, group string
	raw        bool
	// live marks the merged terminal output of a call (rule 6).
	live bool
	v    any
}

// terminalOutput returns the data of a live update in Zed's terminal
// mode, keyed by session and tool call.
func terminalOutput(v any) (key, data string, ok bool) {
	m, _ := v.(map[string]any)
	p, _ := m["params"].(map[string]any)
	u, _ := p["update"].(map[string]any)
	meta, _ := u["_meta"].(map[string]any)
	to, _ := meta["terminal_output"].(map[string]any)
	data, ok = to["data"].(string)
	return fmt.Sprint(p["sessionId"], "/", u["toolCallId"]), data, ok
}

// finalUpdate reports a tool_call_update that ends a call.
func finalUpdate(v any) (key string, ok bool) {
	m, _ := v.(map[string]any)
	p, _ := m["params"].(map[string]any)
	u, _ := p["update"].(map[string]any)
	if m["method"] != "session/update" || u["sessionUpdate"] != "tool_call_update" {
		return "", false
	}
	st := u["status"]
	return fmt.Sprint(p["sessionId"], "/", u["toolCallId"]), st == "completed" || st == "failed"
}

// instructionsStart opens the project instructions in the system prompt.
const instructionsStart = "\n# Project instructions\n"

// systemPrompt applies the system-prompt part of rule 7 to one message.
// summaryPromptStart opens the system prompt of a summary request.
const summaryPromptStart = "You write the summary that replaces the older part of a conversation"

func systemPrompt(dir string, msg any, pin bool, errs *[]error) any {
	m, ok := msg.(map[string]any)
	if !ok || m["role"] != "system" {
		return msg
	}
	content, _ := m["content"].(string)
	if strings.HasPrefix(content, summaryPromptStart) {
		// A compaction's summary request: pinned verbatim in the golden.
		return msg
	}
	sub := cwdRE.FindStringSubmatch(content)
	if sub == nil {
		*errs = append(*errs, fmt.Errorf("system prompt does not name the session cwd: %.200q", content))
		return msg
	}
	generic := strings.Replace(content, sub[0], "\n- Working directory: $CWD (every bash call", 1)
	generic = dateRE.ReplaceAllString(generic, "\n- Date: $$DATE\n")
	// A repository and project instructions are shown in the golden; the
	// rest must be the pinned prompt.
	args := "cwd=" + sub[1]
	if r := rootsRE.FindStringSubmatch(generic); r != nil {
		// Shown in the golden, the line's words pinned in agent's tests.
		args += ", roots=" + r[1]
		generic = strings.Replace(generic, r[0], "\n", 1)
	}
	if g := gitRE.FindStringSubmatch(generic); g != nil {
		args += ", git=" + g[1]
		generic = strings.Replace(generic, g[0], "\n- Not a git repository\n", 1)
	}
	generic, instructions, _ := strings.Cut(generic, instructionsStart)
	if instructions != "" {
		instructions = "\n" + instructionsStart + instructions
	}
	same, pinned, err := sharedPrompt(dir, generic, pin)
	if err != nil {
		*errs = append(*errs, err)
	}
	if !same {
		// A scenario that does not pin (pins) differs on purpose: its
		// golden shows the prompt in full.
		if pin {
			*errs = append(*errs, fmt.Errorf("system prompt differs from %s (-pinned +sent):\n%s", promptFile, cmp.Diff(pinned, generic)))
			return msg
		}
		out := map[string]any{}
		for k, v := range m {
			out[k] = v
		}
		out["content"] = "$SYSTEM_PROMPT(" + args + ") = " + generic + instructions
		return out
	}
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	out["content"] = "$SYSTEM_PROMPT(" + args + ")" + instructions
	return out
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = deepCopy(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	}
	return v
}

// goldenLine is one line of a golden file: a marker ("→", "← raw", …,
// or the whole line when it holds no JSON) and its decoded JSON.
type goldenLine struct {
	Marker string
	JSON   any
}

func parseGolden(s string) []goldenLine {
	var out []goldenLine
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		marker, rest := "", l
		for _, p := range []string{toAgent + " raw ", fromAgent + " live ", toAgent + " ", fromAgent + " "} {
			if strings.HasPrefix(l, p) {
				marker, rest = strings.TrimSpace(p), l[len(p):]
				break
			}
		}
		if v, ok := decodeJSON([]byte(rest)); ok && (marker != "" || strings.HasPrefix(rest, "{")) {
			out = append(out, goldenLine{Marker: marker, JSON: v})
			continue
		}
		out = append(out, goldenLine{Marker: l})
	}
	return out
}

// compareGolden compares decoded golden lines and describes the first
// difference, then the whole diff.
func compareGolden(want, got string) string {
	w, g := parseGolden(want), parseGolden(got)
	if cmp.Equal(w, g) {
		return ""
	}
	var b strings.Builder
	wl := strings.Split(strings.TrimRight(want, "\n"), "\n")
	gl := strings.Split(strings.TrimRight(got, "\n"), "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		switch {
		case i >= len(w):
			fmt.Fprintf(&b, "first difference at line %d: the run has more lines:\n+ %s\n", i+1, gl[i])
		case i >= len(g):
			fmt.Fprintf(&b, "first difference at line %d: the run ends early; the golden goes on:\n- %s\n", i+1, wl[i])
		case !cmp.Equal(w[i], g[i]):
			fmt.Fprintf(&b, "first difference at line %d:\n- %s\n+ %s\n(-golden +run, decoded):\n%s", i+1, wl[i], gl[i], cmp.Diff(w[i], g[i]))
		default:
			continue
		}
		break
	}
	fmt.Fprintf(&b, "\nwhole transcript (-golden +run):\n%s", cmp.Diff(w, g))
	return b.String()
}
