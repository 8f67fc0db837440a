package agent

// MaxInstructions bounds the project instructions put in the system prompt,
// in bytes, all files together: past it the farthest files are left out.
const MaxInstructions = 32 << 10

// InstructionFile is one instructions file as read.
type InstructionFile struct {
	Path string
	Text string
	// Truncated: only the beginning of the file is in Text (it alone was
	// over MaxInstructions).
	Truncated bool
}

// InstructionSet is what a session's model is told of its project: its
// instruction files from the most general to the most specific, and where
// the project is. The loop is given it (package instructions reads it): it
// reads no file system itself.
type InstructionSet struct {
	// Files are in the order the model reads them: the user's file, the
	// repository root's, …, the cwd's.
	Files []InstructionFile
	// Cut names the files left out to stay within MaxInstructions, farthest
	// first.
	Cut []string
	// Root is the repository root (the nearest directory holding .git);
	// empty when the cwd is in none.
	Root string
	// Branch is the checked-out branch of Root ("" for none or a detached
	// HEAD, then Detached holds the commit's short hash).
	Branch   string
	Detached string
}

// InstructionsRead is what the editor is shown of the instruction files
// read for a turn.
type InstructionsRead struct {
	// Paths are the files the model reads, most general first.
	Paths []string
	// Changed are those read again because they changed since the editor
	// was last shown them (empty the first time).
	Changed []string
	// Cut names the files left out (MaxInstructions).
	Cut []string
}
