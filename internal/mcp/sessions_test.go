package mcp

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSessionsAreCapped opens sessions over HTTP past MaxSessions: the ones
// past it are refused with 503 and Retry-After, the live sessions and the
// goroutines stay where the cap left them, and a session closed by its
// client makes room for a new one.
func TestSessionsAreCapped(t *testing.T) {
	const max, flood = 40, 400
	h := newHTTPHarness(t, HTTPOptions{MaxSessions: max})
	initialize := func() (code int, session, retry string, err error) {
		req, err := http.NewRequest(http.MethodPost, h.srv.URL+Path, strings.NewReader(initializeBody))
		if err != nil {
			return 0, "", "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", "", err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), resp.Header.Get("Retry-After"), nil
	}

	// Sessions asked for at once, from 8 clients: the cap holds under
	// concurrency (a session is counted both as opening and as open for a
	// moment, so near the cap concurrent initializes may be refused early;
	// the first ones are opened from one client).
	var mu sync.Mutex
	var sessions []string
	byCode := map[int]int{}
	open := func(n, clients int) {
		var wg sync.WaitGroup
		for g := range clients {
			wg.Go(func() {
				for i := g; i < n; i += clients {
					code, id, retry, err := initialize()
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					byCode[code]++
					if id != "" {
						sessions = append(sessions, id)
					}
					if code == http.StatusServiceUnavailable && retry == "" {
						t.Errorf("503 without Retry-After")
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	// The harness's in-memory client holds sessions of its own.
	room := max - h.front.liveSessions()
	open(room, 1)
	if len(sessions) != room || byCode[http.StatusOK] != room {
		t.Fatalf("the first %d initializes: %v, %d sessions; want each a session", room, byCode, len(sessions))
	}
	runtime.GC()
	before := runtime.NumGoroutine()
	open(flood, 8)
	time.Sleep(100 * time.Millisecond) // connections' goroutines settle
	after := runtime.NumGoroutine()
	t.Logf("%d initializes past a cap of %d: %v; goroutines %d -> %d; live sessions %d", flood, max, byCode, before, after, h.front.liveSessions())
	if byCode[http.StatusServiceUnavailable] != flood || len(sessions) != room {
		t.Errorf("initializes past the cap: %v, %d sessions; want all %d refused with 503", byCode, len(sessions), flood)
	}
	if n := h.front.liveSessions(); n != max {
		t.Errorf("%d live sessions, want %d", n, max)
	}
	if after-before > 32 {
		t.Errorf("goroutines grew from %d to %d while sessions were refused", before, after)
	}

	// A client closing its session makes room.
	req, _ := http.NewRequest(http.MethodDelete, h.srv.URL+Path, nil)
	req.Header.Set("Mcp-Session-Id", sessions[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, id, _, err := initialize(); err != nil || code != http.StatusOK || id == "" {
		t.Errorf("initialize after a session closed: %d %q %v, want a session", code, id, err)
	}
}
