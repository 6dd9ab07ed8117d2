package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/mcpsag/router/internal/skill"
)

// Bounds of one listing.
const (
	maxListPages = 1000
	maxCountable = 100000 // resources or prompts counted per server
)

// subscriptionsAcknowledged is the notification a server sends once it has
// registered a session's subscriptions/listen stream.
const subscriptionsAcknowledged = "notifications/subscriptions/acknowledged"

// inheritedEnv names the variables of the router's environment a stdio
// server gets, besides those its env sets: enough to find programs and
// behave like a user's process, nothing that might carry the router's own
// secrets.
var inheritedEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES",
	"TERM", "TMPDIR", "TZ", "SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT", "APPDATA", "LOCALAPPDATA",
	"USERPROFILE", "PROGRAMDATA",
}

// client keeps one server connected: it starts it (or reaches it over
// HTTP), initializes a session, lists its tools, refreshes them on
// list_changed, and reconnects with backoff when the session fails. While
// it is not connected its tools are absent.
type client struct {
	m       *Manager
	cfg     ServerConfig // defaults filled
	log     *slog.Logger
	cancel  context.CancelFunc
	done    chan struct{} // closed when run returns
	first   chan struct{} // closed when the first attempt ends
	once    sync.Once
	refresh chan struct{} // a list_changed is pending
	limiter *rate.Limiter
	stderr  *tail

	mu   sync.Mutex
	st   skill.ServerStatus
	set  *toolSet // served tools; nil while absent
	sess *mcpsdk.ClientSession
	red  *redactor
}

func newClient(m *Manager, cfg ServerConfig) *client {
	cfg = cfg.withDefaults()
	c := &client{
		m: m, cfg: cfg, log: m.log.With("server", cfg.Name),
		done: make(chan struct{}), first: make(chan struct{}), refresh: make(chan struct{}, 1),
		stderr: &tail{}, red: newRedactor(&cfg, nil),
	}
	if cfg.Rate > 0 {
		burst := cfg.Burst
		if burst == 0 {
			burst = max(1, int(cfg.Rate))
		}
		c.limiter = rate.NewLimiter(rate.Limit(cfg.Rate), burst)
	}
	c.st = skill.ServerStatus{
		Name: cfg.Name, Transport: cfg.Transport, State: skill.ServerStarting, Trusted: cfg.Trusted(),
		Agents: cfg.Agents, Resources: -1, Prompts: -1,
	}
	if cfg.Transport == TransportHTTP {
		c.st.Endpoint = endpoint(cfg.URL)
	}
	return c
}

// start runs the client until stop.
func (c *client) start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go c.run(ctx)
}

// stop ends the session (a stdio server gets its stdin closed, then
// SIGTERM, then SIGKILL) and waits for the client to finish.
func (c *client) stop() {
	c.cancel()
	<-c.done
}

func (c *client) firstDone() { c.once.Do(func() { close(c.first) }) }

func (c *client) run(ctx context.Context) {
	defer close(c.done)
	defer c.firstDone()
	backoff := c.m.opts.MinBackoff
	for attempt := 0; ; attempt++ {
		began := time.Now()
		err := c.session(ctx)
		if ctx.Err() != nil {
			c.update(func(st *skill.ServerStatus) { st.State = skill.ServerStopped })
			return
		}
		if time.Since(began) > 2*c.m.opts.MaxBackoff {
			backoff = c.m.opts.MinBackoff // it ran well for a while
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		c.fail(err, time.Now().Add(wait))
		c.firstDone()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			c.update(func(st *skill.ServerStatus) { st.State = skill.ServerStopped })
			return
		case <-t.C:
		}
		backoff = min(backoff*2, c.m.opts.MaxBackoff)
		c.update(func(st *skill.ServerStatus) { st.Restarts++; st.State = skill.ServerStarting })
	}
}

// fail records a failed attempt: its tools are absent until the next one
// succeeds.
func (c *client) fail(err error, next time.Time) {
	if err == nil {
		err = errors.New("the session ended")
	}
	msg := err.Error()
	c.mu.Lock()
	hadTools := c.set != nil
	c.set, c.sess = nil, nil
	c.st.State, c.st.LastError, c.st.LastErrorAt, c.st.NextAttempt = skill.ServerFailed, msg, time.Now(), next
	c.st.Tools = 0
	c.mu.Unlock()
	c.log.Warn("MCP server unavailable; its tools are absent until it is back", "err", msg, "retry_at", next.Format(time.RFC3339))
	if hadTools {
		c.m.notify()
	}
}

func (c *client) update(f func(*skill.ServerStatus)) {
	c.mu.Lock()
	f(&c.st)
	c.mu.Unlock()
}

// session runs one connection until it fails or ctx ends.
func (c *client) session(ctx context.Context) error {
	relist := func() {
		select {
		case c.refresh <- struct{}{}:
		default:
		}
	}
	pages := &rawPages{}
	tr, exited, cleanup, err := c.transport(pages, relist)
	if err != nil {
		return err
	}
	defer cleanup()
	sess, err := c.connect(ctx, c.newSDKClient(relist), tr, exited)
	if err != nil {
		return err
	}
	defer sess.Close()
	ended := make(chan error, 1)
	go func() { ended <- sess.Wait() }()

	c.noteInitialize(sess.InitializeResult())
	if err := c.list(ctx, sess, pages, false); err != nil {
		return err
	}
	c.mu.Lock()
	c.sess = sess
	c.st.State, c.st.LastError, c.st.NextAttempt = skill.ServerReady, "", time.Time{}
	n := len(c.set.tools)
	c.mu.Unlock()
	c.log.Info("MCP server ready", "tools", n)
	c.m.notify()
	c.firstDone()
	return c.follow(ctx, sess, pages, ended, exited)
}

// newSDKClient returns the SDK's client for one connection; relist asks
// for the tools to be listed again.
func (c *client) newSDKClient(relist func()) *mcpsdk.Client {
	onChange := func() {
		c.update(func(st *skill.ServerStatus) { st.ListChanged++ })
		relist()
	}
	cl := mcpsdk.NewClient(&mcpsdk.Implementation{Name: c.m.opts.ClientName, Version: c.m.opts.ClientVersion}, &mcpsdk.ClientOptions{
		// The router offers no roots, sampling or elicitation: a server
		// cannot ask the router (or, through it, a model) for anything.
		Capabilities:               &mcpsdk.ClientCapabilities{},
		ToolListChangedHandler:     func(context.Context, *mcpsdk.ToolListChangedRequest) { onChange() },
		ResourceListChangedHandler: func(context.Context, *mcpsdk.ResourceListChangedRequest) { onChange() },
		PromptListChangedHandler:   func(context.Context, *mcpsdk.PromptListChangedRequest) { onChange() },
		Logger:                     slog.New(slog.DiscardHandler),
	})
	// On a protocol that sends list_changed only to sessions with a
	// subscriptions/listen stream, the SDK opens the stream as it connects
	// but does not wait for the server to register it, and the first
	// listing may come before that: a change in between would not be
	// notified. The server acknowledges the stream once it is registered,
	// and the tools are listed again then.
	cl.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if method == subscriptionsAcknowledged {
				relist()
			}
			return next(ctx, method, req)
		}
	})
	return cl
}

// connect initializes a session over tr within the startup timeout,
// explaining a failure.
func (c *client) connect(ctx context.Context, cl *mcpsdk.Client, tr mcpsdk.Transport, exited func() string) (*mcpsdk.ClientSession, error) {
	cctx, cancel := context.WithTimeout(ctx, c.cfg.StartupTimeout)
	sess, err := cl.Connect(cctx, tr, nil)
	timedOut := cctx.Err() == context.DeadlineExceeded
	cancel()
	if err == nil {
		return sess, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if timedOut {
		return nil, fmt.Errorf("initialize: no answer within startup_timeout %s", c.cfg.StartupTimeout)
	}
	if how := exited(); how != "" {
		return nil, fmt.Errorf("the server process exited during initialize (%s); see its stderr", how)
	}
	return nil, fmt.Errorf("initialize: %s", c.redact(err))
}

// noteInitialize records the connection and what the server said of itself.
func (c *client) noteInitialize(init *mcpsdk.InitializeResult) {
	c.update(func(st *skill.ServerStatus) {
		st.ConnectedAt = time.Now()
		if init != nil {
			st.ProtocolVersion, _ = Clean(init.ProtocolVersion, 40)
			if si := init.ServerInfo; si != nil {
				st.ServerName, _ = Clean(si.Name, 80)
				st.ServerVersion, _ = Clean(si.Version, 40)
			}
		}
	})
}

// follow lists the tools again on each refresh until the session ends
// (ended) or ctx does.
func (c *client) follow(ctx context.Context, sess *mcpsdk.ClientSession, pages *rawPages, ended <-chan error, exited func() string) error {
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-ended:
			return c.endedError(err, exited)
		case <-c.refresh:
		}
		// A flood of list_changed notifications costs at most one listing
		// per RefreshInterval.
		if wait := time.Until(last.Add(c.m.opts.RefreshInterval)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case err := <-ended:
				t.Stop()
				return c.endedError(err, exited)
			case <-t.C:
			}
			select {
			case <-c.refresh:
			default:
			}
		}
		last = time.Now()
		if err := c.list(ctx, sess, pages, true); err != nil {
			return err
		}
	}
}

// endedError explains a session that ended on the server's side.
func (c *client) endedError(err error, exited func() string) error {
	msg := "the server closed the connection"
	if c.cfg.Transport == TransportStdio {
		msg = "the server process closed its output"
		if how := exited(); how != "" {
			msg = "the server process exited (" + how + ")"
		}
	}
	if err != nil {
		msg += ": " + c.redact(err)
	}
	return errors.New(msg)
}

func (c *client) redact(err error) string {
	c.mu.Lock()
	r := c.red
	c.mu.Unlock()
	return skill.Clip(r.redact(err.Error()), 500)
}

// transport builds the connection's transport, reading secrets now; exited
// says how a stdio server's process ended ("" while it runs, or for HTTP),
// and cleanup ends what the transport started. The transport keeps the raw
// tools of each tools/list answer in pages; over HTTP, it calls reopened
// when the server accepts the session's standalone SSE stream again after
// a break.
func (c *client) transport(pages *rawPages, reopened func()) (tr mcpsdk.Transport, exited func() string, cleanup func(), err error) {
	sec := &secrets{getenv: c.m.opts.Getenv}
	switch c.cfg.Transport {
	case TransportStdio:
		return c.stdioTransport(pages, sec)
	case TransportHTTP:
		tr, cleanup, err := c.httpTransport(pages, reopened, sec)
		return tr, func() string { return "" }, cleanup, err
	}
	return nil, nil, nil, fmt.Errorf("unknown transport %q", c.cfg.Transport)
}

// secrets resolves a server's configured values, remembering each one for
// the redactor.
type secrets struct {
	getenv   func(string) string
	resolved []string
}

func (s *secrets) resolve(where string, v Value) (string, error) {
	r, err := v.resolve(s.getenv)
	if err != nil {
		return "", fmt.Errorf("%s: %w", where, err)
	}
	s.resolved = append(s.resolved, r)
	return r, nil
}

// stdioTransport starts nothing yet: it returns the transport that starts
// the server's process with its environment, and how that process ended.
func (c *client) stdioTransport(pages *rawPages, sec *secrets) (mcpsdk.Transport, func() string, func(), error) {
	env := make([]string, 0, len(inheritedEnv)+len(c.cfg.Env))
	for _, k := range inheritedEnv {
		if v := sec.getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range sortedKeys(c.cfg.Env) {
		v, err := sec.resolve("env "+k, c.cfg.Env[k])
		if err != nil {
			return nil, nil, nil, err
		}
		env = append(env, k+"="+v)
	}
	c.setRedactor(sec.resolved)
	cmd := exec.Command(c.cfg.Command, c.cfg.Args...)
	cmd.Env, cmd.Dir, cmd.Stderr = env, c.cfg.Cwd, c.stderr
	setProcessGroup(cmd)
	if cmd.Err != nil {
		return nil, nil, nil, fmt.Errorf("start the server process: %s", c.redact(cmd.Err))
	}
	tr := &startCheck{inner: &mcpsdk.CommandTransport{Command: cmd, TerminateDuration: c.m.opts.TerminateGrace}, c: c}
	exited := func() string {
		if ps := cmd.ProcessState; ps != nil {
			return ps.String()
		}
		return ""
	}
	return &rawTransport{inner: tr, pages: pages}, exited, func() { killProcessGroup(cmd) }, nil
}

// httpTransport returns the Streamable HTTP transport with the configured
// headers and bearer token.
func (c *client) httpTransport(pages *rawPages, reopened func(), sec *secrets) (mcpsdk.Transport, func(), error) {
	h := http.Header{}
	for _, k := range sortedKeys(c.cfg.Headers) {
		v, err := sec.resolve("header "+k, c.cfg.Headers[k])
		if err != nil {
			return nil, nil, err
		}
		h.Set(k, v)
	}
	if c.cfg.BearerToken != nil {
		v, err := sec.resolve("bearer_token", *c.cfg.BearerToken)
		if err != nil {
			return nil, nil, err
		}
		h.Set("Authorization", "Bearer "+v)
	}
	c.setRedactor(sec.resolved)
	base := http.DefaultTransport.(*http.Transport).Clone()
	// A server may hold a call's response headers until the result
	// is ready: allow the longer of the two deadlines.
	base.ResponseHeaderTimeout = max(c.cfg.StartupTimeout, c.cfg.CallTimeout)
	hc := &http.Client{Transport: &headerTransport{base: &rawHTTP{base: base, pages: pages, reopened: reopened}, headers: h}}
	tr := &mcpsdk.StreamableClientTransport{Endpoint: c.cfg.URL, HTTPClient: hc, MaxRetries: 2}
	return tr, base.CloseIdleConnections, nil
}

func (c *client) setRedactor(resolved []string) {
	r := newRedactor(&c.cfg, resolved)
	c.mu.Lock()
	c.red = r
	c.mu.Unlock()
}

// startCheck turns a failure to start the process into a redacted error.
type startCheck struct {
	inner mcpsdk.Transport
	c     *client
}

func (s *startCheck) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	conn, err := s.inner.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("start the server process: %s", s.c.redact(err))
	}
	return conn, nil
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// list fetches the tool list (and counts resources and prompts), normalises
// it, and serves it when it changed.
func (c *client) list(ctx context.Context, sess *mcpsdk.ClientSession, pages *rawPages, refresh bool) error {
	lctx, cancel := context.WithTimeout(ctx, c.cfg.StartupTimeout)
	defer cancel()
	var caps *mcpsdk.ServerCapabilities
	if init := sess.InitializeResult(); init != nil {
		caps = init.Capabilities
	}
	var raw []json.RawMessage
	truncated := 0
	var diag []string
	if caps == nil || caps.Tools != nil {
		var err error
		if raw, truncated, diag, err = c.listTools(ctx, lctx, sess, pages); err != nil {
			return err
		}
	}
	set := normalize(&c.cfg, raw, truncated)
	for _, d := range diag {
		set.diag.addf("%s", d)
	}
	resources, prompts := -1, -1
	if caps != nil && caps.Resources != nil {
		resources = count(lctx, sess.Resources(lctx, nil))
	}
	if caps != nil && caps.Prompts != nil {
		prompts = count(lctx, sess.Prompts(lctx, nil))
	}

	c.mu.Lock()
	changed := c.set == nil || c.set.digest != set.digest
	c.set = set
	st := &c.st
	st.Tools, st.ToolsListed, st.ToolsFiltered, st.ToolsDropped = len(set.tools), set.listed, set.filtered, set.bad
	st.Diagnostics = set.diag.result()
	st.Resources, st.Prompts = resources, prompts
	st.ListedAt = time.Now()
	if refresh {
		st.Refreshes++
	}
	ready := st.State == skill.ServerReady
	c.mu.Unlock()
	if changed && ready {
		c.log.Info("MCP server's tools changed", "tools", len(set.tools))
		c.m.notify()
	}
	return nil
}

// listTools reads the pages of tools/list within lctx (up to maxListPages,
// and MaxTools tools: truncated counts the others), each tool as the server
// wrote it; diag says what went wrong on the way without failing it.
func (c *client) listTools(ctx, lctx context.Context, sess *mcpsdk.ClientSession, pages *rawPages) (raw []json.RawMessage, truncated int, diag []string, err error) {
	cursor := ""
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page == maxListPages {
			diag = append(diag, fmt.Sprintf("the tool list has more than %d pages; listing stopped there", maxListPages))
			return raw, truncated, diag, nil
		}
		res, err := sess.ListTools(lctx, &mcpsdk.ListToolsParams{Cursor: cursor})
		got, next, ok := pages.take()
		switch {
		case err != nil && ok:
			// The answer is a tools array, but some tool in it does
			// not decode as the protocol says: read it tool by tool.
			diag = append(diag, fmt.Sprintf("a tools/list page does not decode as the protocol says (%s); its tools were read one by one", skill.Clip(c.redact(err), 200)))
		case err != nil:
			if ctx.Err() != nil {
				return nil, 0, nil, ctx.Err()
			}
			if lctx.Err() != nil {
				return nil, 0, nil, fmt.Errorf("tools/list: no answer within startup_timeout %s", c.cfg.StartupTimeout)
			}
			return nil, 0, nil, fmt.Errorf("tools/list: %s", c.redact(err))
		case !ok: // answered from the SDK's cache: re-encode its tools
			got, next = got[:0], res.NextCursor
			for _, t := range res.Tools {
				b, _ := json.Marshal(t)
				got = append(got, b)
			}
		}
		for _, t := range got {
			if len(raw) < c.cfg.MaxTools {
				raw = append(raw, t)
			} else {
				truncated++
			}
		}
		switch {
		case next == "", truncated > 0:
			return raw, truncated, diag, nil
		case seen[next]:
			diag = append(diag, "the server repeated a page cursor; listing stopped there")
			return raw, truncated, diag, nil
		}
		seen[next] = true
		cursor = next
	}
}

// count counts the items of a listing, up to maxCountable; -1 when the
// listing fails.
func count[T any](ctx context.Context, seq func(func(*T, error) bool)) int {
	n := 0
	for _, err := range seq {
		if err != nil || ctx.Err() != nil {
			if n == 0 {
				return -1
			}
			return n
		}
		if n++; n >= maxCountable {
			break
		}
	}
	return n
}

// served returns the tools served and their digest; nil while absent.
func (c *client) served() *toolSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.set
}

// status returns the server's status with the stderr tail, redacted.
func (c *client) status() skill.ServerStatus {
	c.mu.Lock()
	st := c.st
	st.Diagnostics = append([]string(nil), st.Diagnostics...)
	r := c.red
	c.mu.Unlock()
	if c.cfg.Transport == TransportStdio {
		st.StderrTail = r.lines(c.stderr.Lines())
	}
	st.LastError = r.redact(st.LastError)
	return st
}

// errUnavailable says the server cannot take calls now.
func (c *client) errUnavailable() error {
	c.mu.Lock()
	st := c.st
	c.mu.Unlock()
	msg := fmt.Sprintf("MCP server %s is not connected (%s)", c.cfg.Name, st.State)
	if st.LastError != "" {
		msg += ": " + skill.Clip(st.LastError, 200)
	}
	return skill.Errorf(skill.CodeUnavailable, "%s; retry later, or ask an operator to check routerctl servers", msg).
		WithReason(skill.ReasonServerUnavailable)
}

// session returns the live session, or nil.
func (c *client) live() *mcpsdk.ClientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st.State != skill.ServerReady {
		return nil
	}
	return c.sess
}
