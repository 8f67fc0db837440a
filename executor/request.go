package executor

// StartRequest is one command for a helper process to start: the sandbox's
// zygote and the container helper both take it, JSON-encoded (in a memfd,
// in a tether frame). An agent only ever talks to a helper of its own build
// (the zygote is its own binary re-executed, the container helper is that
// binary copied in), so the encoding carries no version.
type StartRequest struct {
	// Command is run as `bash -c Command`.
	Command string `json:"command"`
	// Dir is the directory it starts in; empty means the helper's default
	// (the zygote's policy's Workdir).
	Dir string `json:"dir,omitempty"`
	// Env is its whole environment.
	Env []string `json:"env"`
}
