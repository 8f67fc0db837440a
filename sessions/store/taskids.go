package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// NextTaskIDs reserves n consecutive task numbers of the store and returns
// the first: the caller owns first … first+n-1 and names its tasks from
// them ("bash-" + number). Numbers start at 1 and are never handed out twice
// by one state directory, across restarts and between processes sharing it.
//
// The counter is a small file replaced (write, fsync, rename, fsync of the
// directory) under an flock of a separate lock file, so two processes never
// read the same value and a crash leaves the old value or the new one. The
// cost, a few fsyncs, is paid once per call: a caller starting many tasks
// may reserve a block and hand numbers out from it (numbers reserved but
// never used are skipped, which is allowed).
func (s *Store) NextTaskIDs(n int) (int64, error) {
	if n < 1 {
		return 0, fmt.Errorf("reserve task ids: n = %d", n)
	}
	if err := privateDir(s.dir); err != nil {
		return 0, fmt.Errorf("reserve task ids: %w", err)
	}
	lf, err := openRegular(filepath.Join(s.dir, "task-ids.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, fmt.Errorf("reserve task ids: %w", err)
	}
	defer closeUnlocked(lf)
	if err := flock(lf, true); err != nil {
		return 0, fmt.Errorf("reserve task ids: %w", err)
	}
	path := filepath.Join(s.dir, "task-ids")
	next := int64(1)
	data, err := readLimited(path, 64)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return 0, fmt.Errorf("reserve task ids: %w", err)
	default:
		// Never guess at a damaged counter: a guess could reuse ids.
		next, err = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil || next < 1 {
			return 0, fmt.Errorf("reserve task ids: %s is damaged (%q)", path, data)
		}
	}
	if err := writeDurable(path, []byte(strconv.FormatInt(next+int64(n), 10)+"\n")); err != nil {
		return 0, fmt.Errorf("reserve task ids: %w", err)
	}
	return next, nil
}

// writeDurable replaces path with data so that after a crash it holds the
// old data or the new, and the new once writeDurable returns.
func writeDurable(path string, data []byte) error {
	return replaceFile(path, data, true)
}
