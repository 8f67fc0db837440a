// Package keystore keeps the model API keys `dsh-acp login` checked, one
// per endpoint, so that a key is only ever sent to the endpoint it was
// checked against. An index file in the user's config directory
// (keys.json, 0600 in a 0700 directory) names each endpoint that has a
// key and holds the key itself, or says that the OS keychain holds it
// (Keychain: the macOS Keychain, a Secret Service on a Linux desktop).
//
// The index is read at every lookup, so a key another process stores (an
// editor's terminal sign-in) is used by a running agent at once; the
// keychain is asked only for an endpoint the index says it holds.
package keystore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// FileName is the index's name in the config directory.
const FileName = "keys.json"

// LegacyFileName is the single key an older dsh-acp stored, which does not
// say which endpoint it was checked against.
const LegacyFileName = "api-key"

// maxFile bounds what is read of the index and of the legacy file.
const maxFile = 1 << 20

// ErrNotFound is what a Keychain returns for an endpoint it holds no key
// for.
var ErrNotFound = errors.New("no such key in the keychain")

// Keychain is an OS credential store, one secret per endpoint.
type Keychain interface {
	Get(endpoint string) (string, error)
	Set(endpoint, key string) error
	Delete(endpoint string) error
	// Name is what a person calls it ("the macOS Keychain").
	Name() string
}

// Store is the keys of one user.
type Store struct {
	// Dir is the user's config directory (made 0700 on the first Put).
	Dir string
	// Keychain, if set, holds the keys Put stores; where it fails (no
	// D-Bus session, no Secret Service) the key goes into the index file.
	Keychain Keychain
}

// entry is one endpoint's record in the index.
type entry struct {
	Endpoint string `json:"endpoint"`
	// Key is the key, unless InKeychain.
	Key        string `json:"key,omitempty"`
	InKeychain bool   `json:"keychain,omitempty"`
}

type index struct {
	Keys []entry `json:"keys"`
}

// Path is the index file.
func (s *Store) Path() string { return filepath.Join(s.Dir, FileName) }

// LegacyPath is where an older dsh-acp stored its one key.
func (s *Store) LegacyPath() string { return filepath.Join(s.Dir, LegacyFileName) }

// Get is the key stored for endpoint ("" with no error when there is none).
func (s *Store) Get(endpoint string) (string, error) {
	ix, err := s.read()
	if err != nil {
		return "", err
	}
	e, ok := ix.find(endpoint)
	if !ok {
		return "", nil
	}
	if !e.InKeychain {
		return e.Key, nil
	}
	if s.Keychain == nil {
		return "", fmt.Errorf("the key for %s is in the system keychain, which this dsh-acp cannot reach", endpoint)
	}
	key, err := s.Keychain.Get(endpoint)
	if errors.Is(err, ErrNotFound) {
		return "", fmt.Errorf("the key for %s is no longer in %s", endpoint, s.Keychain.Name())
	}
	if err != nil {
		return "", fmt.Errorf("read the key for %s from %s: %w", endpoint, s.Keychain.Name(), err)
	}
	return key, nil
}

// Where says where the key of endpoint is kept, as a person reads it (""
// when there is none).
func (s *Store) Where(endpoint string) string {
	ix, err := s.read()
	if err != nil {
		return ""
	}
	e, ok := ix.find(endpoint)
	switch {
	case !ok:
		return ""
	case e.InKeychain && s.Keychain != nil:
		return s.Keychain.Name()
	case e.InKeychain:
		return "the system keychain"
	}
	return s.Path()
}

// Endpoints are the endpoints a key is stored for.
func (s *Store) Endpoints() ([]string, error) {
	ix, err := s.read()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ix.Keys {
		out = append(out, e.Endpoint)
	}
	return out, nil
}

// Put stores key for endpoint, replacing the one it had, and says where:
// in the keychain if one answers, else in the index file.
func (s *Store) Put(endpoint, key string) (where string, err error) {
	ix, err := s.read()
	if err != nil {
		return "", err
	}
	e := entry{Endpoint: endpoint, Key: key}
	if s.Keychain != nil && s.Keychain.Set(endpoint, key) == nil {
		e = entry{Endpoint: endpoint, InKeychain: true}
		where = s.Keychain.Name()
	}
	if old, ok := ix.find(endpoint); ok && old.InKeychain && !e.InKeychain && s.Keychain != nil {
		// A stale copy in a keychain that has stopped answering for
		// writes: try to leave none behind.
		_ = s.Keychain.Delete(endpoint)
	}
	ix.Keys = slices.DeleteFunc(ix.Keys, func(o entry) bool { return o.Endpoint == endpoint })
	ix.Keys = append(ix.Keys, e)
	if err := s.write(ix); err != nil {
		return "", err
	}
	if where == "" {
		where = s.Path()
	}
	return where, nil
}

// Remove removes endpoint's key; removed says whether there was one.
func (s *Store) Remove(endpoint string) (removed bool, err error) {
	ix, err := s.read()
	if err != nil {
		return false, err
	}
	e, ok := ix.find(endpoint)
	if !ok {
		return false, nil
	}
	if e.InKeychain && s.Keychain != nil {
		if err := s.Keychain.Delete(endpoint); err != nil && !errors.Is(err, ErrNotFound) {
			return false, fmt.Errorf("remove the key for %s from %s: %w", endpoint, s.Keychain.Name(), err)
		}
	}
	ix.Keys = slices.DeleteFunc(ix.Keys, func(o entry) bool { return o.Endpoint == endpoint })
	return true, s.write(ix)
}

// Legacy is the key an older dsh-acp stored ("" with no error when there
// is none). It names no endpoint: it is never sent by a run, only offered
// to `dsh-acp login`, which checks it against the endpoint the user names.
func (s *Store) Legacy() (string, error) {
	b, err := untrusted.ReadWhole(s.LegacyPath(), syscall.O_NOFOLLOW, maxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the key an earlier dsh-acp stored: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// RemoveLegacy removes the older dsh-acp's key; removed says whether there
// was one.
func (s *Store) RemoveLegacy() (removed bool, err error) {
	switch err := os.Remove(s.LegacyPath()); {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("remove the key an earlier dsh-acp stored: %w", err)
	}
	return true, nil
}

func (ix *index) find(endpoint string) (entry, bool) {
	for _, e := range ix.Keys {
		if e.Endpoint == endpoint {
			return e, true
		}
	}
	return entry{}, false
}

// read reads the index; none is an empty one. Not following a link: the
// file says where keys go.
func (s *Store) read() (*index, error) {
	ix := &index{}
	b, err := untrusted.ReadWhole(s.Path(), syscall.O_NOFOLLOW, maxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return ix, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the stored keys: %w", err)
	}
	if err := json.Unmarshal(b, ix); err != nil {
		return nil, fmt.Errorf("read the stored keys: %s is not what dsh-acp login writes (%v): remove it and sign in again", s.Path(), err)
	}
	return ix, nil
}

// write replaces the index in one rename, 0600 (its directory 0700), so a
// reader never sees half of it.
func (s *Store) write(ix *index) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("store the key: %w", err)
	}
	if ix.Keys == nil {
		ix.Keys = []entry{}
	}
	b, err := json.MarshalIndent(ix, "", "  ")
	if err != nil {
		return fmt.Errorf("store the key: %w", err)
	}
	tmp, err := os.CreateTemp(s.Dir, ".keys-*")
	if err != nil {
		return fmt.Errorf("store the key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("store the key: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("store the key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("store the key: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.Path()); err != nil {
		return fmt.Errorf("store the key: %w", err)
	}
	return nil
}
