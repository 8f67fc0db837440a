package main

import (
	"errors"
	"slices"
	"testing"
)

// The cleanup stack closes the last made first, skips what was handed
// over, reports every error, and runs each closer once.
func TestCleanupStack(t *testing.T) {
	t.Parallel()
	var order []string
	closer := func(name string, err error) func() error {
		return func() error { order = append(order, name); return err }
	}
	errB := errors.New("b failed")
	var c cleanup
	c.push(closer("log", nil), closer("watchdog", errB))
	c.push(closer("executor", nil), closer("tools", nil))
	if err := c.run(); !errors.Is(err, errB) {
		t.Errorf("run: %v, want the watchdog's error", err)
	}
	if want := []string{"tools", "executor", "watchdog", "log"}; !slices.Equal(order, want) {
		t.Errorf("closed %v, want %v", order, want)
	}
	if err := c.run(); err != nil || len(order) != 4 {
		t.Errorf("a second run closed again: %v %v", order, err)
	}
}
