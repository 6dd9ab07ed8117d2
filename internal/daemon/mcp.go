package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsag/router/internal/buildinfo"
	"github.com/mcpsag/router/internal/mcp"
)

// mcpServer is the MCP Streamable HTTP front of a running daemon.
type mcpServer struct {
	http   *http.Server
	lis    net.Listener
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// inFlight counts the HTTP requests being served, open event streams
	// included.
	inFlight atomic.Int64
}

// counted counts the requests h serves in s.inFlight.
func (s *mcpServer) counted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// mcpOptions are the front's options in this process.
func (m *Main) mcpOptions(agent string) mcp.Options {
	return mcp.Options{
		Name: "mcpsag-router", Version: buildinfo.Read().String(), Agent: agent,
		Logger:         m.log, // the front names its component itself
		TracerProvider: m.tel.TracerProvider(),
		Auditor:        m.tel.Recorder(),
	}
}

// startMCPHTTP serves MCP over Streamable HTTP at mcp.addr, with the gRPC
// listener's TLS configuration (nil: plain HTTP) and, with auth on, the same
// tokens.
func (m *Main) startMCPHTTP(tlsConfig *tls.Config) (*mcpServer, error) {
	cfg := m.Config
	lis, err := net.Listen("tcp", cfg.MCP.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s for MCP: %w (pick another --mcp-addr)", cfg.MCP.Addr, err)
	}
	if tlsConfig != nil {
		lis = tls.NewListener(lis, tlsConfig)
	}
	front := mcp.New(m.served, m.mcpOptions(""))
	ctx, cancel := context.WithCancel(context.Background())
	s := &mcpServer{lis: lis, cancel: cancel}
	s.http = &http.Server{
		Handler: s.counted(front.HTTPHandler(mcp.HTTPOptions{
			Tokens:         m.guard.Tokens,
			Failures:       m.guard.Failures, // one budget per address for both fronts
			Proxies:        m.proxies,
			AllowedOrigins: cfg.MCP.AllowedOrigins,
			MaxBodyBytes:   cfg.MCP.MaxBodyBytes,
			SessionTimeout: cfg.MCP.SessionTimeout,
			MaxSessions:    cfg.MCP.MaxSessions,
		})),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		// No WriteTimeout: it would cut the server-sent event streams.
		ErrorLog: nil,
	}
	s.wg.Go(func() { _ = front.Run(ctx) })
	s.wg.Go(func() {
		if err := s.http.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("MCP server stopped", "err", err)
		}
	})
	return s, nil
}

// stop closes the listener and waits for requests in flight until ctx ends,
// then closes the rest. It returns how many requests were still in flight
// when ctx ended, and whether it did.
func (s *mcpServer) stop(ctx context.Context) (left int64, cut bool) {
	if err := s.http.Shutdown(ctx); err != nil {
		left, cut = s.inFlight.Load(), true
		_ = s.http.Close()
	}
	s.cancel()
	s.wg.Wait()
	return left, cut
}

// MCPAddr returns the address MCP over HTTP is served on, "" when off.
func (m *Main) MCPAddr() string {
	if m.mcp == nil {
		return ""
	}
	return m.mcp.lis.Addr().String()
}

// ServeMCP runs the router standalone for one MCP session over in and out (a
// host's stdin and stdout), for agent, until the client closes in or ctx
// ends. Nothing but MCP messages is written to out; logs go to Stderr. The
// session holds the workspace's state directory and builds its index, or,
// when another process holds it, shares that process's index over the
// directory's socket and takes the directory over when the holder goes
// away (see openSession).
func (m *Main) ServeMCP(ctx context.Context, agent string, in io.Reader, out io.Writer) (err error) {
	if err := m.startTelemetry(ctx); err != nil {
		return err
	}
	defer m.closeTelemetry()
	if err := m.setupGuard(); err != nil {
		return err
	}
	sess, err := m.openSession(ctx, agent)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, sess.close()) }()
	m.log.Info("serving MCP on stdio", "workspace", m.Config.Workspace, "agent", agent, "version", buildinfo.Read().String())
	opts := m.mcpOptions(agent)
	opts.Features = sess.features
	return mcp.Serve(ctx, sess.router, in, out, opts)
}
