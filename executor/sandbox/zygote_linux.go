package sandbox

// A zygote is one helper process per session policy that forks every
// confined command of that session, so a command costs a fork and an exec
// of bash, not a re-execution of the agent's binary as well:
//
//	agent ─ zygote: Landlock on its spawning thread; with namespaces, pid 1
//	  │       of new user, PID, mount (and network) namespaces, /proc mounted
//	  │       for them, the denied paths inside writable trees hidden
//	  │       ├ bash -c CMD   (its own session and process group)
//	  │       └ bash -c CMD2
//	  └ (the agent signals each command's group directly: host pids)
//
// The agent and the zygote talk over a SOCK_SEQPACKET pair that no command
// inherits. A start request carries the command's stdout, stderr and a
// memfd holding its text and environment; the zygote answers with the
// shell's pid — in the agent's PID namespace, translated by the kernel
// through SCM_CREDENTIALS — and later with its wait status. The policy
// came once, at the zygote's start, over its own pipe: nothing a command
// can write reaches it.
//
// When the agent is gone, however it ended, the socket reaches EOF and the
// zygote exits; as pid 1 its end takes every process of the namespace
// along, setsid daemons included. A command's processes that outlive its
// shell (found by a marker in their environment) are killed when the shell
// is reaped.
//
// This file holds what both sides share: the descriptors and the messages.
// The agent's side, the client, is Zygote (zygote_client_linux.go); the
// helper's side, the server, is zygoteServer (zygote_server_linux.go).

// The zygote's descriptors: its policy, and its socket to the agent.
const (
	policyFD = 3
	sockFD   = 4
)

// zygoteMsg is one message either way. Requests: Start (with three
// descriptors). Replies: Pid (started; in NS mode the credentials carry the
// pid as the agent sees it), Err (did not start), Status (ended), Fatal
// (the zygote could not set up and exits).
type zygoteMsg struct {
	ID     uint64 `json:"id,omitempty"`
	Start  bool   `json:"start,omitempty"`
	Pid    int    `json:"pid,omitempty"`
	NS     bool   `json:"ns,omitempty"`
	Err    string `json:"err,omitempty"`
	Exited bool   `json:"exited,omitempty"`
	Status uint32 `json:"status,omitempty"`
	Fatal  string `json:"fatal,omitempty"`
}

// maxMsg bounds one socket message (payloads travel in a memfd).
const maxMsg = 4 << 10
