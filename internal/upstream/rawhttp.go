package upstream

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// rawHTTP does over Streamable HTTP what rawTransport does over stdio: it
// keeps the raw tools of every tools/list answer, read from the HTTP
// exchange as it passes. Over HTTP the session must hold the SDK's own
// connection, not a wrapper: the SDK opens the standalone SSE stream (which
// carries list_changed before protocol 2026-07-28) and sends the
// negotiated protocol version with every request only for a connection of
// its own.
//
// It also calls reopened when the server accepts the standalone stream (a
// GET answered with an event stream) again after a break: what the server
// sent in between is lost, unless it keeps events to replay, so the tools
// are listed again. The first time, within the SDK's Connect, comes before
// the first listing and needs none.
type rawHTTP struct {
	base     http.RoundTripper
	pages    *rawPages
	reopened func()
	opened   atomic.Bool
}

// maxRawMessage bounds the bytes kept of one answer while it is read; a
// larger one is not kept, and the SDK's decoding of it is used instead.
const maxRawMessage = 64 << 20

func (t *rawHTTP) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		resp, err := t.base.RoundTrip(r)
		if err == nil && resp.StatusCode == http.StatusOK && mediaType(resp) == "text/event-stream" && t.opened.Swap(true) {
			t.reopened()
		}
		return resp, err
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return t.base.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	listing := false
	if m, err := jsonrpc.DecodeMessage(body); err == nil {
		listing = t.pages.expect(m)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil || !listing {
		return resp, err
	}
	switch mediaType(resp) {
	case "application/json":
		resp.Body = &pageReader{body: resp.Body, pages: t.pages}
	case "text/event-stream":
		resp.Body = &pageReader{body: resp.Body, pages: t.pages, sse: true}
	}
	return resp, nil
}

// pageReader passes an answer's body through and offers each JSON-RPC
// message in it to pages as soon as it is whole, before the reader gets
// its last bytes: the whole body for JSON, each event's data for an event
// stream.
type pageReader struct {
	body  io.ReadCloser
	pages *rawPages
	sse   bool
	buf   []byte // JSON: the body so far; SSE: the current line
	data  []byte // SSE: the current event's data
	over  bool   // more than maxRawMessage: nothing more is kept
}

func (p *pageReader) Read(b []byte) (int, error) {
	n, err := p.body.Read(b)
	if !p.over {
		if p.sse {
			p.lines(b[:n])
		} else {
			p.buf = append(p.buf, b[:n]...)
			if err == io.EOF {
				p.offer(p.buf)
			}
		}
		p.over = len(p.buf)+len(p.data) > maxRawMessage
		if p.over {
			p.buf, p.data = nil, nil
		}
	}
	return n, err
}

func (p *pageReader) Close() error { return p.body.Close() }

// lines reads an event stream's lines: the data lines of an event are
// joined, and a blank line ends the event.
func (p *pageReader) lines(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.buf = append(p.buf, b...)
			return
		}
		line := append(p.buf, b[:i]...)
		b = b[i+1:]
		p.buf = line[:0]
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) == 0:
			if len(p.data) > 0 {
				p.offer(p.data)
			}
			p.data = p.data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			if len(p.data) > 0 {
				p.data = append(p.data, '\n')
			}
			v := line[len("data:"):]
			p.data = append(p.data, bytes.TrimPrefix(v, []byte(" "))...)
		}
	}
}

func mediaType(resp *http.Response) string {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt
}

func (p *pageReader) offer(msg []byte) {
	if m, err := jsonrpc.DecodeMessage(msg); err == nil {
		p.pages.offer(m)
	}
}
