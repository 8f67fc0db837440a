//go:build !linux

package main

import "os"

// flushInput is done on Linux only (TCFLSH); elsewhere a key typed ahead
// that the reader has not taken yet can still answer the next question.
func flushInput(*os.File) {}
