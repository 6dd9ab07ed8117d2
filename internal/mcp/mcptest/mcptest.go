// Package mcptest connects MCP SDK clients in tests so that the list_changed
// notifications they ask for cannot be lost to a race with the connection.
package mcptest

import (
	"context"
	"fmt"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// listenProtocol is the first protocol version whose list_changed
// notifications go only to sessions with a subscriptions/listen stream.
const listenProtocol = "2026-07-28"

// ackMethod is the notification a server sends once a subscriptions/listen
// stream is registered.
const ackMethod = "notifications/subscriptions/acknowledged"

// Connect makes a client with impl and opts, lets each setup configure it
// (AddSendingCustomMethod, for example), and connects it over tr.
//
// On a protocol that sends list_changed notifications only to subscribed
// sessions, the SDK's client opens its subscription (for the lists it has a
// handler for and the server says change) without waiting for the server to
// register it; a change made meanwhile is not notified. Connect waits for
// the server's acknowledgement, so that every change made after it returns
// is.
func Connect(ctx context.Context, impl *mcpsdk.Implementation, opts *mcpsdk.ClientOptions, tr mcpsdk.Transport,
	setup ...func(*mcpsdk.Client) error) (*mcpsdk.ClientSession, error) {
	c := mcpsdk.NewClient(impl, opts)
	for _, f := range setup {
		if err := f(c); err != nil {
			return nil, err
		}
	}
	acked := make(chan struct{})
	var once sync.Once
	c.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if method == ackMethod {
				once.Do(func() { close(acked) })
			}
			return next(ctx, method, req)
		}
	})
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		return nil, err
	}
	if !subscribes(opts, cs.InitializeResult()) {
		return cs, nil
	}
	select {
	case <-acked:
		return cs, nil
	case <-time.After(10 * time.Second):
		cs.Close()
		return nil, fmt.Errorf("no %s within 10s of connecting", ackMethod)
	case <-ctx.Done():
		cs.Close()
		return nil, ctx.Err()
	}
}

// subscribes reports whether the SDK's client opens a subscriptions/listen
// stream on a session that init describes.
func subscribes(opts *mcpsdk.ClientOptions, init *mcpsdk.InitializeResult) bool {
	if opts == nil || init == nil || init.ProtocolVersion < listenProtocol || init.Capabilities == nil {
		return false
	}
	caps := init.Capabilities
	return opts.ToolListChangedHandler != nil && caps.Tools != nil && caps.Tools.ListChanged ||
		opts.PromptListChangedHandler != nil && caps.Prompts != nil && caps.Prompts.ListChanged ||
		opts.ResourceListChangedHandler != nil && caps.Resources != nil && caps.Resources.ListChanged
}
