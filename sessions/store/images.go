package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Images of a session's prompts and tool results are kept beside its log,
// one file each in <id>.images/, named by the SHA-256 of their bytes: a log
// line names an image by that ref instead of carrying megabytes of base64,
// and the same image sent twice is stored once.

// Image is an image of a prompt, as the log keeps it.
type Image struct {
	// Ref is the image file's name: the hex SHA-256 of its bytes.
	Ref string `json:"ref"`
	// MimeType is the image's type ("image/png").
	MimeType string `json:"mimeType"`
	// Name is what the user knows it by (its URI), if anything.
	Name string `json:"name,omitempty"`
}

func (s *Store) imagesDir(id string) string { return filepath.Join(s.sessionsDir(), id+".images") }

// PutImage stores data (0600, in a 0700 directory) and returns its ref.
func (sess *Session) PutImage(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	ref := hex.EncodeToString(sum[:])
	dir := sess.store.imagesDir(sess.id)
	path := filepath.Join(dir, ref)
	if _, err := os.Stat(path); err == nil {
		return ref, nil
	}
	if err := privateDir(dir); err != nil {
		return "", fmt.Errorf("store image: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("store image: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", fmt.Errorf("store image: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("store image: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("store image: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("store image: %w", err)
	}
	return ref, nil
}

// ErrBadRef is a ref that is not one PutImage makes.
var ErrBadRef = errors.New("not an image ref")

// ReadImage returns the bytes of the image ref names.
func (sess *Session) ReadImage(ref string) ([]byte, error) {
	if b, err := hex.DecodeString(ref); err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("read image %q: %w", ref, ErrBadRef)
	}
	data, err := os.ReadFile(filepath.Join(sess.store.imagesDir(sess.id), ref))
	if err != nil {
		return nil, fmt.Errorf("read image: %w", err)
	}
	return data, nil
}
