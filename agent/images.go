package agent

import (
	"encoding/base64"
	"fmt"
)

// A request carries the conversation's images again every time, so what
// it may carry is bounded: the newest images, as many as fit within
// MaxRequestImages and MaxRequestImageBytes (decoded). Each older one is a
// note the model reads (OmittedImageNote). An image left out once stays
// out: the session keeps the note, not the image (BoundImages over its
// history), so a session's memory is bounded the same way.
const (
	MaxRequestImages     = 8
	MaxRequestImageBytes = 20 << 20
)

// OmittedImageNote is what the model reads in place of an image past the
// bound, name being what the user or the tool calls it.
func OmittedImageNote(name string) string {
	if name == "" {
		name = "an image"
	}
	return fmt.Sprintf("[image omitted: %s; a request carries only the newest images, at most %d and %d MiB in all]",
		name, MaxRequestImages, MaxRequestImageBytes>>20)
}

// BoundImages is msgs with only the newest images that fit within the
// bound; each older image becomes OmittedImageNote, a line of its
// message's text. msgs itself is not changed: a changed message is a copy
// in a new slice.
func BoundImages(msgs []Message) []Message {
	count, size := 0, 0
	var out []Message
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if len(m.Images) == 0 {
			continue
		}
		var kept []Image
		var notes []string
		for j := len(m.Images) - 1; j >= 0; j-- {
			img := m.Images[j]
			n := base64.StdEncoding.DecodedLen(len(img.Data))
			if count < MaxRequestImages && size+n <= MaxRequestImageBytes {
				count, size = count+1, size+n
				kept = append(kept, img)
				continue
			}
			notes = append(notes, OmittedImageNote(img.Name))
		}
		if len(notes) == 0 {
			continue
		}
		if out == nil {
			out = append([]Message(nil), msgs...)
		}
		// Both were gathered newest first.
		text := m.Content
		for k := len(notes) - 1; k >= 0; k-- {
			if text != "" {
				text += "\n"
			}
			text += notes[k]
		}
		m.Content = text
		m.Images = nil
		for k := len(kept) - 1; k >= 0; k-- {
			m.Images = append(m.Images, kept[k])
		}
		out[i] = m
	}
	if out == nil {
		return msgs
	}
	return out
}
