package mcp

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultMaxSessions bounds the live MCP sessions over HTTP. Each holds a
// few goroutines and some 20 KiB until it is closed or idle for the session
// timeout.
const DefaultMaxSessions = 1000

// sessionRetryAfter is what a refused client is told to wait.
const sessionRetryAfter = 30 * time.Second

// sessionGate bounds the live sessions. When they are all taken, a request
// that would open one is refused (503 with Retry-After) rather than one
// idle session closed to make room: evicting would let whoever opens
// sessions fastest close every other client's, while refusing leaves the
// clients that have a session working, and the flood's sessions end with
// the session timeout like any other. Sessions being opened count as taken
// until the SDK lists them, so concurrent initializes cannot overshoot (for
// a moment one counts twice: near the limit, concurrent ones may be refused
// a little early). Every session of the front counts, an in-process or
// stdio client's included.
type sessionGate struct {
	max  int
	live func() int // the sessions open now
	mu   sync.Mutex
	// opening counts requests that may be opening a session.
	opening int
	// refused counts refusals since the last warning; warned is when it
	// was logged.
	refused int
	warned  time.Time
}

// enter reserves a session for a request that may open one. It reports
// false when the sessions are all taken, and then how many were refused
// since the last call that said to warn (warn true, at most once a minute).
func (g *sessionGate) enter(now time.Time) (ok, warn bool, refused int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live()+g.opening < g.max {
		g.opening++
		return true, false, 0
	}
	g.refused++
	if now.Sub(g.warned) < time.Minute {
		return false, false, 0
	}
	n := g.refused
	g.warned, g.refused = now, 0
	return false, true, n
}

// leave ends a reservation: the session is open (and listed) or was not
// opened.
func (g *sessionGate) leave() {
	g.mu.Lock()
	g.opening--
	g.mu.Unlock()
}

// openSession serves a request that opens a session (a POST without a
// session id) within the gate, or refuses it.
func (h *httpFront) openSession(w http.ResponseWriter, r *http.Request, serve func()) {
	ok, warn, n := h.sessions.enter(time.Now())
	if !ok {
		if warn {
			h.f.log.Warn("MCP sessions refused: the limit of live sessions is reached", "max_sessions", h.sessions.max, "refused", n)
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(sessionRetryAfter.Seconds())))
		http.Error(w, fmt.Sprintf("too many MCP sessions are open (mcp.max_sessions %d); retry later, and close sessions no longer used (DELETE with their Mcp-Session-Id)",
			h.sessions.max), http.StatusServiceUnavailable)
		return
	}
	defer h.sessions.leave()
	serve()
}

// liveSessions counts the sessions open on every view's server.
func (f *Front) liveSessions() int {
	f.mu.Lock()
	views := make([]*view, 0, len(f.views))
	for _, vw := range f.views {
		views = append(views, vw)
	}
	f.mu.Unlock()
	n := 0
	for _, vw := range views {
		for range vw.srv.Sessions() {
			n++
		}
	}
	return n
}
