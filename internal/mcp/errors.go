package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

// argNames maps the request fields the router names in errors to the tool
// arguments that carry them, where the two differ.
var argNames = map[string]string{
	skill.FieldResourcePath:      "path",
	skill.FieldCatalogCharBudget: "budget_chars",
}

// hints add what to do next to router errors that do not say it.
var hints = map[skill.Code]string{
	skill.CodeNotFound:          "list_skills shows the skills and find_skills picks them for a task",
	skill.CodeUnavailable:       "the router is not ready; retry in a few seconds",
	skill.CodeResourceExhausted: "retry later",
}

// reasonHints replace the hint of an error's code for some reasons (the
// router's reasons of level-3 loads).
var reasonHints = map[string]string{
	"NO_SUCH_FILE": "load_skill lists the skill's files",
}

// toolError turns a router error into the error a tool handler returns; the
// SDK sends its text as a result marked isError. *skill.Error values keep
// their message (never their wrapped cause, which may name host paths);
// internal errors are logged once with the request id and answered with
// that id only.
func (f *Front) toolError(ctx context.Context, tool string, err error) error {
	c := callFrom(ctx)
	var de *skill.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		c.outcome = "deadline_exceeded"
		return errors.New("deadline_exceeded: the call ran out of time; retry, or ask for less")
	case errors.Is(err, context.Canceled):
		c.outcome = "cancelled"
		return errors.New("cancelled: the call was cancelled")
	case errors.As(err, &de) && de.Code != skill.CodeInternal:
		c.outcome = de.Code.String()
		return errors.New(describe(de))
	}
	c.outcome = "internal"
	f.log.Error("MCP call failed", "request_id", c.id, "tool", tool, "err", err)
	return fmt.Errorf("internal error (request id %s): the router logged the details", c.id)
}

// describe renders a router error for a model: code, argument, message,
// reason and, where useful, the next step. The argument is named as the
// tool's arguments name it.
func describe(de *skill.Error) string {
	field := de.Field
	if a, ok := argNames[field]; ok {
		field = a
	}
	return describeField(de, field)
}

// describeField is describe with the argument named field ("" for none).
func describeField(de *skill.Error, field string) string {
	var b strings.Builder
	b.WriteString(de.Code.String())
	if de.Field != "" && field != "" {
		b.WriteString(": " + field)
	}
	b.WriteString(": " + de.Message)
	if de.Reason != "" {
		b.WriteString(" [" + de.Reason + "]")
	}
	h, ok := reasonHints[de.Reason]
	if !ok {
		h, ok = hints[de.Code]
	}
	if ok {
		b.WriteString(" (" + h + ")")
	}
	return b.String()
}

// rpcError turns a router error from a resource read or a prompt into a
// JSON-RPC error: not found as the spec's resource-not-found, bad requests
// as invalid params, internal errors with the request id only.
func (f *Front) rpcError(ctx context.Context, uri string, err error) error {
	return f.rpcErrorOf(ctx, uri, false, err)
}

// uriError is rpcError for a request that named uri: the arguments the
// router names are parts of it.
func (f *Front) uriError(ctx context.Context, uri string, err error) error {
	return f.rpcErrorOf(ctx, uri, true, err)
}

func (f *Front) rpcErrorOf(ctx context.Context, uri string, byURI bool, err error) error {
	c := callFrom(ctx)
	var de *skill.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		c.outcome = "deadline_exceeded"
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the call ran out of time"}
	case errors.Is(err, context.Canceled):
		c.outcome = "cancelled"
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the call was cancelled"}
	case errors.As(err, &de) && de.Code != skill.CodeInternal:
		c.outcome = de.Code.String()
		msg := describe(de)
		if byURI {
			// The name and path the router checked came from the
			// request's URI.
			msg = describeField(de, "uri")
		}
		switch de.Code {
		case skill.CodeNotFound:
			return notFound(uri, msg)
		case skill.CodeUnavailable, skill.CodeResourceExhausted:
			return &jsonrpc.Error{Code: codeUnavailable, Message: msg}
		case skill.CodePermissionDenied:
			if de.Reason != "" {
				// A path refused where the file is read (a link out, a
				// hidden or hard-linked file): a file this server does
				// not serve, as the spec answers it.
				return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
			}
			return &jsonrpc.Error{Code: codeForbidden, Message: msg}
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
	}
	c.outcome = "internal"
	f.log.Error("MCP call failed", "request_id", c.id, "uri", skill.Clip(uri, 200), "err", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("internal error (request id %s): the router logged the details", c.id)}
}

// notFound is the spec's resource-not-found error (the SDK's code), with a
// message that says what was missing.
func notFound(uri, msg string) error {
	return notFoundMessage(uri, "Resource not found: "+msg)
}

// notFoundMessage is resource-not-found with message msg.
func notFoundMessage(uri, msg string) error {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &jsonrpc.Error{Code: mcpsdk.CodeResourceNotFound, Message: msg, Data: data}
}

// badURI refuses a resource URI that is not one this server makes.
func badURI(ctx context.Context, uri, why string) error {
	c := callFrom(ctx)
	c.outcome = skill.CodeInvalidArgument.String()
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("resource URI %q: %s; skill resources look like skill://NAME/SKILL.md or skill://NAME/PATH", skill.Clip(uri, 200), why)}
}

// explain rewrites the SDK's terse refusals of requests it answers itself
// so that they name what the host sent and say what to do: a list cursor
// it cannot decode, a resources/read of a URI that matches none of the
// resource templates, and a prompts/get of a skill that has no prompt
// because the router does not serve it (which says why, as every other
// request for that skill does).
func (f *Front) explain(ctx context.Context, vw *view, method string, req mcpsdk.Request, err error) error {
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		return err
	}
	switch params := req.GetParams().(type) {
	case *mcpsdk.GetPromptParams:
		if params != nil && vw.key.Features&FeatureLoad != 0 {
			if res, gerr := f.router.Get(ctx, skill.GetRequest{Name: params.Name, Agent: vw.key.Agent}); gerr == nil && res.Entry != nil {
				if r := res.Entry.Skill.Refusal(); r != nil {
					return f.rpcError(ctx, skillURI(params.Name, skill.FileName), r)
				}
			}
		}
	case *mcpsdk.ListToolsParams, *mcpsdk.ListPromptsParams, *mcpsdk.ListResourcesParams, *mcpsdk.ListResourceTemplatesParams:
		if je.Code == jsonrpc.CodeInvalidParams {
			return badCursor(method, cursorOf(params))
		}
	case *mcpsdk.ReadResourceParams:
		if je.Code == mcpsdk.CodeResourceNotFound && !strings.Contains(je.Message, ": ") && params != nil {
			return unservedURI(params.URI)
		}
	}
	return err
}

// cursorOf returns the cursor of a list request's params.
func cursorOf(params mcpsdk.Params) string {
	switch p := params.(type) {
	case *mcpsdk.ListToolsParams:
		return p.Cursor
	case *mcpsdk.ListPromptsParams:
		return p.Cursor
	case *mcpsdk.ListResourcesParams:
		return p.Cursor
	case *mcpsdk.ListResourceTemplatesParams:
		return p.Cursor
	}
	return ""
}

// badCursor refuses a cursor this server did not give for method.
func badCursor(method, cursor string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
		"cursor %q is not one this server gave: pass the nextCursor of the previous %s page, or no cursor for the first page",
		skill.Clip(cursor, 80), method)}
}

// unservedURI is resource-not-found for a URI that matches none of the
// server's templates, saying why: a skill:// URI with characters it must
// percent-encode (with the URI encoded), another malformed skill:// URI, or
// another scheme.
func unservedURI(uri string) error {
	shown := skill.Clip(uri, 200)
	msg := fmt.Sprintf("Resource not found: %q is not a URI of this server, which serves skill://NAME/SKILL.md and skill://NAME/PATH", shown)
	if len(uri) >= len(uriScheme) && strings.EqualFold(uri[:len(uriScheme)], uriScheme) {
		rest := uri[len(uriScheme):]
		if strings.ContainsFunc(rest, needsEscape) {
			msg = fmt.Sprintf("Resource not found: %q is not a valid URI: percent-encode the skill name and each path segment, as in %s",
				shown, skill.Clip(encodeURI(rest), 200))
		} else {
			msg = fmt.Sprintf("Resource not found: %q: skill resources look like skill://NAME/SKILL.md or skill://NAME/PATH", shown)
		}
	}
	return notFoundMessage(uri, msg)
}

// needsEscape reports whether r may not appear as itself in a URI.
func needsEscape(r rune) bool {
	return r <= ' ' || r >= 0x7f || strings.ContainsRune("\"<>\\^`{|}", r)
}

// encodeURI percent-encodes the name and path segments of a skill URI
// written without escapes (rest is what follows skill://), leaving escapes
// already there as they are.
func encodeURI(rest string) string {
	segs := strings.Split(rest, "/")
	for i, s := range segs {
		if d, err := url.PathUnescape(s); err == nil {
			s = d
		}
		segs[i] = escape(s)
	}
	return uriScheme + strings.Join(segs, "/")
}
