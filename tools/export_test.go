package tools

// Needed (for tests only) reports whether the call must be approved before
// it runs.
func (s Subject) Needed() bool { return s.Kind != NoApproval }
