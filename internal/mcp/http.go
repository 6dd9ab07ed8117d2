package mcp

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/skill"
)

// HTTP paths.
const (
	// Path is where the Streamable HTTP transport is served.
	Path = "/mcp"
	// MetadataPath serves the OAuth 2.0 Protected Resource Metadata
	// (RFC 9728) when tokens are on; it is also served with Path appended,
	// as RFC 9728 section 3.1 derives it from the resource URL.
	MetadataPath = "/.well-known/oauth-protected-resource"
)

// HTTP defaults.
const (
	DefaultMaxBodyBytes   = 2 << 20
	DefaultSessionTimeout = 30 * time.Minute
	DefaultBodyTimeout    = 30 * time.Second
)

// eventStoreBytes bounds the messages kept for clients that reconnect to a
// broken event stream, across every session; the oldest go first.
const eventStoreBytes = 8 << 20

// statelessProtocol is the first protocol revision without sessions: its
// requests go to a stateless handler, the only kind the SDK serves it on.
const statelessProtocol = "2026-07-28"

// HTTPOptions configure HTTPHandler. The zero value serves without tokens,
// refuses every request that carries an Origin header, and uses the defaults
// above.
type HTTPOptions struct {
	// Tokens, when set, requires a bearer token from this file on every
	// request: its groups decide the features offered (FeaturesOf), its
	// agents the agents a client may act for, its rate limit applies to
	// every MCP request.
	Tokens *auth.Tokens
	// AllowedOrigins lists the exact origins ("https://app.example.com")
	// browser clients may call from. A request with any other Origin
	// header gets 403; requests without one (every non-browser client) pass.
	AllowedOrigins []string
	// MaxBodyBytes bounds a request body; larger bodies get 413.
	MaxBodyBytes int64
	// SessionTimeout closes sessions idle this long.
	SessionTimeout time.Duration
	// MaxSessions bounds the live sessions (DefaultMaxSessions when 0): a
	// request that would open one more gets 503 with Retry-After.
	MaxSessions int
	// Failures limits failed authentication per client address and in
	// total (auth.FailureLimiter; share the gRPC front's, so that an
	// address has one budget); nil means a limiter of its own.
	Failures *auth.FailureLimiter
	// Proxies are the trusted proxies: a request from one of them is taken
	// as coming from the client it forwards for (X-Forwarded-For,
	// X-Real-IP), for the failure limit and the audit.
	Proxies auth.Proxies
	// BodyTimeout bounds the reading of a request's body, from the end of
	// its headers: a client that sends it slower, or never, has its
	// connection closed.
	BodyTimeout time.Duration
	// ResourceURL is the public URL of the /mcp endpoint, named in the
	// protected resource metadata and in WWW-Authenticate. Empty means it
	// is derived from each request (scheme and Host).
	ResourceURL string
}

// HTTPHandler returns the handler of the Streamable HTTP transport: Path
// (and, with tokens, MetadataPath). Each request passes, in order: an Origin
// check (403), the bearer token (401 with WWW-Authenticate; 429 past the
// failed-authentication limit), the choice of agent (?agent=NAME; 400 when
// malformed, 403 when the token may not act for it), the SDK's
// DNS-rebinding protection on loopback listeners (a Host that is not
// loopback gets 403) and body limit (413), then the MCP session, whose
// requests each check the token's groups and rate limit.
func (f *Front) HTTPHandler(o HTTPOptions) http.Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.Failures == nil {
		o.Failures = auth.NewFailureLimiter()
	}
	h := &httpFront{f: f, o: o, sessions: &sessionGate{max: o.MaxSessions, live: f.liveSessions}}
	events := mcpsdk.NewMemoryEventStore(nil)
	events.SetMaxBytes(eventStoreBytes)
	h.sdk = mcpsdk.NewStreamableHTTPHandler(serverOf, &mcpsdk.StreamableHTTPOptions{
		Logger:              f.log,
		SessionTimeout:      o.SessionTimeout,
		MaxRequestBodyBytes: o.MaxBodyBytes,
		// Each event stream starts with an event id (SEP-1699's priming
		// event), and a client whose stream broke reconnects with
		// Last-Event-ID and gets what it missed, while it is kept.
		EventStore: events,
	})
	h.stateless = mcpsdk.NewStreamableHTTPHandler(serverOf, &mcpsdk.StreamableHTTPOptions{
		Logger:              f.log,
		Stateless:           true,
		MaxRequestBodyBytes: o.MaxBodyBytes,
		// A client that gives up on a request closes its stream: the
		// router's work for it stops too.
		PropagateRequestCancellation: true,
	})
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	if o.Tokens != nil {
		mux.HandleFunc(MetadataPath, h.metadata)
		mux.HandleFunc(MetadataPath+Path, h.metadata)
	}
	return mux
}

type httpFront struct {
	f *Front
	o HTTPOptions
	// sdk serves the protocol revisions with sessions, stateless the
	// later ones.
	sdk, stateless *mcpsdk.StreamableHTTPHandler
	// sessions bounds the live sessions.
	sessions *sessionGate
}

type serverKey struct{}

// serverOf hands the SDK the server chosen for the request's view.
func serverOf(r *http.Request) *mcpsdk.Server {
	s, _ := r.Context().Value(serverKey{}).(*mcpsdk.Server)
	return s
}

func (h *httpFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Body != nil && r.Body != http.NoBody {
		// The body must arrive within BodyTimeout, read or not: the server
		// reads what a refused request leaves of it before the next one.
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(h.o.BodyTimeout)) == nil {
			r.Body = &timedBody{ReadCloser: r.Body, rc: rc}
		}
	}
	// The caller: the connection's remote address, or the client a trusted
	// proxy forwards for; the failure limit and the audit count it.
	client := h.o.Proxies.Client(remoteAddr(r.RemoteAddr), r.Header.Values)
	r = r.WithContext(peer.NewContext(r.Context(), &peer.Peer{Addr: client}))
	origins := r.Header.Values("Origin")
	if len(origins) > 0 {
		if len(origins) > 1 || !slices.Contains(h.o.AllowedOrigins, origins[0]) && !sameLoopbackOrigin(origins[0], r.Host) {
			h.refuse(r, w, http.StatusForbidden, "origin", principalUnauthenticated,
				fmt.Sprintf("Origin %q is not allowed to call this MCP server (allowed origins are configured on the router)", skill.Clip(strings.Join(origins, ", "), 200)))
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origins[0])
		w.Header().Add("Vary", "Origin")
		w.Header().Set("Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
			w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID")
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	r.Header.Del(peerHeader)
	r.Header.Set(peerHeader, auth.PeerAddr(r.Context()))
	if h.o.Tokens == nil {
		h.serveView(w, r, nil)
		return
	}
	if h.limited(w, r) {
		return
	}
	if !hasBearer(r) {
		h.audit(r, principalUnauthenticated, "no_token")
	}
	metaURL := h.metadataURL(r)
	sdkauth.RequireBearerToken(h.verify, &sdkauth.RequireBearerTokenOptions{
		ResourceMetadataURL:    metaURL,
		AllowMissingExpiration: true, // tokens in the file do not expire; removing one revokes it
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ti := sdkauth.TokenInfoFromContext(r.Context())
		p, _ := ti.Extra[tokenExtraPrincipal].(*auth.Principal)
		h.serveView(w, r, p)
	})).ServeHTTP(w, r)
}

// limited counts the request's authentication against the client's budget
// of failures (auth.FailureLimiter: a token that fails spends it, a repeat
// of one does not) and, when the budget is spent, answers 429 with
// Retry-After, the token unchecked, and reports true.
func (h *httpFront) limited(w http.ResponseWriter, r *http.Request) bool {
	tok, ok := bearerToken(r)
	presented := ""
	if ok {
		sum := sha256.Sum256([]byte(tok))
		presented = string(sum[:])
	}
	_, err := h.o.Failures.Attempt(r.Context(), "http", nil, presented, func() string {
		if !ok {
			return auth.ReasonNoToken
		}
		if _, valid := h.o.Tokens.Authenticate(tok); !valid {
			return auth.ReasonBadToken
		}
		return ""
	})
	if err == nil {
		return false
	}
	for _, d := range status.Convert(err).Details() {
		if ri, isRetry := d.(*errdetails.RetryInfo); isRetry {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(ri.GetRetryDelay().AsDuration().Seconds()))))
		}
	}
	http.Error(w, status.Convert(err).Message(), http.StatusTooManyRequests)
	return true
}

// remoteAddr parses an http.Request's RemoteAddr for the failure limiter.
func remoteAddr(s string) net.Addr {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return &net.TCPAddr{}
	}
	return net.TCPAddrFromAddrPort(ap)
}

// bearerToken returns the token of r's Authorization header, as the SDK's
// bearer middleware reads it.
func bearerToken(r *http.Request) (string, bool) {
	fields := strings.Fields(r.Header.Get("Authorization"))
	if len(fields) != 2 || !strings.EqualFold(fields[0], "bearer") {
		return "", false
	}
	return fields[1], true
}

// timedBody is a request body read under a deadline (BodyTimeout), which is
// lifted once it is read: a response streamed after it is not cut.
type timedBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		if err == io.EOF {
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	}
	return n, err
}

// hasBearer reports whether r carries an Authorization header the SDK's
// bearer middleware will read a token from.
func hasBearer(r *http.Request) bool {
	_, ok := bearerToken(r)
	return ok
}

// verify checks a bearer token against the tokens file.
func (h *httpFront) verify(_ context.Context, tok string, r *http.Request) (*sdkauth.TokenInfo, error) {
	p, ok := h.o.Tokens.Authenticate(tok)
	if !ok {
		h.audit(r, principalUnauthenticated, "bad_token")
		return nil, fmt.Errorf("%w: it is not one of this router's tokens", sdkauth.ErrInvalidToken)
	}
	return &sdkauth.TokenInfo{
		Scopes: p.Groups(),
		// Binds each session to the token that opened it: the SDK answers
		// 403 to another token presenting its session id.
		UserID: p.ID,
		Extra:  map[string]any{tokenExtraPrincipal: p},
	}, nil
}

// serveView picks the request's view (its agent and the token's features)
// and hands the request to the SDK with that view's server.
func (h *httpFront) serveView(w http.ResponseWriter, r *http.Request, p *auth.Principal) {
	v, no := h.viewOf(r, p)
	if no != nil {
		h.refuse(r, w, no.code, no.reason, no.principal, no.msg)
		return
	}
	srv, err := h.f.Server(r.Context(), v)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, ErrTooManyViews) {
			code = http.StatusServiceUnavailable
		}
		h.refuse(r, w, code, "view", principalID(p), err.Error())
		return
	}
	h.serveSDK(w, r.WithContext(context.WithValue(r.Context(), serverKey{}, srv)))
}

// viewRefusal says why a request gets no view: the HTTP status, the
// audit's reason and principal, and the message.
type viewRefusal struct {
	code                   int
	reason, principal, msg string
}

// viewOf is the view a request asks for: the agent of its query (at most
// one; else the front's), with the features p's groups grant (all without
// tokens), or why p may not have it.
func (h *httpFront) viewOf(r *http.Request, p *auth.Principal) (View, *viewRefusal) {
	agents := r.URL.Query()["agent"]
	agent := h.f.opts.Agent
	if len(agents) > 1 {
		return View{}, &viewRefusal{http.StatusBadRequest, "agent", principalID(p), "name one agent: the query has agent more than once"}
	}
	if len(agents) == 1 {
		agent = agents[0]
	}
	if err := skill.ValidateAgent(agent); err != nil {
		return View{}, &viewRefusal{http.StatusBadRequest, "agent", principalID(p), err.Error()}
	}
	if p == nil {
		return View{Agent: agent, Features: AllFeatures}, nil
	}
	feat := FeaturesOf(p)
	if feat == 0 {
		return View{}, &viewRefusal{http.StatusForbidden, "scope", p.ID, fmt.Sprintf(
			"token %s has none of the groups MCP uses (match, read, load, exec); it has %s", p.ID, groupList(p))}
	}
	if !p.ActsFor(agent) {
		shown := agent
		if shown == "" {
			shown = "none (the global view)"
		}
		return View{}, &viewRefusal{http.StatusForbidden, "agent", p.ID, fmt.Sprintf(
			"token %s may not act for agent %s: add ?agent=NAME to the MCP URL with an agent the token is bound to", p.ID, skill.Clip(shown, 80))}
	}
	return View{Agent: agent, Features: feat}, nil
}

// serveSDK hands r, whose context holds its view's server, to the SDK: the
// stateless handler for the protocol versions that have no sessions, else
// the one with sessions, through the session gate when r opens one.
func (h *httpFront) serveSDK(w http.ResponseWriter, r *http.Request) {
	sdk := h.sdk
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= statelessProtocol {
		sdk = h.stateless
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Method != http.MethodPost {
		rw := &rpcErrorWriter{ResponseWriter: w}
		sdk.ServeHTTP(rw, r)
		rw.finish(postedCall{}, sid)
		return
	}
	call, ok := peekCall(r, h.o.MaxBodyBytes)
	serve := func() {
		if !ok {
			sdk.ServeHTTP(w, r)
			return
		}
		rw := &rpcErrorWriter{ResponseWriter: w}
		sdk.ServeHTTP(rw, r)
		rw.finish(call, sid)
	}
	if sdk == h.sdk && sid == "" {
		if ok && !call.opensSession() {
			refuseSessionless(w, call)
			return
		}
		// The body is read: a slow client holds no session's place.
		h.openSession(w, r, serve)
		return
	}
	serve()
}

// sameLoopbackOrigin reports whether origin is the server's own origin on
// a loopback host: a page there would have to be served by this server,
// which serves none, so no page of another site can send it.
func sameLoopbackOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Path != "" || u.User != nil {
		return false
	}
	if !strings.EqualFold(u.Host, host) {
		return false
	}
	name := u.Hostname()
	if strings.EqualFold(name, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.IsLoopback()
}

// refuse answers a request refused before MCP, and audits it.
func (h *httpFront) refuse(r *http.Request, w http.ResponseWriter, code int, reason, principal, msg string) {
	h.audit(r, principal, reason)
	http.Error(w, msg, code)
}

func (h *httpFront) audit(r *http.Request, principal, reason string) {
	if h.f.opts.Auditor == nil {
		return
	}
	h.f.opts.Auditor.MCPCalled(r.Context(), skill.MCPCall{
		Time: time.Now(), RequestID: newRequestID(), SessionID: r.Header.Get("Mcp-Session-Id"), Method: "http",
		Target: r.Method + " " + r.URL.Path, Principal: principal, Peer: auth.PeerAddr(r.Context()),
		Decision: skill.DecisionDeny, Reason: reason, Outcome: "refused",
	})
}

// resourceURL is the public URL of the MCP endpoint.
func (h *httpFront) resourceURL(r *http.Request) string {
	if h.o.ResourceURL != "" {
		return h.o.ResourceURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + Path
}

func (h *httpFront) metadataURL(r *http.Request) string {
	res := h.resourceURL(r)
	base := strings.TrimSuffix(res, Path)
	return base + MetadataPath + Path
}

// metadata serves the protected resource metadata (RFC 9728). Tokens come
// from the router's tokens file, not from an authorization server, so none
// is named; the scopes are the token groups.
func (h *httpFront) metadata(w http.ResponseWriter, r *http.Request) {
	sdkauth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               h.resourceURL(r),
		ScopesSupported:        []string{string(auth.GroupMatch), string(auth.GroupRead), string(auth.GroupLoad), string(auth.GroupExec)},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "MCPSAG skill router",
	}).ServeHTTP(w, r)
}
