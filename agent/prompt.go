package agent

import (
	_ "embed"
	"strings"
	"text/template"
	"time"
)

// promptTemplate is the system prompt, kept as data: what the model is
// told is read in one place, and a golden file pins it whole.
//
//go:embed prompt.tmpl
var promptTemplate string

var systemTemplate = template.Must(template.New("system").Funcs(template.FuncMap{
	"join": strings.Join,
	"trim": func(s string) string { return strings.TrimRight(s, "\n") },
}).Parse(promptTemplate))

// PromptEnv is what the system prompt says of where the model works.
type PromptEnv struct {
	// Now gives the date.
	Now time.Time
	// OS names the operating system; empty omits it.
	OS string
	// Cwd is the session's working directory; empty omits it.
	Cwd string
	// Project is the repository and the instruction files read for Cwd.
	Project InstructionSet
}

// SystemPrompt tells the model who it is, where it works, how to change
// files and work through bash, and the project's instructions. The tools'
// own descriptions carry their detailed rules; this repeats only what
// shapes the whole turn.
func SystemPrompt(env PromptEnv) string {
	var b strings.Builder
	data := struct {
		InstructionSet
		Date, OS, Cwd string
		MaxKiB        int
	}{env.Project, env.Now.Format("2006-01-02 (Monday)"), env.OS, env.Cwd, MaxInstructions >> 10}
	if err := systemTemplate.Execute(&b, data); err != nil {
		// The template is fixed and its data plain strings: a failure is a
		// bug in this file, caught by its tests.
		panic("system prompt: " + err.Error())
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
