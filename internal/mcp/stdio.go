package mcp

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/mcpsag/router/internal/skill"
)

// Serve runs one MCP session over in and out, a host's stdin and stdout,
// for the agent opts.Agent with opts.Features, until the client closes in or
// ctx ends (both return nil). Nothing but MCP messages is written to out:
// logs go to opts.Logger, which must not write to out. While the session
// lasts, new index generations are followed as Run does.
func Serve(ctx context.Context, r skill.Router, in io.Reader, out io.Writer, opts Options) error {
	f := New(r, opts)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	feat := opts.Features
	if feat == 0 {
		feat = AllFeatures
	}
	srv, err := f.Server(ctx, View{Agent: opts.Agent, Features: feat})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = f.Run(ctx) })
	defer wg.Wait()
	defer cancel()
	err = srv.Run(ctx, &lineTransport{in: in, out: out})
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
