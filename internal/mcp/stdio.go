package mcp

import (
	"context"
	"errors"
	"io"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

// Serve runs one MCP session over in and out, a host's stdin and stdout,
// for the agent opts.Agent with every feature, until the client closes in or
// ctx ends (both return nil). Nothing but MCP messages is written to out:
// logs go to opts.Logger, which must not write to out. While the session
// lasts, new index generations are followed as Run does.
func Serve(ctx context.Context, r skill.Router, in io.Reader, out io.Writer, opts Options) error {
	f := New(r, opts)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, err := f.Server(ctx, View{Agent: opts.Agent, Features: AllFeatures})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = f.Run(ctx) })
	defer wg.Wait()
	defer cancel()
	err = srv.Run(ctx, &mcpsdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
