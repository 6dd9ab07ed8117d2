package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

// Completion of resource template arguments, and resource subscriptions.

// maxCompletions is the most values one completion returns, as the spec
// allows.
const maxCompletions = 100

// completion answers completion/complete: for the skill:// templates, the
// names of the skills the view's agent sees ({name}) and the files of the
// named skill ({path}), each by prefix. Skill prompts take no arguments, and
// other references have nothing to complete: both get no values.
func (f *Front) completion(vw *view) func(context.Context, *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
	return func(ctx context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
		p := req.Params
		var values []string
		if p.Ref != nil && p.Ref.Type == "ref/resource" && (p.Ref.URI == templateSkill || p.Ref.URI == templateFile) {
			switch p.Argument.Name {
			case "name":
				values = vw.namesWithPrefix(p.Argument.Value)
			case "path":
				if p.Ref.URI == templateFile && p.Context != nil {
					var err error
					if values, err = f.pathsWithPrefix(ctx, vw, p.Context.Arguments["name"], p.Argument.Value); err != nil {
						return nil, err
					}
				}
			}
		}
		out := &mcpsdk.CompleteResult{Completion: mcpsdk.CompletionResultDetails{Values: []string{}, Total: len(values)}}
		if len(values) > maxCompletions {
			values, out.Completion.HasMore = values[:maxCompletions], true
		}
		out.Completion.Values = append(out.Completion.Values, values...)
		return out, nil
	}
}

// namesWithPrefix returns the names of the skills the view's agent sees
// that start with prefix, ignoring case, in order.
func (vw *view) namesWithPrefix(prefix string) []string {
	names := vw.names.Load()
	if names == nil {
		return nil
	}
	low := strings.ToLower(prefix)
	i := sort.Search(len(*names), func(i int) bool { return strings.ToLower((*names)[i]) >= low })
	var out []string
	for _, n := range (*names)[i:] {
		if !strings.HasPrefix(strings.ToLower(n), low) {
			break
		}
		out = append(out, n)
	}
	return out
}

// pathsWithPrefix returns the paths of the files of skill name that start
// with prefix: SKILL.md and every other file the skill's listing names. A
// skill the view's agent does not see has none.
func (f *Front) pathsWithPrefix(ctx context.Context, vw *view, name, prefix string) ([]string, error) {
	if name == "" {
		return nil, nil
	}
	res, err := f.servedSkill(ctx, vw.key.Agent, name, false)
	var de *skill.Error
	switch {
	case errors.As(err, &de) && de.Code != skill.CodeInternal && de.Code != skill.CodeUnavailable:
		return nil, nil
	case err != nil:
		return nil, f.rpcError(ctx, "", err)
	}
	var out []string
	for _, p := range append([]string{skill.FileName}, resourcePaths(res.Entry.Skill)...) {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out, nil
}

func resourcePaths(s *skill.Skill) []string {
	out := make([]string, 0, len(s.Resources))
	for _, r := range s.Resources {
		out = append(out, r.Path)
	}
	return out
}

// maxSubscriptions bounds the URIs one view's sessions may subscribe to.
const maxSubscriptions = 1000

// subscriptions are the URIs a view's sessions subscribed to, each with
// its sessions and what it last described, so that a change can be told.
type subscriptions struct {
	mu   sync.Mutex
	uris map[string]*subscription
}

type subscription struct {
	sessions map[*mcpsdk.ServerSession]bool
	state    string
}

// subscribe records a subscription. Any URI is accepted (a skill may appear
// later); only skill:// URIs of skills the view's agent sees ever change.
func (f *Front) subscribe(vw *view) func(context.Context, *mcpsdk.SubscribeRequest) error {
	return func(ctx context.Context, req *mcpsdk.SubscribeRequest) error {
		uri := req.Params.URI
		if uri == "" || len(uri) > maxURIBytes {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "subscribe needs a resource URI of at most 4096 bytes"}
		}
		st := f.fingerprint(ctx, vw, uri, map[string]*skill.GetResult{})
		vw.subs.mu.Lock()
		defer vw.subs.mu.Unlock()
		if vw.subs.uris == nil {
			vw.subs.uris = map[string]*subscription{}
		}
		sub, ok := vw.subs.uris[uri]
		if !ok {
			if len(vw.subs.uris) >= maxSubscriptions {
				return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("too many subscriptions (%d) on this connection's view", maxSubscriptions)}
			}
			sub = &subscription{sessions: map[*mcpsdk.ServerSession]bool{}, state: st}
			vw.subs.uris[uri] = sub
		}
		sub.sessions[req.Session] = true
		return nil
	}
}

// unsubscribe forgets a session's subscription, and the URI with its last
// session.
func (f *Front) unsubscribe(vw *view) func(context.Context, *mcpsdk.UnsubscribeRequest) error {
	return func(_ context.Context, req *mcpsdk.UnsubscribeRequest) error {
		vw.subs.mu.Lock()
		defer vw.subs.mu.Unlock()
		if sub, ok := vw.subs.uris[req.Params.URI]; ok {
			delete(sub.sessions, req.Session)
			if len(sub.sessions) == 0 {
				delete(vw.subs.uris, req.Params.URI)
			}
		}
		return nil
	}
}

// subscribedURIs returns the URIs subscribed to, first forgetting the
// sessions that have closed.
func (vw *view) subscribedURIs() []string {
	open := map[*mcpsdk.ServerSession]bool{}
	for ss := range vw.srv.Sessions() {
		open[ss] = true
	}
	vw.subs.mu.Lock()
	defer vw.subs.mu.Unlock()
	uris := make([]string, 0, len(vw.subs.uris))
	for uri, sub := range vw.subs.uris {
		for ss := range sub.sessions {
			if !open[ss] {
				delete(sub.sessions, ss)
			}
		}
		if len(sub.sessions) == 0 {
			delete(vw.subs.uris, uri)
			continue
		}
		uris = append(uris, uri)
	}
	return uris
}

// notifySubscribers describes every subscribed URI again and sends
// notifications/resources/updated for those that changed.
func (f *Front) notifySubscribers(ctx context.Context, vw *view) {
	uris := vw.subscribedURIs()
	cache := map[string]*skill.GetResult{}
	for _, uri := range uris {
		st := f.fingerprint(ctx, vw, uri, cache)
		vw.subs.mu.Lock()
		sub, ok := vw.subs.uris[uri]
		changed := ok && sub.state != st
		if ok {
			sub.state = st
		}
		vw.subs.mu.Unlock()
		if changed {
			if err := vw.srv.ResourceUpdated(ctx, &mcpsdk.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
				f.log.Warn("cannot send resources/updated", "uri", skill.Clip(uri, 200), "err", err)
			}
		}
	}
}

// fingerprint describes what a subscribed URI reads now: for a skill's
// SKILL.md or folder, every file of the skill (a change to any is a change
// to the skill); for a file, its digest; for a folder inside the skill, the
// files under it. URIs that name no skill of the view's agent describe
// their absence. cache holds the manifests read in this pass, by skill name.
func (f *Front) fingerprint(ctx context.Context, vw *view, uri string, cache map[string]*skill.GetResult) string {
	name, file, err := parseURI(uri)
	if err != nil {
		return "not a skill URI"
	}
	res, ok := cache[name]
	if !ok {
		res, err = f.servedSkill(ctx, vw.key.Agent, name, true)
		if err != nil {
			var de *skill.Error
			if errors.As(err, &de) && de.Code != skill.CodeInternal && de.Code != skill.CodeUnavailable {
				res = nil // not served: its absence is the state
			} else {
				return "unknown: " + err.Error()
			}
		}
		cache[name] = res
	}
	if res == nil || res.Manifest == nil {
		return "absent"
	}
	if file == skill.FileName {
		file = ""
	}
	h := sha256.New()
	for _, fd := range res.Manifest.Files {
		if file == "" || fd.Path == file || strings.HasPrefix(fd.Path, file+"/") {
			fmt.Fprintf(h, "%s %s\n", fd.Path, fd.SHA256)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
