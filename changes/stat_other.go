//go:build !linux && !darwin

package changes

import (
	"errors"
	"os"
)

// statAt: not built where there is no fstatat (the agent runs on Linux and
// macOS), so no file is measured.
func statAt(int, string) (entry, error) { return entry{}, errors.ErrUnsupported }

// dirStamp: unknown.
func dirStamp(int) (mtime, ctime int64) { return 0, 0 }

// statFile: unknown.
func statFile(*os.File) (entry, error) { return entry{}, errors.ErrUnsupported }
