package upstream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

// Call calls a tool on its server and returns the result bounded to the
// server's max_result_bytes, text unframed. The server's own failure
// (isError, or a JSON-RPC error such as invalid arguments) is a result with
// IsError set.
// Errors: CodeNotFound (no such server), CodeUnavailable
// (SERVER_UNAVAILABLE: not connected or the connection failed;
// UPSTREAM_TIMEOUT: no answer within call_timeout), CodeResourceExhausted
// (SERVER_RATE_LIMITED), and ctx's error.
func (m *Manager) Call(ctx context.Context, t *skill.Tool, args json.RawMessage) (*skill.ToolResult, error) {
	c, ok := m.client(t.Server)
	if !ok {
		return nil, skill.Errorf(skill.CodeNotFound, "MCP server %s is not configured or not enabled", t.Server).
			WithReason(skill.ReasonToolNotFound)
	}
	sess := c.live()
	if sess == nil {
		return nil, c.errUnavailable()
	}
	if c.limiter != nil && !c.limiter.Allow() {
		return nil, skill.Errorf(skill.CodeResourceExhausted, "calls to MCP server %s exceed its rate of %g per second; retry shortly", t.Server, c.cfg.Rate).
			WithReason(skill.ReasonServerRateLimited)
	}
	if len(strings.TrimSpace(string(args))) == 0 {
		args = json.RawMessage("{}")
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	start := time.Now()
	res, err := sess.CallTool(cctx, &mcpsdk.CallToolParams{Name: t.Name, Arguments: args})
	took := time.Since(start)
	if err != nil {
		var rpcErr *jsonrpc.Error
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case cctx.Err() != nil:
			return nil, skill.Errorf(skill.CodeUnavailable, "MCP server %s did not answer within call_timeout %s", t.Server, c.cfg.CallTimeout).
				WithReason(skill.ReasonUpstreamTimeout)
		case errors.As(err, &rpcErr):
			msg, _ := Clean(rpcErr.Message, 2000)
			res = &mcpsdk.CallToolResult{IsError: true, Content: []mcpsdk.Content{&mcpsdk.TextContent{
				Text: fmt.Sprintf("the server refused the call (JSON-RPC error %d): %s", rpcErr.Code, msg)}}}
		default:
			return nil, skill.Errorf(skill.CodeUnavailable, "calling MCP server %s failed: %s", t.Server, c.redact(err)).
				WithReason(skill.ReasonServerUnavailable)
		}
	}
	out := bound(res, c.cfg.MaxResultBytes)
	out.Server, out.Tool, out.Duration, out.Trusted = t.Server, t.Name, took, t.Trusted
	return out, nil
}

// bound converts a call result, keeping at most limit bytes of content:
// text is cut at a character boundary, binary blocks that do not fit are
// replaced by a note, structured content that does not fit is left out.
func bound(res *mcpsdk.CallToolResult, limit int) *skill.ToolResult {
	out := &skill.ToolResult{IsError: res.IsError}
	left := limit
	note := func(format string, args ...any) {
		out.Truncated = true
		out.Content = append(out.Content, skill.ToolContent{Type: "text", Text: fmt.Sprintf(format, args...)})
	}
	text := func(s string) (string, bool) {
		if len(s) <= left {
			left -= len(s)
			return s, true
		}
		cut := left
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		left = 0
		out.Truncated = true
		return s[:cut], false
	}
	for _, c := range res.Content {
		if left <= 0 {
			out.Truncated = true
			break
		}
		switch c := c.(type) {
		case *mcpsdk.TextContent:
			t, whole := text(c.Text)
			if !whole {
				t += fmt.Sprintf("\n[cut: the result is over the %d-byte limit]", limit)
			}
			out.Content = append(out.Content, skill.ToolContent{Type: "text", Text: t})
		case *mcpsdk.ImageContent:
			out.Content = append(out.Content, binary("image", c.MIMEType, c.Data, &left, out))
		case *mcpsdk.AudioContent:
			out.Content = append(out.Content, binary("audio", c.MIMEType, c.Data, &left, out))
		case *mcpsdk.ResourceLink:
			name, _ := Clean(c.Name, 200)
			desc, _ := Clean(c.Description, 500)
			uri := skill.Clip(c.URI, 2000)
			left -= len(uri) + len(name) + len(desc)
			out.Content = append(out.Content, skill.ToolContent{Type: "resource_link", URI: uri, Name: name, Description: desc, MIMEType: c.MIMEType})
		case *mcpsdk.EmbeddedResource:
			r := c.Resource
			if r == nil {
				continue
			}
			tc := skill.ToolContent{Type: "resource", URI: skill.Clip(r.URI, 2000), MIMEType: r.MIMEType}
			if r.Blob != nil {
				b := binary("resource", r.MIMEType, r.Blob, &left, out)
				if b.Type != "resource" {
					out.Content = append(out.Content, b)
					continue
				}
				tc.Data = b.Data
			} else {
				t, whole := text(r.Text)
				if !whole {
					t += fmt.Sprintf("\n[cut: the result is over the %d-byte limit]", limit)
				}
				tc.Text = t
			}
			out.Content = append(out.Content, tc)
		default:
			note("[a content block of a type the router does not forward was left out]")
		}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		switch {
		case err != nil:
		case len(b) <= left:
			out.StructuredContent = b
			left -= len(b)
		default:
			out.Truncated = true
		}
	}
	out.Bytes = limit - max(left, 0)
	return out
}

// binary keeps a binary block when its base64 form fits, else a note.
func binary(kind, mime string, data []byte, left *int, out *skill.ToolResult) skill.ToolContent {
	size := base64.StdEncoding.EncodedLen(len(data))
	if size > *left {
		*left = 0
		out.Truncated = true
		return skill.ToolContent{Type: "text", Text: fmt.Sprintf("[a %s block (%s, %d bytes) was left out: it is over the result limit]", kind, skill.Clip(mime, 60), len(data))}
	}
	*left -= size
	return skill.ToolContent{Type: kind, MIMEType: skill.Clip(mime, 100), Data: data}
}
