package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
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

// MaxImageBytes bounds one stored image: PutImage refuses a larger one and
// ReadImage reads no more (a name in the images directory may be anything
// a command planted there, /dev/zero's link included). A prompt's frame is
// at most 10 MiB, so its images are well below it.
const MaxImageBytes = 32 << 20

// errImagesDir: <id>.images is not a directory of ours (a link, a file).
var errImagesDir = errors.New("the images directory is not a plain directory")

// ownImagesDir checks that dir, if it exists, is a directory and not a
// link to one: what is written or read beneath it stays in the store.
func ownImagesDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &os.PathError{Op: "open", Path: dir, Err: errImagesDir}
	}
	return nil
}

// PutImage stores data (0600, in a 0700 directory) and returns its ref.
func (sess *Session) PutImage(data []byte) (string, error) {
	if len(data) > MaxImageBytes {
		return "", fmt.Errorf("store image: %d bytes, over the %d stored", len(data), MaxImageBytes)
	}
	sum := sha256.Sum256(data)
	ref := hex.EncodeToString(sum[:])
	dir := sess.store.imagesDir(sess.id)
	path := filepath.Join(dir, ref)
	// Kept already only if what is there is the image: a link, a FIFO or
	// other bytes planted under its name are not, and the rename below
	// replaces them.
	if _, err := sess.ReadImage(ref); err == nil {
		return ref, nil
	}
	if err := privateDir(dir); err != nil {
		return "", fmt.Errorf("store image: %w", err)
	}
	if err := ownImagesDir(dir); err != nil {
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

// ReadImage returns the bytes of the image ref names: a regular file, read
// without following a link or blocking on a FIFO, of at most MaxImageBytes.
func (sess *Session) ReadImage(ref string) ([]byte, error) {
	if b, err := hex.DecodeString(ref); err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("read image %q: %w", ref, ErrBadRef)
	}
	// One open from the state directory, no link on the way: the images
	// directory checked and then read by name could be a link by then.
	rel := filepath.Join("sessions", sess.id+".images", ref)
	data, err := untrusted.ReadIn(sess.store.dir, rel, untrusted.NoLinks, MaxImageBytes+1)
	if err != nil {
		return nil, fmt.Errorf("read image: %w", err)
	}
	if len(data) > MaxImageBytes {
		return nil, fmt.Errorf("read image: over %d bytes", MaxImageBytes)
	}
	// The name is the bytes' hash: other bytes under it were not stored
	// by PutImage.
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != ref {
		return nil, fmt.Errorf("read image %s: %w", ref[:12], ErrImageChanged)
	}
	return data, nil
}

// ErrImageChanged is a stored image whose bytes are not the ones stored.
var ErrImageChanged = errors.New("the file's bytes are not the image stored under its name")
