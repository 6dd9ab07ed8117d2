package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpsag/router/internal/skill"
)

// minimalHTTPServer answers just enough of Streamable HTTP (protocol
// 2025-06-18, no standalone stream) to be listed: initialize, and tools/list
// with tools, as one JSON body or, with sse, as an event stream whose data
// is split over several lines and arrives in small writes.
func minimalHTTPServer(t *testing.T, sse bool, tools string) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var result string
		switch req.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"minimal","version":"1"}}`
		case "tools/list":
			result = `{"tools":` + tools + `}`
		default:
			if req.ID == nil {
				w.WriteHeader(http.StatusAccepted) // a notification
				return
			}
			result = `{}`
		}
		w.Header().Set("Mcp-Session-Id", "s1")
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
		if !sse {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, msg)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		// A comment, then the message over two data lines (a line break
		// inside JSON is white space), in writes of 7 bytes.
		half := strings.Index(msg, `"result"`)
		event := ": hello\r\n\r\nevent: message\r\ndata: " + msg[:half] + "\r\ndata: " + msg[half:] + "\r\n\r\n"
		for len(event) > 0 {
			n := min(7, len(event))
			io.WriteString(w, event[:n])
			w.(http.Flusher).Flush()
			event = event[n:]
		}
	}))
}

// TestRawToolsOverHTTP: over HTTP, as over stdio, tools are served with
// their schemas verbatim (the SDK would re-encode them, keys sorted), and
// a page the SDK cannot decode is read tool by tool, whether the answer is
// a JSON body or an event stream.
func TestRawToolsOverHTTP(t *testing.T) {
	schema := `{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"number"}}}`
	tools := `[{"name":"good","description":"kept as sent","inputSchema":` + schema + `},` +
		`{"name":"bad","description":17,"inputSchema":{"type":"object"}}]`
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			srv := minimalHTTPServer(t, sse, tools)
			defer srv.Close()
			m := newManager(t, nil)
			defer m.Close()
			m.Apply([]ServerConfig{{Name: "min", URL: srv.URL, StartupTimeout: 5 * time.Second}})
			waitFor(t, "listed", func() bool { return serverStatus(m, "min").State == skill.ServerReady })
			st := serverStatus(m, "min")
			if st.Tools != 1 || st.ToolsDropped != 1 || !strings.Contains(strings.Join(st.Diagnostics, "\n"), "does not decode as the protocol says") {
				t.Errorf("%d served, %d dropped, diagnostics %q; want good served, bad dropped, the page read tool by tool", st.Tools, st.ToolsDropped, st.Diagnostics)
			}
			got, _ := m.Tools()
			if len(got) != 1 || string(got[0].Tool.InputSchema) != schema {
				var s string
				if len(got) > 0 {
					s = string(got[0].Tool.InputSchema)
				}
				t.Errorf("schema %s, want it verbatim: %s", s, schema)
			}
		})
	}
}

// FuzzPageReader: any body, read in any chunks, passes through unchanged
// and never panics the reader; a tools/list answer framed as an event
// stream around the fuzzed bytes is still kept.
func FuzzPageReader(f *testing.F) {
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\n\n"), uint8(3), true)
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{}]}}"), uint8(1), false)
	f.Add([]byte("data:\r\ndata: x\r\n\r\n\n\ndata"), uint8(2), true)
	f.Fuzz(func(t *testing.T, body []byte, chunk uint8, sse bool) {
		answer := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t"}],"nextCursor":"c"}}`
		stream := body
		if sse {
			// The fuzzed bytes, a blank line to end whatever event they
			// left open, then the answer.
			stream = append(append(append([]byte{}, body...), "\n\ndata: "...), answer+"\n\n"...)
		}
		pages := &rawPages{}
		pages.expect(mustRequest(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		r := &pageReader{body: io.NopCloser(&chunked{b: stream, n: int(chunk%16) + 1}), pages: pages, sse: sse}
		got, err := io.ReadAll(r)
		if err != nil || string(got) != string(stream) {
			t.Fatalf("read %q, %v; want the body unchanged", got, err)
		}
		tools, cursor, ok := pages.take()
		// Unless the fuzzed bytes held an answer to the same call first.
		answered := bytes.Contains(body, []byte("id")) || bytes.Contains(body, []byte(`\u`))
		if sse && !answered && (!ok || len(tools) != 1 || cursor != "c") {
			t.Errorf("after %q: kept %v %q %v; want the answer's page", body, ok, cursor, len(tools))
		}
	})
}

func mustRequest(t *testing.T, s string) jsonrpc.Message {
	t.Helper()
	m, err := jsonrpc.DecodeMessage([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// chunked reads b at most n bytes at a time.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}
