package openai

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent"
)

// A request's images are most of its bytes (a 7 MB screenshot is 9.3 MB
// of base64), and each copy of them costs that again: a data: URL built
// per image, go-openai's encoding, the re-encodings that add what its types
// cannot say. So the JSON is encoded with a short token where each image's
// base64 goes, and the body is that JSON cut at the tokens with the
// images' own strings streamed in between: no byte of an image is copied
// to send it, however often the request is retried.

// imageSlots are the images of one request, each behind its token.
type imageSlots struct {
	nonce  string
	images []agent.Image
}

func newImageSlots() *imageSlots {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &imageSlots{nonce: "dshacpimg" + hex.EncodeToString(b) + "n"}
}

// url is the data: URL of img with a token for its base64.
func (s *imageSlots) url(img agent.Image) string {
	if s == nil {
		return "data:" + img.MimeType + ";base64," + img.Data
	}
	s.images = append(s.images, img)
	return fmt.Sprintf("data:%s;base64,%s%06d", img.MimeType, s.nonce, len(s.images)-1)
}

// requestBody is a request's JSON as parts: the encoded JSON's pieces and
// the images' base64 strings, sent in order.
type requestBody struct {
	parts []bodyPart
	size  int64
}

type bodyPart struct {
	b []byte
	s string
}

// newBody cuts encoded (which holds each slot's token once, in order) at
// the tokens and puts the images' base64 there. An image whose data is not
// plain base64 (it came from a client) is JSON-escaped instead: the body
// stays valid JSON whatever it holds.
func newBody(encoded []byte, slots *imageSlots) (*requestBody, error) {
	body := &requestBody{}
	add := func(p bodyPart) {
		body.parts = append(body.parts, p)
		body.size += int64(len(p.b) + len(p.s))
	}
	if slots == nil || len(slots.images) == 0 {
		add(bodyPart{b: encoded})
		return body, nil
	}
	if n := bytes.Count(encoded, []byte(slots.nonce)); n != len(slots.images) {
		return nil, fmt.Errorf("image tokens: %d in the request for %d images", n, len(slots.images))
	}
	rest := encoded
	for i, img := range slots.images {
		token := fmt.Sprintf("%s%06d", slots.nonce, i)
		at := bytes.Index(rest, []byte(token))
		if at < 0 {
			return nil, fmt.Errorf("image token %d missing from the request", i)
		}
		add(bodyPart{b: rest[:at]})
		if plainBase64(img.Data) {
			add(bodyPart{s: img.Data})
		} else {
			q, err := json.Marshal(img.Data)
			if err != nil {
				return nil, err
			}
			add(bodyPart{b: q[1 : len(q)-1]})
		}
		rest = rest[at+len(token):]
	}
	add(bodyPart{b: rest})
	return body, nil
}

// plainBase64 reports whether s holds nothing JSON would escape: the
// standard base64 alphabet and its padding.
func plainBase64(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

// reader reads the body from its start.
func (b *requestBody) reader() io.Reader {
	rs := make([]io.Reader, 0, len(b.parts))
	for _, p := range b.parts {
		if p.b != nil {
			rs = append(rs, bytes.NewReader(p.b))
		} else {
			rs = append(rs, strings.NewReader(p.s))
		}
	}
	return io.MultiReader(rs...)
}
