package executor

// Resolve is resolve, for the tests of how a spec's workdir and timeout are
// filled.
func (l *Local) Resolve(spec Spec) (Spec, error) { return l.resolve(spec) }
