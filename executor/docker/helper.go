package docker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// checkHelper makes sure the helper binary can run in any image: a Linux
// executable with no dynamic loader (a dynamically linked one needs the
// host's C library, which the image need not have).
func checkHelper(path string) error {
	f, err := os.Open(path)
	if err == nil {
		defer f.Close()
		var dynamic bool
		if dynamic, err = elfInterp(f); err == nil && dynamic {
			return fmt.Errorf("docker: helper %s is dynamically linked, and an image need not hold its C library: give --docker-helper a static build (CGO_ENABLED=0 go build -o PATH ./cmd/dsh-acp)", path)
		}
	}
	if err != nil {
		return fmt.Errorf("docker: helper %s is not a Linux executable (give --docker-helper a static Linux build: CGO_ENABLED=0 GOOS=linux go build ./cmd/dsh-acp): %w", path, err)
	}
	return nil
}

// elfInterp reports whether an ELF file names a program interpreter (the
// dynamic loader: a PT_INTERP program header). Read here from the header
// and the program headers rather than with debug/elf, which links
// debug/dwarf, whose tables are built at initialisation in every process
// of the binary.
func elfInterp(r io.ReaderAt) (bool, error) {
	var h [64]byte
	if _, err := r.ReadAt(h[:52], 0); err != nil {
		return false, errors.New("too short for an ELF file")
	}
	if string(h[:4]) != "\x7fELF" {
		return false, errors.New("not an ELF file")
	}
	var bo binary.ByteOrder
	switch h[5] {
	case 1:
		bo = binary.LittleEndian
	case 2:
		bo = binary.BigEndian
	default:
		return false, fmt.Errorf("unknown ELF data encoding %d", h[5])
	}
	var phoff uint64
	var phentsize, phnum uint16
	switch h[4] {
	case 1: // 32-bit
		phoff = uint64(bo.Uint32(h[28:]))
		phentsize, phnum = bo.Uint16(h[42:]), bo.Uint16(h[44:])
	case 2: // 64-bit
		if _, err := r.ReadAt(h[:], 0); err != nil {
			return false, errors.New("too short for an ELF file")
		}
		phoff = bo.Uint64(h[32:])
		phentsize, phnum = bo.Uint16(h[54:]), bo.Uint16(h[56:])
	default:
		return false, fmt.Errorf("unknown ELF class %d", h[4])
	}
	if phnum > 0 && phentsize < 4 {
		return false, errors.New("malformed ELF program headers")
	}
	const ptInterp = 3
	var typ [4]byte
	for i := range uint64(phnum) {
		off := phoff + i*uint64(phentsize)
		if off > 1<<40 {
			return false, errors.New("malformed ELF program headers")
		}
		if _, err := r.ReadAt(typ[:], int64(off)); err != nil {
			return false, fmt.Errorf("ELF program header %d: %w", i, err)
		}
		if bo.Uint32(typ[:]) == ptInterp {
			return true, nil
		}
	}
	return false, nil
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
