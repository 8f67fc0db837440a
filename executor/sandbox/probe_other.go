//go:build !linux && !darwin

package sandbox

import "go.uber.org/zap"

// Probe reports that nothing can confine commands on this platform.
func Probe(logger *zap.Logger) Availability {
	if logger != nil {
		logger.Info("sandbox probe: no sandbox on this platform")
	}
	return Availability{}
}
