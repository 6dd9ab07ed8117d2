package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineTransport is the stdio transport: one JSON-RPC message per line in
// each direction, as the SDK's IOTransport, except that what a client sends
// wrong is answered and the session goes on: a line that is not JSON gets
// -32700, a batch, a message that is not JSON-RPC or a line over the limit
// get -32600, and so does a request before initialize. The SDK's transport
// ends the session on any of these, without a word.
type lineTransport struct {
	in      io.Reader
	out     io.Writer
	maxLine int
}

// defaultMaxLine bounds one message, as the SDK's transport does.
const defaultMaxLine = mcpsdk.DefaultMaxLineLength

func (t *lineTransport) Connect(context.Context) (mcpsdk.Connection, error) {
	c := &lineConn{out: t.out, incoming: make(chan jsonrpc.Message), closed: make(chan struct{})}
	max := t.maxLine
	if max <= 0 {
		max = defaultMaxLine
	}
	go c.readLoop(bufio.NewReaderSize(t.in, 64<<10), max)
	return c, nil
}

type lineConn struct {
	out      io.Writer
	wmu      sync.Mutex
	incoming chan jsonrpc.Message
	readErr  error // set before incoming is closed

	initialized atomic.Bool
	closeOnce   sync.Once
	closed      chan struct{}
}

func (c *lineConn) SessionID() string { return "" }

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case msg, ok := <-c.incoming:
		if !ok {
			return nil, c.readErr
		}
		return msg, nil
	}
}

// Write sends one message. A response whose error carries no JSON-RPC code
// (the SDK answers some refusals so) is sent as an internal error.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error != nil {
		var we *jsonrpc.Error
		if !errors.As(resp.Error, &we) {
			msg = &jsonrpc.Response{ID: resp.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: resp.Error.Error()}}
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	return c.writeLine(data)
}

func (c *lineConn) writeLine(data []byte) error {
	select {
	case <-c.closed:
		return io.EOF
	default:
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.out.Write(append(data, '\n'))
	return err
}

func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// readLoop reads lines until the input ends, answers the ones it refuses
// and hands the others to Read.
func (c *lineConn) readLoop(r *bufio.Reader, max int) {
	defer close(c.incoming)
	for {
		line, tooLong, err := readLine(r, max)
		if tooLong {
			c.refuse(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("the message is longer than %d bytes", max))
		} else if msg := c.accept(bytes.TrimSpace(line)); msg != nil {
			select {
			case c.incoming <- msg:
			case <-c.closed:
				c.readErr = io.EOF
				return
			}
		}
		if err != nil {
			c.readErr = err
			return
		}
	}
}

// accept decodes one line, or answers it and returns nil.
func (c *lineConn) accept(line []byte) jsonrpc.Message {
	switch {
	case len(line) == 0:
		return nil
	case !json.Valid(line):
		c.refuse(jsonrpc.ID{}, jsonrpc.CodeParseError, "Parse error: the line is not JSON")
		return nil
	case line[0] == '[':
		c.refuse(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message per line")
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.refuse(idOf(line), jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error())
		return nil
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return msg
	}
	switch {
	case req.Method == "initialize":
		c.initialized.Store(true)
	case !c.initialized.Load() && req.Method != "ping" && req.Method != "server/discover" && !perRequestVersion(req.Params):
		c.refuse(req.ID, jsonrpc.CodeInvalidRequest, fmt.Sprintf("the session is not initialized: send initialize before %s", req.Method))
		return nil
	}
	return msg
}

// refuse answers a message it does not hand on.
func (c *lineConn) refuse(id jsonrpc.ID, code int64, msg string) {
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}})
	if err == nil {
		_ = c.writeLine(data)
	}
}

// idOf returns the id of a JSON object when it is one a response can carry
// (a string or a number), else the null id.
func idOf(line []byte) jsonrpc.ID {
	var m struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil {
		return jsonrpc.ID{}
	}
	id, err := jsonrpc.MakeID(m.ID)
	if err != nil {
		return jsonrpc.ID{}
	}
	return id
}

// perRequestVersion reports whether params carry the protocol version in
// _meta, as requests of protocol 2026-07-28 do instead of an initialize.
func perRequestVersion(params json.RawMessage) bool {
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	_, ok := p.Meta[mcpsdk.MetaKeyProtocolVersion]
	return ok
}

// readLine reads one line without its newline. A line longer than max is
// read to its end and dropped: tooLong reports it. err is the reader's
// error, io.EOF at the end of the input, with the last line if it had no
// newline.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), tooLong, err
	}
}
