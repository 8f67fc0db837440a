package store_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// The test binary re-executed as a helper (testutil.Child) is a real
// second dsh-acp process sharing the state directory.
func TestMain(m *testing.M) {
	testutil.Main(m, func(mode string) int { return helper(mode, os.Args[len(os.Args)-2:]) })
}

// helper runs one helper mode; args are the state dir and a mode argument.
//
//	hold DIR ID    open session ID, append a prompt and Sync it, append a
//	               second prompt without Sync, print "ready", then wait for
//	               stdin to close (or to be killed).
//	load DIR ID    open session ID and print how many entries it has.
//	tasks DIR N    print "ready", wait for a line on stdin, then reserve N
//	               task ids one by one, printing each.
func helper(mode string, args []string) int {
	st, err := store.New(store.Options{Dir: args[0]})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	in := bufio.NewReader(os.Stdin)
	switch mode {
	case "hold":
		sess, err := st.Open(args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if _, err := sess.Append(store.Prompt{Text: "synced by the helper"}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := sess.Sync(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if _, err := sess.Append(store.Prompt{Text: "never synced"}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("ready")
		io.Copy(io.Discard, in)
		return 0
	case "load":
		// Peak RSS is what the parent measures: nothing else is done.
		sess, err := st.Open(args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(len(sess.Entries()))
		sess.Close()
		return 0
	case "tasks":
		n, _ := strconv.Atoi(args[1])
		fmt.Println("ready")
		if _, err := in.ReadString('\n'); err != nil {
			return 1
		}
		for range n {
			id, err := st.NextTaskIDs(1)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Println(id)
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

// child is a helper process with its stdin and stdout as pipes.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startHelper starts a helper and waits for its "ready".
func startHelper(t *testing.T, ctx context.Context, mode string, args ...string) *child {
	t.Helper()
	cmd := testutil.Child(t, ctx, mode, args...)
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 5 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() {
		c.in.Close()
		c.cmd.Process.Kill()
		c.cmd.Wait()
	})
	line, err := c.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper %s: %q, %v", mode, line, err)
	}
	return c
}
