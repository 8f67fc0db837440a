package docker

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// craftELF is an ELF header and program headers of the given types.
func craftELF(class elf.Class, bo binary.ByteOrder, types ...elf.ProgType) []byte {
	var b bytes.Buffer
	ident := [16]byte{0x7f, 'E', 'L', 'F', byte(class), 1, 1}
	if bo == binary.BigEndian {
		ident[5] = 2
	}
	if class == elf.ELFCLASS64 {
		_ = binary.Write(&b, bo, elf.Header64{Ident: ident, Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: 1, Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: uint16(len(types))})
		for _, t := range types {
			_ = binary.Write(&b, bo, elf.Prog64{Type: uint32(t)})
		}
	} else {
		_ = binary.Write(&b, bo, elf.Header32{Ident: ident, Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_ARM), Version: 1, Phoff: 52, Ehsize: 52, Phentsize: 32, Phnum: uint16(len(types))})
		for _, t := range types {
			_ = binary.Write(&b, bo, elf.Prog32{Type: uint32(t)})
		}
	}
	return b.Bytes()
}

// TestElfInterp: the helper's check reads the program headers as
// debug/elf does, on crafted files of both classes and byte orders and on
// this system's own executables.
func TestElfInterp(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		"static64le":  craftELF(elf.ELFCLASS64, binary.LittleEndian, elf.PT_LOAD, elf.PT_NOTE),
		"dynamic64le": craftELF(elf.ELFCLASS64, binary.LittleEndian, elf.PT_PHDR, elf.PT_INTERP, elf.PT_LOAD),
		"static32be":  craftELF(elf.ELFCLASS32, binary.BigEndian, elf.PT_LOAD),
		"dynamic32be": craftELF(elf.ELFCLASS32, binary.BigEndian, elf.PT_LOAD, elf.PT_INTERP),
		"script":      []byte("#!/bin/sh\necho not a binary, but long enough to hold an ELF header's worth of bytes\n"),
		"short":       []byte("\x7fELF"),
	}
	var paths []string
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	for _, p := range []string{"/bin/sh", "/bin/bash", "/usr/bin/env"} {
		if _, err := os.Stat(p); err == nil {
			paths = append(paths, p)
		}
	}
	if self, err := os.Executable(); err == nil {
		paths = append(paths, self)
	}
	dynamic := 0
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		got, gotErr := elfInterp(f)
		f.Close()
		want, wantErr := false, error(nil)
		if ef, err := elf.Open(p); err != nil {
			wantErr = err
		} else {
			want = slices.ContainsFunc(ef.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
			ef.Close()
		}
		if (gotErr != nil) != (wantErr != nil) || got != want {
			t.Errorf("%s: interpreter %v (%v), debug/elf says %v (%v)", p, got, gotErr, want, wantErr)
		}
		if got {
			dynamic++
		}
		err = checkHelper(p)
		switch {
		case gotErr != nil && (err == nil || !strings.Contains(err.Error(), "is not a Linux executable")),
			got && (err == nil || !strings.Contains(err.Error(), "is dynamically linked")),
			gotErr == nil && !got && err != nil:
			t.Errorf("checkHelper(%s): %v", p, err)
		}
	}
	if dynamic < 2 {
		t.Errorf("only %d dynamically linked files among %q", dynamic, paths)
	}
}
