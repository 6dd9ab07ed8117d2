// Command catalog-server serves a dev set's tool catalog (../shared/eval/
// metatool or seal-tools) as an MCP server over stdio, or over Streamable
// HTTP with -http, so that routing quality can be measured on tools:
//
//	go build -o /tmp/catalog-server ./internal/upstream/upstreamtest/catalog-server
//	# mcp_servers: {seal: {command: /tmp/catalog-server, args: [-dir, ../shared/eval/seal-tools]}}
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/upstream/upstreamtest"
)

func main() {
	dir := flag.String("dir", "", "dev set `DIR` holding skills/ and mapping.json (required)")
	addr := flag.String("http", "", "serve Streamable HTTP at http://`ADDR`/mcp instead of stdio")
	flag.Parse()
	if err := run(*dir, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "catalog-server:", err)
		os.Exit(1)
	}
}

func run(dir, addr string) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	tools, err := upstreamtest.LoadCatalog(dir)
	if err != nil {
		return err
	}
	srv := upstreamtest.NewCatalogServer(tools)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if addr == "" {
		return srv.Run(ctx, &mcpsdk.StdioTransport{})
	}
	h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	fmt.Fprintf(os.Stderr, "catalog-server: %d tools at http://%s/mcp\n", len(tools), addr)
	return http.ListenAndServe(addr, mux)
}
