package acp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/tools"
)

func out(data string) tools.Chunk    { return tools.Chunk{Stream: "stdout", Data: []byte(data)} }
func errOut(data string) tools.Chunk { return tools.Chunk{Stream: "stderr", Data: []byte(data)} }

func spilled(c tools.Chunk, path string) tools.Chunk { c.FullOutput = path; return c }

// lines is "from\n…to\n", as seq prints it.
func lines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

// TestLiveOutputOrderAndWholeReads: both streams in the order read, each
// read whole: a rune split across two stdout reads is not cut by the
// stderr read between them.
func TestLiveOutputOrderAndWholeReads(t *testing.T) {
	t.Parallel()
	o := newLiveOutput(liveTail)
	for _, c := range []tools.Chunk{out("a"), errOut("b\n"), out("c\n"), out("x\xe2\x82"), errOut("err\n"), out("\xac\n")} {
		o.add(c)
	}
	got, end := o.render(true)
	if want := "ab\nc\nxerr\n€\n"; got != want || !end {
		t.Errorf("render = %q (line end %v), want %q", got, end, want)
	}
}

func TestLiveOutputSkipped(t *testing.T) {
	t.Parallel()
	all := lines(1, 200) // 692 bytes
	tests := []struct {
		name   string
		chunks []tools.Chunk
		// midLine: the text rendered before did not end a line.
		midLine bool
		want    string
	}{
		{
			name: "resumes at a line start",
			// The newest 99 bytes start inside "176\n"; the next line is 177.
			chunks: []tools.Chunk{spilled(out(all), "/s/out.log")},
			want:   "[… 596 bytes not shown; full output: /s/out.log]\n" + lines(177, 200),
		},
		{
			name:   "a cut at a line end keeps the next line",
			chunks: []tools.Chunk{spilled(out(lines(1, 10)+strings.Repeat("x", 98)+"\n"), "/s/out.log")},
			want:   "[… 21 bytes not shown; full output: /s/out.log]\n" + strings.Repeat("x", 98) + "\n",
		},
		{
			name:    "own line after a partial line",
			chunks:  []tools.Chunk{spilled(out(all), "/s/out.log")},
			midLine: true,
			want:    "\n[… 596 bytes not shown; full output: /s/out.log]\n" + lines(177, 200),
		},
		{
			name:   "no spill file",
			chunks: []tools.Chunk{out(all)},
			want:   "[… 596 bytes not shown; full output: (unavailable)]\n" + lines(177, 200),
		},
		{
			name: "no line start: a rune start",
			// The newest 99 bytes cut an é (2 bytes) in half.
			chunks: []tools.Chunk{spilled(out(strings.Repeat("é", 40)+"abc"+strings.Repeat("é", 49)+"zz"), "/s/o")},
			want:   "[… 85 bytes not shown; full output: /s/o]\n" + strings.Repeat("é", 48) + "zz",
		},
		{
			name: "every stream says so before what is left of it",
			chunks: []tools.Chunk{
				errOut("warning\n"),
				spilled(out(lines(1, 100)), "/s/out.log"),
				spilled(errOut(lines(1, 100)), "/s/err.log"),
				spilled(out("tail\n"), "/s/out.log"),
			},
			want: "[… 198 bytes not shown; full output: /s/out.log]\n" + lines(70, 100) +
				"[… 203 bytes not shown; full output: /s/err.log]\n" + lines(69, 100) + "tail\n",
		},
		{
			name:   "nothing left of the stream: the line at the end",
			chunks: []tools.Chunk{errOut("e\n"), spilled(out(strings.Repeat("y", 150)+"\n"), "/s/o")},
			want:   "e\n[… 151 bytes not shown; full output: /s/o]\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newLiveOutput(99)
			total := 0
			for _, c := range tt.chunks {
				o.add(c)
				total += len(c.Data)
			}
			got, end := o.render(!tt.midLine)
			if got != tt.want {
				t.Errorf("render =\n%q\nwant\n%q", got, tt.want)
			}
			if !end && strings.HasSuffix(tt.want, "\n") {
				t.Error("render says the text does not end a line")
			}
			var kept int
			var skipped int64
			for _, st := range o.streams {
				kept += st.kept
				skipped += st.skipped
				if st.kept > 99 {
					t.Errorf("%s keeps %d bytes, max 99", st.name, st.kept)
				}
			}
			if kept+int(skipped) != total {
				t.Errorf("kept %d + skipped %d != %d bytes read", kept, skipped, total)
			}
		})
	}
}

// TestLiveOutputReset: after a reset only what arrives next is rendered,
// and a skip counts from the reset.
func TestLiveOutputReset(t *testing.T) {
	t.Parallel()
	o := newLiveOutput(99)
	o.add(out("head\n"))
	if got, _ := o.render(true); got != "head\n" {
		t.Fatalf("first render %q", got)
	}
	o.reset()
	o.add(spilled(out(lines(1, 200)), "/s/o"))
	got, _ := o.render(true)
	if want := "[… 596 bytes not shown; full output: /s/o]\n" + lines(177, 200); got != want {
		t.Errorf("render after reset =\n%q\nwant\n%q", got, want)
	}
	o.reset()
	if got, end := o.render(false); got != "" || end {
		t.Errorf("empty render = %q, %v", got, end)
	}
}

// BenchmarkLiveOutputAdd: the cost on an executor's reader goroutine of
// keeping a noisy command's output (64 KiB reads of short lines, over the
// bound every time) and rendering it as a few updates a second would.
func BenchmarkLiveOutputAdd(b *testing.B) {
	read := []byte(lines(1, 20000)[:64<<10])
	o := newLiveOutput(liveTail)
	b.SetBytes(int64(len(read)))
	for i := 0; b.Loop(); i++ {
		o.add(tools.Chunk{Stream: "stdout", Data: read, FullOutput: "/s/o"})
		if i%16 == 0 {
			o.render(true)
			o.reset()
		}
	}
}
