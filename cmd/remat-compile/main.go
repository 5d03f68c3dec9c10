// Command remat-compile reads neural-network graphs, infers their shapes and
// memory, and rewrites them. See `remat-compile help`.
package main

import (
	"context"
	"os"
	"os/signal"

	"golang.org/x/term"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	st := &Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ErrTTY: term.IsTerminal(int(os.Stderr.Fd()))}
	os.Exit(Main(ctx, os.Args[1:], st))
}
