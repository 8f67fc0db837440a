package turn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// MaxResourceText bounds the text of one resource the model is given with
// a prompt. An embedded resource is bounded by the longest frame the agent
// reads (acp/wire.MaxFrame, which it equals), and the model sees all of
// it; a linked file read for the model gets the same bound. Past it only
// the beginning is given, with a note.
const MaxResourceText = 10<<20 - 1

// PartKind is what a part of a prompt is.
type PartKind int

const (
	// TextPart: Text is what the user typed.
	TextPart PartKind = iota
	// ResourcePart: an embedded text resource, Text under URI.
	ResourcePart
	// BlobPart: an embedded binary resource, URI alone.
	BlobPart
	// LinkPart: a link to Name at URI, its text not given.
	LinkPart
	// ImagePart: an image, Data in MimeType, named by URI if any.
	ImagePart
	// AudioPart: audio, which the agent does not read.
	AudioPart
)

// Part is one block of a prompt.
type Part struct {
	Kind     PartKind
	Text     string
	URI      string
	Name     string
	MimeType string
	Data     string
}

// FileReader reads a file as the editor has it (unsaved buffers included).
type FileReader interface {
	ReadTextFile(ctx context.Context, path string) (string, error)
}

// promptImages are the prompt's images, in order, named by their URI when
// they have one.
func promptImages(parts []Part) []agent.Image {
	var out []agent.Image
	for _, p := range parts {
		if p.Kind != ImagePart || p.Data == "" {
			continue
		}
		name := fmt.Sprintf("image %d", len(out)+1)
		if p.URI != "" {
			name = p.URI
		}
		out = append(out, agent.Image{MimeType: p.MimeType, Data: p.Data, Name: name})
	}
	return out
}

// promptText flattens the prompt's parts into the user message: text as
// is, embedded text resources inlined with their URI, linked files inlined
// with their path when they can be read, other links by name and URI.
func promptText(ctx context.Context, parts []Part, l links) string {
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		switch p.Kind {
		case TextPart:
			out = append(out, p.Text)
		case ResourcePart:
			out = append(out, contextText(p.URI, "", p.Text))
		case BlobPart:
			out = append(out, fmt.Sprintf("[binary resource %s omitted]", p.URI))
		case LinkPart:
			out = append(out, l.text(ctx, p))
		case ImagePart:
			// Sent as an image part (promptImages), or replaced by
			// agent.ImageNote for a model that does not read images.
		case AudioPart:
			out = append(out, "[audio omitted: this agent does not read audio]")
		}
	}
	return strings.Join(out, "\n")
}

// links reads the files a prompt links to without their text: through the
// editor when it reads files (so an unsaved buffer is what the model
// sees), else from disk, but only inside the session's cwd or another of
// its roots.
type links struct {
	cwd string
	// roots are the session's other project roots: a file in one is read
	// from disk as one in cwd is.
	roots []string
	files FileReader // nil: the editor reads no files for us
	log   *zap.Logger
}

// text is a linked file's text with its path, or the link alone.
func (l links) text(ctx context.Context, p Part) string {
	if path, text, ok := l.read(ctx, p.URI); ok {
		return contextText(p.URI, path, text)
	}
	return fmt.Sprintf("[@%s](%s)", p.Name, p.URI)
}

// read returns the text of the linked file, or ok false when the model is
// to get the link alone.
func (l links) read(ctx context.Context, uri string) (path, text string, ok bool) {
	path, ok = linkPath(uri, l.cwd)
	if !ok {
		return "", "", false
	}
	if l.files != nil {
		text, err := l.files.ReadTextFile(ctx, path)
		if err == nil {
			return path, text, true
		}
		l.log.Info("client did not read a linked file; trying the disk", zap.String("path", path), zap.Error(err))
	}
	text, err := readInRoots(path, append([]string{l.cwd}, l.roots...))
	if err != nil {
		l.log.Info("linked file given as a link only", zap.String("path", path), zap.Error(err))
		return "", "", false
	}
	return path, text, true
}

// linkPath is the absolute file path a link names: a file:// URI or a
// path (relative ones against cwd); ok is false for anything else.
func linkPath(uri, cwd string) (string, bool) {
	if strings.HasPrefix(uri, "file:") {
		u, err := url.Parse(uri)
		if err != nil || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
			return "", false
		}
		return filepath.Clean(u.Path), true
	}
	if strings.Contains(uri, "://") || uri == "" {
		return "", false
	}
	if !filepath.IsAbs(uri) {
		uri = filepath.Join(cwd, uri)
	}
	return filepath.Clean(uri), true
}

var errOutside = errors.New("outside the session's directories")

// readInRoots is readInside of the first of dirs that path is in.
func readInRoots(path string, dirs []string) (string, error) {
	for _, dir := range dirs {
		text, err := readInside(path, dir)
		if !errors.Is(err, errOutside) {
			return text, err
		}
	}
	return "", errOutside
}

// readInside reads the beginning of a text file that is inside dir, links
// followed only while they stay in it, up to one byte past MaxResourceText
// (so the caller can tell it was cut). One open walks from dir with no
// second lookup by name: a command renaming a link to a file the sandbox
// denies over the linked file (or a directory above it) between a check
// and a read would put that file in the prompt.
func readInside(path, dir string) (string, error) {
	rel, ok := untrusted.RelIn(dir, path)
	if !ok {
		if _, err := os.Stat(path); err != nil {
			return "", err
		}
		return "", errOutside
	}
	b, err := untrusted.ReadIn(dir, rel, untrusted.LinksWithin, MaxResourceText+1)
	if errors.Is(err, untrusted.ErrOutside) {
		return "", errOutside
	}
	if err != nil {
		return "", err
	}
	if strings.IndexByte(string(b), 0) >= 0 {
		return "", errors.New("not a text file")
	}
	return string(b), nil
}

// contextText is a resource's text as the model reads it: under its URI
// (and its path, when it was a linked file), cut at MaxResourceText.
func contextText(uri, path, text string) string {
	note := ""
	if len(text) > MaxResourceText {
		cut := text[:MaxResourceText]
		// Not inside a character: back to the start of the last one.
		for i := len(cut); i > 0 && i > len(cut)-utf8.UTFMax; i-- {
			if utf8.RuneStart(cut[i-1]) {
				if !utf8.FullRuneInString(cut[i-1:]) {
					cut = cut[:i-1]
				}
				break
			}
		}
		text = cut
		note = fmt.Sprintf("\n[only the first %d bytes are shown; read the file for the rest]", MaxResourceText)
	}
	attrs := fmt.Sprintf("uri=%q", uri)
	if path != "" {
		attrs += fmt.Sprintf(" path=%q", path)
	}
	return fmt.Sprintf("<context %s>\n%s%s\n</context>", attrs, strings.TrimRight(strings.ToValidUTF8(text, "\uFFFD"), "\n"), note)
}
