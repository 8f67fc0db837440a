package sessions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// ErrInvalidRoot: an extra project root (ACP's additionalDirectories) is
// not an absolute path of an existing directory. Its error is one
// sentence naming the root.
var ErrInvalidRoot = errors.New("invalid additional directory")

// rootError is ErrInvalidRoot in one sentence that names the root.
type rootError struct{ sentence string }

func (e rootError) Error() string        { return e.sentence }
func (e rootError) Is(target error) bool { return target == ErrInvalidRoot }

// checkRoots returns a session's extra project roots cleaned, in the order
// given, each once, without cwd itself (already the session's); each
// must be an absolute path of an existing directory. The first that is
// not is an error naming it, and nothing is returned.
func checkRoots(cwd string, roots []string) ([]string, error) {
	var out []string
	for _, root := range roots {
		if root == "" {
			return nil, rootError{"an additional directory is empty: each must be an absolute path of an existing directory"}
		}
		if !filepath.IsAbs(root) {
			return nil, rootError{fmt.Sprintf("additional directory %q is not an absolute path", root)}
		}
		fi, err := os.Stat(root)
		switch {
		case err != nil && errors.Is(err, os.ErrNotExist):
			return nil, rootError{fmt.Sprintf("additional directory %s does not exist", root)}
		case err != nil:
			return nil, rootError{fmt.Sprintf("additional directory %s cannot be read: %v", root, errors.Unwrap(err))}
		case !fi.IsDir():
			return nil, rootError{fmt.Sprintf("additional directory %s is not a directory", root)}
		}
		root = filepath.Clean(root)
		if root != cwd && !slices.Contains(out, root) {
			out = append(out, root)
		}
	}
	return out, nil
}

// Roots returns the session's extra project roots (beside its Cwd), in the
// order the editor gave them; nil when it has none.
func (s *Session) Roots() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.roots)
}

// setRoots gives a live session the roots a load or resume of it gave
// (the request's list is the whole of them) and stores them when they
// changed.
func (s *Session) setRoots(roots []string) {
	s.mu.Lock()
	changed := !slices.Equal(s.roots, roots)
	s.roots = slices.Clone(roots)
	s.mu.Unlock()
	if changed {
		s.persist(store.Roots{Roots: slices.Clone(roots)})
		s.Sync()
	}
}
