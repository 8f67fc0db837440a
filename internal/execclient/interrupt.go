package execclient

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"
)

// interrupted is what exec says on Ctrl-C. The first cancels the turn (the
// signal context does that): it says the run is waiting out its commands'
// grace. The second quits at once (exit 130) and says what it left: the
// commands still running, ended by the watchdog, and what the session
// keeps. before runs first each time (erase the waiting line, give the
// terminal back its mode); left says what is left running.
type interrupted struct {
	stderr io.Writer
	grace  time.Duration
	before func()
	left   func() string
	exit   func(int)
}

// watch handles SIGINT until stop is called.
func (in interrupted) watch() (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		n := 0
		for {
			select {
			case <-sigs:
			case <-done:
				return
			}
			n++
			in.before()
			if n == 1 {
				fmt.Fprintf(in.stderr, "dsh-acp exec: interrupted: cancelling the turn; its commands get SIGTERM and up to %v to end (press Ctrl-C again to quit now)\n", in.grace)
				continue
			}
			fmt.Fprintf(in.stderr, "dsh-acp exec: quit at once: %s\n", in.left())
			in.exit(130)
			return
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
		<-ended
	}
}
