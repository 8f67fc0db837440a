package testutil

import (
	"os"
	"sync"
	"sync/atomic"
	"testing"
)

// maxSwaps bounds a Swapper's loop, should its Stop never come.
const maxSwaps = 1 << 22

// Swapper is the attack of a command that keeps renaming a link over a
// file the agent reads: it makes a link to a target and renames it over
// the path, then a plain file, and again. rename(2) is atomic, so at every
// instant the path is one or the other.
type Swapper struct {
	quit  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
	swaps atomic.Int64
}

// SwapLink starts the attack on path with a link to target and a plain
// file holding plain. It is stopped at t's cleanup at the latest.
func SwapLink(t testing.TB, path, target string, plain []byte) *Swapper {
	t.Helper()
	link, file := path+".swap-link", path+".swap-file"
	return swap(t, func() bool {
		swapped := os.Symlink(target, link) == nil && os.Rename(link, path) == nil
		if os.WriteFile(file, plain, 0o600) == nil {
			_ = os.Rename(file, path)
		}
		return swapped
	})
}

// SwapDirLink is SwapLink for the directory at path: the directory and a
// link to target trade places (exchange is atomic where the system has
// one, renameat2's RENAME_EXCHANGE on Linux), again and again.
func SwapDirLink(t testing.TB, path, target string) *Swapper {
	t.Helper()
	link := path + ".swap-link"
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	in := false
	return swap(t, func() bool {
		if exchange(link, path) != nil {
			return false
		}
		in = !in
		return in
	})
}

func swap(t testing.TB, once func() bool) *Swapper {
	s := &Swapper{quit: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for s.swaps.Load() < maxSwaps {
			select {
			case <-s.quit:
				return
			default:
			}
			if once() {
				s.swaps.Add(1)
			}
		}
	}()
	t.Cleanup(func() { s.Stop() })
	return s
}

// Swaps is how many links were swapped in so far.
func (s *Swapper) Swaps() int64 { return s.swaps.Load() }

// Stop ends the attack, waits for its loop to end and returns Swaps.
func (s *Swapper) Stop() int64 {
	s.once.Do(func() { close(s.quit); s.wg.Wait() })
	return s.swaps.Load()
}
