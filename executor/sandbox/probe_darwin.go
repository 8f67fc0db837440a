package sandbox

import (
	"os"
	"strings"

	"go.uber.org/zap"
)

// seatbeltPath is macOS's sandbox-exec.
const seatbeltPath = "/usr/bin/sandbox-exec"

// Probe finds whether sandbox-exec is present and logs the result. Call it
// once at start. SimulateEnv "nolandlock" reports it missing, for tests.
func Probe(logger *zap.Logger) Availability {
	var a Availability
	if fi, err := os.Stat(seatbeltPath); err == nil && !fi.IsDir() {
		a.Seatbelt = true
	}
	if sim := os.Getenv(SimulateEnv); strings.Contains(sim, "nolandlock") {
		a.Seatbelt = false
		a.Simulated = sim
	}
	if logger != nil {
		logger.Info("sandbox probe", zap.Bool("seatbelt", a.Seatbelt), zap.String("simulated", a.Simulated))
	}
	return a
}
