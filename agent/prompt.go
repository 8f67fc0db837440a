package agent

import (
	_ "embed"
	"fmt"
	"strings"
	"time"
)

// promptText is the system prompt, kept as data: what the model is told is
// read in one place, and a golden file pins it whole. Its two slots are
// filled by SystemPrompt. (Plain replacement rather than text/template: the
// template package's reflection keeps every exported method in the binary,
// 1.8 MB more.)
//
//go:embed prompt.md
var promptText string

// Slots of promptText.
const (
	slotEnvironment  = "{{environment}}"
	slotInstructions = "{{instructions}}"
	slotFiles        = "{{files}}"
)

// filesThroughBash is how to change files when bash is the only tool.
//
//go:embed prompt-files-bash.md
var filesThroughBash string

// filesThroughTools is how to change files with the file tools.
//
//go:embed prompt-files-tools.md
var filesThroughTools string

// instructionsHead opens the project instructions in the system prompt.
const instructionsHead = "\n# Project instructions\n" +
	"The user and the project give these instructions (AGENTS.md files), from the most general to the most specific. " +
	"Follow them; where two disagree, the later, more specific one wins. " +
	"They come before the defaults above, but not before what the user asks in the conversation."

// PromptEnv is what the system prompt says of where the model works.
type PromptEnv struct {
	// Now gives the date.
	Now time.Time
	// OS names the operating system; empty omits it.
	OS string
	// Cwd is the session's working directory; empty omits it.
	Cwd string
	// Roots are the session's other project roots; none omits their line.
	Roots []string
	// Project is the repository and the instruction files read for Cwd.
	Project InstructionSet
	// FileTools: the model has the file tools (read, edit, …), and is told
	// to change files with them rather than through bash.
	FileTools bool
}

// SystemPrompt tells the model who it is, where it works, how to change
// files and work through bash, and the project's instructions. The tools'
// own descriptions carry their detailed rules; this repeats only what
// shapes the whole turn.
func SystemPrompt(env PromptEnv) string {
	s := strings.Replace(promptText, slotEnvironment, environment(env), 1)
	s = strings.Replace(s, slotInstructions, instructions(env.Project), 1)
	files := filesThroughBash
	if env.FileTools {
		files = filesThroughTools
	}
	s = strings.Replace(s, slotFiles, strings.TrimRight(files, "\n"), 1)
	return strings.TrimRight(s, "\n") + "\n"
}

// environment is the Environment section's list.
func environment(env PromptEnv) string {
	lines := []string{"- Date: " + env.Now.Format("2006-01-02 (Monday)")}
	if env.OS != "" {
		lines = append(lines, "- Operating system: "+env.OS)
	}
	lines = append(lines, "- Shell: bash; each bash call runs `bash -c` in a fresh shell, with no terminal and stdin from /dev/null")
	if env.Cwd != "" {
		lines = append(lines, "- Working directory: "+env.Cwd+" (every bash call runs there unless you pass another workdir)")
	}
	if len(env.Roots) > 0 {
		lines = append(lines, "- Other project roots: "+strings.Join(env.Roots, ", ")+
			" (the user's project as much as the working directory: read and change files there too; relative paths and workdirs still start from the working directory, so name these by absolute path)")
	}
	p := env.Project
	switch {
	case p.Root == "":
		lines = append(lines, "- Not a git repository")
	case p.Branch != "":
		lines = append(lines, "- Git repository: "+p.Root+", on branch "+p.Branch)
	case p.Detached != "":
		lines = append(lines, "- Git repository: "+p.Root+", detached at "+p.Detached)
	default:
		lines = append(lines, "- Git repository: "+p.Root)
	}
	return strings.Join(lines, "\n")
}

// instructions is the project instructions section; empty without files.
func instructions(p InstructionSet) string {
	if len(p.Files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(instructionsHead)
	for _, f := range p.Files {
		fmt.Fprintf(&b, "\n\n<instructions path=%q>\n%s\n</instructions>", f.Path, strings.TrimRight(f.Text, "\n"))
		if f.Truncated {
			fmt.Fprintf(&b, "\n[This file is longer than %d KiB: only its beginning is shown. Read the rest of it with bash if it matters.]", MaxInstructions>>10)
		}
	}
	if len(p.Cut) > 0 {
		fmt.Fprintf(&b, "\n\n[Left out to keep the instructions within %d KiB: %s. Read them with bash if they matter.]", MaxInstructions>>10, strings.Join(p.Cut, ", "))
	}
	return b.String()
}
