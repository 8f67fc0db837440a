//go:build !linux && !darwin

package agentdir

import "errors"

func startTime(int) (uint64, error) { return 0, errors.New("no process start time on this platform") }
