package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// maxPolicy bounds the encoded policy: it is written into a pipe before the
// helper starts, so it must fit the pipe's buffer.
const maxPolicy = 60 << 10

// wirePolicy is what goes over the policy pipe.
type wirePolicy struct {
	Policy
	// Namespaces asks the helper for user, PID and mount namespaces (and a
	// network namespace unless Policy.Network).
	Namespaces bool
	// NetNS: a network namespace is available.
	NetNS bool
}

// policyPipe returns the read end of a pipe that holds w and is closed for
// writing.
func policyPipe(w wirePolicy) (*os.File, error) {
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode policy: %w", err)
	}
	if len(b) > maxPolicy {
		return nil, fmt.Errorf("policy too large: %d bytes", len(b))
	}
	r, wr, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("policy pipe: %w", err)
	}
	_, err = wr.Write(b)
	if cerr := wr.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("write policy: %w", err)
	}
	return r, nil
}

// readPolicy reads and closes the policy pipe at fd.
func readPolicy(fd uintptr) (wirePolicy, error) {
	var w wirePolicy
	f := os.NewFile(fd, "policy")
	if f == nil {
		return w, errors.New("no policy descriptor")
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return w, fmt.Errorf("read policy: %w", err)
	}
	return w, w.check()
}
