package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpsag/router/internal/skill"
)

// The SDK's Streamable HTTP handler refuses a malformed POST, a request for
// a method it does not handle, or a request for a session it does not know,
// with HTTP 400 or 404 and plain text before any JSON-RPC handling. A client
// then sees an HTTP failure where stdio gives a JSON-RPC error.
// rpcErrorWriter turns those answers into JSON-RPC errors: -32601 with HTTP
// 200 for an unknown method (as stdio answers it), -32700 for a body that is
// not JSON and -32600 for the rest, with the status the SDK chose. A request
// without a session that is not initialize is refused here before the SDK
// sees it (refuseSessionless): the SDK would open a session for it and answer
// with a JSON-RPC error of code 0.

// postedCall is what peekCall learned of a POST body.
type postedCall struct {
	malformed bool // not JSON
	isCall    bool // one request with an id
	id        jsonrpc.ID
	// method is the method of one request or notification; "" for a
	// response, a batch or anything else.
	method string
}

// peekCall reads r's body, puts it back, and says what it holds. ok is false
// when the body is over max bytes (the SDK refuses it with 413) or cannot be
// read.
func peekCall(r *http.Request, max int64) (postedCall, bool) {
	b, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	rest := r.Body
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), rest), rest}
	if err != nil || int64(len(b)) > max {
		return postedCall{}, false
	}
	if !json.Valid(b) {
		return postedCall{malformed: true}, true
	}
	var m struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
	}
	if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) || json.Unmarshal(b, &m) != nil {
		return postedCall{}, true
	}
	call := postedCall{method: m.Method}
	if m.Method != "" && m.ID != nil {
		if id, err := jsonrpc.MakeID(m.ID); err == nil {
			call.isCall, call.id = true, id
		}
	}
	return call, true
}

// opensSession reports whether call may come without a session on the
// stateful endpoint: initialize opens one, and server/discover (a client of
// 2026-07-28 probing for versions) needs none. Anything the SDK refuses
// before a session matters (a body that is not JSON, a batch) passes too.
func (c postedCall) opensSession() bool {
	return c.malformed || c.method == "" || c.method == "initialize" || c.method == "server/discover"
}

// refuseSessionless answers a message without Mcp-Session-Id that needs a
// session with HTTP 400 and a JSON-RPC -32600, as the transport spec asks
// of a server that requires sessions.
func refuseSessionless(w http.ResponseWriter, call postedCall) {
	writeRPCError(w, http.StatusBadRequest, call.id, jsonrpc.CodeInvalidRequest, fmt.Sprintf(
		"Bad Request: %q needs a session and the request has no Mcp-Session-Id header: send initialize first, "+
			"then the Mcp-Session-Id it returns with every request", skill.Clip(call.method, 80)))
}

// writeRPCError answers with one JSON-RPC error.
func writeRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, msg string) {
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}})
	if err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// rpcErrorWriter passes a response through, except a 400 or a 404, which
// it keeps for finish to answer as a JSON-RPC error.
type rpcErrorWriter struct {
	http.ResponseWriter
	held int // the status held, 0 when none
	text bytes.Buffer
}

func (w *rpcErrorWriter) WriteHeader(code int) {
	if code == http.StatusBadRequest || code == http.StatusNotFound {
		w.held = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rpcErrorWriter) Write(b []byte) (int, error) {
	if w.held != 0 {
		return w.text.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets server-sent events through.
func (w *rpcErrorWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.held == 0 {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *rpcErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// notHandled is how the SDK's message for an unknown method begins.
const notHandled = "JSON RPC not handled"

// finish answers a held 400 or 404 as a JSON-RPC error about call, sent
// with session id sid ("" for none).
func (w *rpcErrorWriter) finish(call postedCall, sid string) {
	if w.held == 0 {
		return
	}
	if _, err := jsonrpc.DecodeMessage(w.text.Bytes()); err == nil {
		// Already a JSON-RPC error (the SDK answers some refusals so).
		w.ResponseWriter.WriteHeader(w.held)
		_, _ = w.ResponseWriter.Write(w.text.Bytes())
		return
	}
	msg := strings.TrimSpace(w.text.String())
	status, code, id := w.held, int64(jsonrpc.CodeInvalidRequest), jsonrpc.ID{}
	if call.isCall {
		id = call.id
	}
	switch {
	case status == http.StatusNotFound && sid != "":
		msg = fmt.Sprintf("Session not found: Mcp-Session-Id %q names no live session of this server (it was closed, "+
			"or idle past the session timeout); start a new session with initialize, sent without Mcp-Session-Id", skill.Clip(sid, 80))
	case call.malformed:
		code, msg = jsonrpc.CodeParseError, "Parse error: the body is not JSON"
	case call.isCall && strings.HasPrefix(msg, notHandled):
		status, code, msg = http.StatusOK, jsonrpc.CodeMethodNotFound, fmt.Sprintf("Method not found: %q", call.method)
	}
	writeRPCError(w.ResponseWriter, status, id, code, msg)
}
