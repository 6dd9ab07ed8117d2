package upstreamtest

import (
	"context"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvLateListen, set to a duration, makes Main serve NewLateListenServer
// with that delay.
const EnvLateListen = "MCPSAG_UPSTREAMTEST_LATE_LISTEN"

// NewLateListenServer returns an MCP server (the official Go SDK) that
// lists tool "a", adds tool "b" as soon as it has answered the first
// tools/list, and registers a session's subscriptions/listen stream only
// delay after it arrives. On a protocol that notifies subscribed sessions
// alone, a client that lists at once and subscribes as it connects gets no
// list_changed for "b": it sees "b" only if it lists again once its
// subscription is acknowledged.
func NewLateListenServer(delay time.Duration) *mcpsdk.Server {
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "mcpsag-late-listen", Version: "1.0"}, nil)
	AddTool(srv, "a")
	var once sync.Once
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			switch method {
			case "tools/list":
				defer once.Do(func() { AddTool(srv, "b") })
			case "subscriptions/listen":
				select {
				case <-time.After(delay):
				case <-ctx.Done():
				}
			}
			return next(ctx, method, req)
		}
	})
	return srv
}

// AddTool adds to srv a tool called name, described "tool <name>", that
// takes an empty object and answers with an empty result; the server then
// tells its sessions that its tools changed.
func AddTool(srv *mcpsdk.Server, name string) {
	srv.AddTool(&mcpsdk.Tool{Name: name, Description: "tool " + name, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			return &mcpsdk.CallToolResult{}, nil
		})
}
