package docker

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// checkHelper makes sure the helper binary can run in any image: a Linux
// executable with no dynamic loader (a dynamically linked one needs the
// host's C library, which the image need not have).
func checkHelper(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("docker: helper %s is not a Linux executable (give --docker-helper a static Linux build: CGO_ENABLED=0 GOOS=linux go build ./cmd/dsh-acp): %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("docker: helper %s is dynamically linked, and an image need not hold its C library: give --docker-helper a static build (CGO_ENABLED=0 go build -o PATH ./cmd/dsh-acp)", path)
		}
	}
	return nil
}

// LocateHelper finds the helper to put into containers when none was
// given: this binary if it is a static Linux executable, else a
// "dsh-acp-helper" beside it. The error says what to do.
func LocateHelper() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("docker: locate the helper: %w", err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return "", fmt.Errorf("docker: locate the helper: %w", err)
	}
	selfErr := checkHelper(self)
	if selfErr == nil {
		return self, nil
	}
	beside := filepath.Join(filepath.Dir(self), "dsh-acp-helper")
	if _, err := os.Stat(beside); err == nil {
		return beside, checkHelper(beside)
	}
	return "", errors.Join(selfErr, fmt.Errorf("docker: and there is no static %s", beside))
}
