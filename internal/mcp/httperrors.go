package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The SDK's Streamable HTTP handler refuses a malformed POST, or a request
// for a method it does not handle, with HTTP 400 and plain text before any
// JSON-RPC handling. A client then sees an HTTP failure where stdio gives a
// JSON-RPC error. rpcErrorWriter turns those answers into JSON-RPC errors:
// -32601 with HTTP 200 for an unknown method (as stdio answers it), -32700
// for a body that is not JSON and -32600 for the rest, with HTTP 400.

// postedCall is what peekCall learned of a POST body.
type postedCall struct {
	malformed bool // not JSON
	isCall    bool // one request with an id
	id        jsonrpc.ID
	method    string
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
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) && json.Unmarshal(b, &m) == nil && m.Method != "" && m.ID != nil {
		if id, err := jsonrpc.MakeID(m.ID); err == nil {
			return postedCall{isCall: true, id: id, method: m.Method}, true
		}
	}
	return postedCall{}, true
}

// rpcErrorWriter passes a response through, except a 400, which it keeps
// for finish to answer as a JSON-RPC error.
type rpcErrorWriter struct {
	http.ResponseWriter
	held bool
	text bytes.Buffer
}

func (w *rpcErrorWriter) WriteHeader(code int) {
	if code == http.StatusBadRequest {
		w.held = true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rpcErrorWriter) Write(b []byte) (int, error) {
	if w.held {
		return w.text.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets server-sent events through.
func (w *rpcErrorWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.held {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *rpcErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// notHandled is how the SDK's message for an unknown method begins.
const notHandled = "JSON RPC not handled"

// finish answers a held 400 as a JSON-RPC error about call.
func (w *rpcErrorWriter) finish(call postedCall) {
	if !w.held {
		return
	}
	if _, err := jsonrpc.DecodeMessage(w.text.Bytes()); err == nil {
		// Already a JSON-RPC error (the SDK answers some refusals so).
		w.ResponseWriter.WriteHeader(http.StatusBadRequest)
		_, _ = w.ResponseWriter.Write(w.text.Bytes())
		return
	}
	msg := strings.TrimSpace(w.text.String())
	status, code, id := http.StatusBadRequest, int64(jsonrpc.CodeInvalidRequest), jsonrpc.ID{}
	switch {
	case call.malformed:
		code, msg = jsonrpc.CodeParseError, "Parse error: the body is not JSON"
	case call.isCall && strings.HasPrefix(msg, notHandled):
		status, code, id, msg = http.StatusOK, jsonrpc.CodeMethodNotFound, call.id, fmt.Sprintf("Method not found: %q", call.method)
	case call.isCall:
		id = call.id
	}
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}})
	if err != nil {
		http.Error(w.ResponseWriter, msg, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.ResponseWriter.WriteHeader(status)
	_, _ = w.ResponseWriter.Write(data)
}
