package proctab

import (
	"bytes"
	"errors"
	"os"
	"strconv"
)

func list() ([]Proc, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]Proc, 0, len(names))
	buf := make([]byte, 512)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, ok := stat(pid, buf); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// stat parses /proc/pid/stat: "pid (comm) state ppid pgrp session …".
func stat(pid int, buf []byte) (Proc, bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, false
	}
	n, err := f.Read(buf)
	_ = f.Close()
	if err != nil || n == 0 {
		return Proc{}, false
	}
	fs := statFields(buf[:n])
	if len(fs) < 4 || len(fs[0]) != 1 {
		return Proc{}, false
	}
	pgid, err1 := strconv.Atoi(string(fs[2]))
	sid, err2 := strconv.Atoi(string(fs[3]))
	if err1 != nil || err2 != nil {
		return Proc{}, false
	}
	st := fs[0][0]
	return Proc{Pid: pid, Pgid: pgid, Sid: sid, Zombie: st == 'Z' || st == 'X'}, true
}

// StartTime is field 22 of /proc/pid/stat: clock ticks after boot.
func StartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	fs := statFields(b)
	if len(fs) < 20 {
		return 0, errors.New("malformed /proc stat")
	}
	return strconv.ParseUint(string(fs[19]), 10, 64)
}

// statFields are the fields of a /proc/pid/stat line from field 3 (the
// state) on: the command name before them may hold anything, ')'
// included, so they start after the last one. Nil when there is none.
func statFields(b []byte) [][]byte {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return bytes.Fields(b[i+1:])
}

// Lookup returns pid's entry of the table; ok is false when there is none.
func Lookup(pid int) (p Proc, ok bool) {
	return stat(pid, make([]byte, 512))
}
