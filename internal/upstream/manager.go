package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

// Options configure a Manager. The zero value works.
type Options struct {
	// ClientName and ClientVersion identify the router to servers.
	ClientName, ClientVersion string
	// Getenv reads the router's environment: from_env values and the
	// variables a stdio server inherits. Nil means os.Getenv.
	Getenv func(string) string
	// MinBackoff and MaxBackoff bound the wait between attempts to reach
	// a failed server (doubling, with jitter); 0 means 1s and 5m.
	MinBackoff, MaxBackoff time.Duration
	// RefreshInterval is the least time between two listings of one
	// server after list_changed; 0 means 1s.
	RefreshInterval time.Duration
	// TerminateGrace is how long a stdio server gets to exit after its
	// stdin closes, and again after SIGTERM; 0 means 2s.
	TerminateGrace time.Duration
	Logger         *slog.Logger
}

// Manager keeps the configured MCP servers connected and serves a snapshot
// of their tools. It is safe for concurrent use.
type Manager struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	configs map[string]ServerConfig
	clients map[string]*client
	closed  bool
	changes chan struct{}
}

// New returns a Manager with no servers; Apply configures them.
func New(opts Options) *Manager {
	if opts.ClientName == "" {
		opts.ClientName = "mcpsag-router"
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = "dev"
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 5 * time.Minute
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.MinBackoff)
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = time.Second
	}
	if opts.TerminateGrace <= 0 {
		opts.TerminateGrace = 2 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		opts: opts, log: log.With("component", "upstream"),
		configs: map[string]ServerConfig{}, clients: map[string]*client{}, changes: make(chan struct{}, 1),
	}
}

// Apply makes the running servers match servers (config reload): a new or
// changed server is (re)started when enabled, a removed or disabled one is
// stopped, an unchanged one keeps its session. A stdio server starts only
// here, from the operator's configuration. Servers must be valid
// (ServerConfig.Validate).
func (m *Manager) Apply(servers []ServerConfig) {
	want := make(map[string]ServerConfig, len(servers))
	for _, s := range servers {
		want[s.Name] = s
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	var stop []*client
	var start []*client
	for name, c := range m.clients {
		if w, ok := want[name]; !ok || !w.IsEnabled() || !reflect.DeepEqual(w, m.configs[name]) {
			stop = append(stop, c)
			delete(m.clients, name)
		}
	}
	for name, cfg := range want {
		if _, running := m.clients[name]; running || !cfg.IsEnabled() {
			continue
		}
		c := newClient(m, cfg)
		m.clients[name] = c
		start = append(start, c)
	}
	m.configs = want
	m.mu.Unlock()

	var wg sync.WaitGroup
	for _, c := range stop {
		wg.Go(c.stop)
	}
	wg.Wait()
	for _, c := range start {
		c.start()
	}
	if len(stop) > 0 || len(start) > 0 {
		m.notify()
	}
}

// notify tells the Changes reader that the tools or a server's state changed.
func (m *Manager) notify() {
	select {
	case m.changes <- struct{}{}:
	default:
	}
}

// Changes receives a value after the served tools changed: a server became
// ready or failed, or its list changed. Bursts coalesce.
func (m *Manager) Changes() <-chan struct{} { return m.changes }

// Tools returns the tools of every ready server, sorted by entry name, and a
// digest that changes whenever they do. It never blocks on a server. The
// entries are shared and must not be modified.
func (m *Manager) Tools() ([]*skill.Skill, string) {
	m.mu.Lock()
	names := make([]string, 0, len(m.clients))
	clients := make(map[string]*client, len(m.clients))
	for n, c := range m.clients {
		names = append(names, n)
		clients[n] = c
	}
	m.mu.Unlock()
	sort.Strings(names)
	h := sha256.New()
	var out []*skill.Skill
	for _, n := range names {
		set := clients[n].served()
		if set == nil {
			continue
		}
		h.Write([]byte(set.digest))
		out = append(out, set.tools...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		return nil, ""
	}
	return out, hex.EncodeToString(h.Sum(nil))
}

// Settled reports whether every enabled server is ready (its tools listed).
func (m *Manager) Settled() bool {
	m.mu.Lock()
	clients := make([]*client, 0, len(m.clients))
	for _, c := range m.clients {
		clients = append(clients, c)
	}
	m.mu.Unlock()
	for _, c := range clients {
		if c.live() == nil {
			return false
		}
	}
	return true
}

// Servers describes every configured server, sorted by name; disabled ones
// included.
func (m *Manager) Servers() []skill.ServerStatus {
	m.mu.Lock()
	var out []skill.ServerStatus
	for name, cfg := range m.configs {
		if c, ok := m.clients[name]; ok {
			out = append(out, c.status())
			continue
		}
		d := cfg.withDefaults()
		st := skill.ServerStatus{Name: name, Transport: d.Transport, State: skill.ServerDisabled, Trusted: cfg.Trusted(),
			Agents: cfg.Agents, Resources: -1, Prompts: -1}
		if d.Transport == TransportHTTP {
			st.Endpoint = endpoint(cfg.URL)
		}
		out = append(out, st)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Wait blocks until every enabled server has finished its first attempt
// (ready or failed), or ctx ends.
func (m *Manager) Wait(ctx context.Context) error {
	m.mu.Lock()
	var firsts []chan struct{}
	for _, c := range m.clients {
		firsts = append(firsts, c.first)
	}
	m.mu.Unlock()
	for _, ch := range firsts {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close stops every server (stdin closed, then SIGTERM, then SIGKILL after
// TerminateGrace each) and waits for them.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	clients := m.clients
	m.clients = map[string]*client{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(c.stop)
	}
	wg.Wait()
	return nil
}

// client returns the running client of a server.
func (m *Manager) client(name string) (*client, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.clients[name]
	return c, ok
}
