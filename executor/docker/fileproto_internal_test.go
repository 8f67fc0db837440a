package docker

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// An error crosses the tether as the file tools tell it apart: its kind
// (errors.Is), its operation and path, its text.
func TestWireErrKeepsKindAndText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		kind error
	}{
		{&fs.PathError{Op: "read", Path: "/p/a", Err: fs.ErrNotExist}, fs.ErrNotExist},
		{&fs.PathError{Op: "write", Path: "/p/d", Err: executor.ErrIsDirectory}, executor.ErrIsDirectory},
		{executor.ErrTooLarge, executor.ErrTooLarge},
		{&fs.PathError{Op: "open", Path: "/p/l", Err: untrusted.ErrLink}, untrusted.ErrLink},
		{fmt.Errorf("open: %w", &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrPermission}), fs.ErrPermission},
		{errors.New("something else"), nil},
	} {
		msg, err := encodeFileMsg(fileRes{Err: toWireErr(tc.err)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var res fileRes
		if _, err := decodeFileMsg(msg, &res); err != nil {
			t.Fatal(err)
		}
		got := res.Err.error()
		if got.Error() != tc.err.Error() {
			t.Errorf("%v came back as %q", tc.err, got)
		}
		if tc.kind != nil && !errors.Is(got, tc.kind) {
			t.Errorf("%v came back as %v, not %v", tc.err, got, tc.kind)
		}
		var pe, gpe *fs.PathError
		if errors.As(tc.err, &pe) && pe == tc.err && (!errors.As(got, &gpe) || *gpe != (fs.PathError{Op: pe.Op, Path: pe.Path, Err: gpe.Err})) {
			t.Errorf("%v came back as %#v; want the same operation and path", tc.err, got)
		}
	}
}

// A message that does not hold what it says is an error, not a panic.
func TestBadFileMessage(t *testing.T) {
	for _, payload := range [][]byte{nil, {0, 0}, {0, 0, 0, 9, '{', '}'}, {0, 0, 0, 2, '[', ']'}, {0xff, 0xff, 0xff, 0xff}} {
		var res fileRes
		if _, err := decodeFileMsg(payload, &res); err == nil {
			t.Errorf("decode %q: no error", payload)
		}
	}
	data, err := decodeFileMsg(mustEncode(t, fileReq{Op: opWrite, Path: "/p/a"}, []byte("bytes")), &fileReq{})
	if err != nil || string(data) != "bytes" {
		t.Errorf("round trip: %q, %v", data, err)
	}
}

func mustEncode(t *testing.T, meta any, data []byte) []byte {
	t.Helper()
	b, err := encodeFileMsg(meta, data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
