//go:build !linux

package changes

import "errors"

// Without inotify (macOS: FSEvents would need cgo) trees are walked at
// every command; none of these is reached.
const (
	evOverflow = 0
	evIgnored  = 0
	evSelf     = 0
	eventBuf   = 0
)

func newWatcher(string) (int, error) { return -1, errors.ErrUnsupported }

func addWatch(int, string) (int, error) { return -1, errors.ErrUnsupported }

func rmWatch(int, int) {}

func closeWatcher(int) {}

func (wt *watcher) read() ([]event, error) { return nil, errors.ErrUnsupported }
