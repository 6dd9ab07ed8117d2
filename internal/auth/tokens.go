// Package auth guards the router's fronts: bearer tokens read from a file
// that stores only their sha256, each bound to groups of operations and to
// agents, with a per-token rate limit; the gRPC interceptors, with an audit
// record for every admin call (health checks are always open). Each front
// names the operation of each of its methods (the gRPC front's
// server.Methods, the MCP front's features); operations.go holds the one
// table of which group grants each operation.
//
// Tokens file (YAML):
//
//	tokens:
//	  - id: ci-agent              # shown in audit records, never the token
//	    sha256: 5e884898da28...   # hex sha256 of the token (routerctl token prints one)
//	    groups: [match, load]     # read, match, load, exec, admin; "*" for all
//	    agents: [coder]           # agents it may act for; empty or "*" for any
//	    servers: [github]         # MCP servers whose tools it sees and calls; empty or "*" for all
//	    rate: 20                  # requests per second; 0 = unlimited
//	    burst: 40                 # default: rate
//
// Groups: read = ListSkills, GetSkill, Status and server reflection
// (DescribeAPI); match = Match; load = Load; exec = AuthorizeExec,
// ReportExecResult, CallTool; admin = Reindex.
package auth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/time/rate"

	"github.com/mcpsag/router/internal/filestamp"
)

// Group is a set of methods a token may call.
type Group string

// Method groups.
const (
	GroupRead  Group = "read"
	GroupMatch Group = "match"
	GroupLoad  Group = "load"
	GroupExec  Group = "exec"
	GroupAdmin Group = "admin"
)

var allGroups = []Group{GroupRead, GroupMatch, GroupLoad, GroupExec, GroupAdmin}

// Principal is an authenticated caller.
type Principal struct {
	ID     string
	groups map[Group]bool
	// agents is nil when the token may act for any agent.
	agents map[string]bool
	// servers is nil when the token may reach every MCP server.
	servers []string
	limiter *rate.Limiter
}

// Anonymous is the principal of calls when token authentication is off.
var Anonymous = &Principal{ID: "anonymous"}

// Allows reports whether the principal may call methods of group g.
func (p *Principal) Allows(g Group) bool { return p == Anonymous || p.groups[g] }

// ActsFor reports whether the principal may act for agent ("" is the global
// view, which only unrestricted tokens may use).
func (p *Principal) ActsFor(agent string) bool { return p.agents == nil || p.agents[agent] }

// Servers returns the MCP servers whose tools the principal sees and calls,
// nil for all (see skill.Scope).
func (p *Principal) Servers() []string {
	if p == nil {
		return nil
	}
	return p.servers
}

// Admit takes one request from the principal's rate limit. It returns 0 when
// the request may proceed, or how long to wait before a retry can succeed; a
// refused request takes nothing. Principals without a limit always proceed.
func (p *Principal) Admit() time.Duration {
	if p == nil || p.limiter == nil {
		return 0
	}
	r := p.limiter.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return d
	}
	return 0
}

// Groups lists the principal's groups, for messages.
func (p *Principal) Groups() []string {
	var out []string
	for _, g := range allGroups {
		if p.groups[g] {
			out = append(out, string(g))
		}
	}
	return out
}

type tokenFile struct {
	Tokens []tokenSpec `yaml:"tokens"`
}

type tokenSpec struct {
	ID      string   `yaml:"id"`
	SHA256  string   `yaml:"sha256"`
	Groups  []string `yaml:"groups"`
	Agents  []string `yaml:"agents"`
	Servers []string `yaml:"servers"`
	Rate    float64  `yaml:"rate"`
	Burst   int      `yaml:"burst"`
}

type token struct {
	hash [32]byte
	p    *Principal
	spec tokenSpec
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$`)

// CheckTokensFile reports what the router would refuse in a tokens file's
// content, as LoadTokens reads it; nil when it would accept it.
func CheckTokensFile(data []byte) error {
	_, err := parseTokens(data)
	return err
}

// parseTokens validates a tokens file.
func parseTokens(data []byte) ([]*token, error) {
	var f tokenFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a tokens file: %v", err)
	}
	var out []*token
	seen := map[string]bool{}
	hashes := map[string]string{} // sha256 -> the id it was first seen with
	for i, s := range f.Tokens {
		where := fmt.Sprintf("tokens[%d]", i)
		if !idRE.MatchString(s.ID) {
			return nil, fmt.Errorf("%s: id %q must be 1-128 letters, digits, '.', '_', '@' or '-'", where, s.ID)
		}
		if seen[s.ID] {
			return nil, fmt.Errorf("%s: id %q appears twice", where, s.ID)
		}
		seen[s.ID] = true
		h, err := hex.DecodeString(strings.ToLower(s.SHA256))
		if err != nil || len(h) != 32 {
			return nil, fmt.Errorf("%s (%s): sha256 must be 64 hex digits (routerctl token prints one)", where, s.ID)
		}
		if other, dup := hashes[string(h)]; dup {
			// Only one entry's privileges could apply to the token.
			return nil, fmt.Errorf("%s (%s): sha256 is also %s's: one token cannot have two entries; give each its own token", where, s.ID, other)
		}
		hashes[string(h)] = s.ID
		p, err := s.principal(where)
		if err != nil {
			return nil, err
		}
		t := &token{p: p, spec: s}
		copy(t.hash[:], h)
		out = append(out, t)
	}
	return out, nil
}

// principal returns the principal of a token entry (where names the entry
// in errors): its groups, agents, servers and rate limit.
func (s tokenSpec) principal(where string) (*Principal, error) {
	p := &Principal{ID: s.ID, groups: map[Group]bool{}}
	if len(s.Groups) == 0 {
		return nil, fmt.Errorf("%s (%s): groups is empty; name what the token may call (read, match, load, exec, admin)", where, s.ID)
	}
	for _, g := range s.Groups {
		if g == "*" {
			for _, all := range allGroups {
				p.groups[all] = true
			}
			continue
		}
		if !slices.Contains(allGroups, Group(g)) {
			return nil, fmt.Errorf("%s (%s): unknown group %q (want read, match, load, exec, admin or *)", where, s.ID, g)
		}
		p.groups[Group(g)] = true
	}
	if len(s.Agents) > 0 && !slices.Contains(s.Agents, "*") {
		p.agents = map[string]bool{}
		for _, a := range s.Agents {
			p.agents[a] = true
		}
	}
	if len(s.Servers) > 0 && !slices.Contains(s.Servers, "*") {
		p.servers = slices.Clone(s.Servers)
	}
	if s.Rate < 0 || s.Burst < 0 {
		return nil, fmt.Errorf("%s (%s): rate and burst must not be negative", where, s.ID)
	}
	if s.Rate > 0 {
		burst := s.Burst
		if burst == 0 {
			burst = max(1, int(s.Rate))
		}
		p.limiter = rate.NewLimiter(rate.Limit(s.Rate), burst)
	}
	return p, nil
}

// Tokens is the set of valid tokens, read from a file and re-read when the
// file changes (checked at most once a second). A broken edit keeps the
// previous tokens in force and is logged.
type Tokens struct {
	path  string
	log   *slog.Logger
	files filestamp.Watch

	mu     sync.Mutex
	tokens []*token
}

// LoadTokens reads a tokens file. Unlike later reloads, a broken file here is
// an error: the router must not start with authentication it cannot apply.
// Rejected edits later are logged to log (once per edit).
func LoadTokens(path string, log *slog.Logger) (*Tokens, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Tokens{path: path, log: log, files: filestamp.Watch{Paths: []string{path}, Interval: time.Second}}
	t.files.Mark()
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	if err := t.read(); err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return t, nil
}

func (t *Tokens) read() error {
	data, err := os.ReadFile(t.path)
	if err != nil {
		return err
	}
	toks, err := parseTokens(data)
	if err != nil {
		return err
	}
	// Keep rate limiter state for tokens whose limits did not change.
	for _, nt := range toks {
		for _, ot := range t.tokens {
			if ot.spec.ID == nt.spec.ID && ot.spec.Rate == nt.spec.Rate && ot.spec.Burst == nt.spec.Burst {
				nt.p.limiter = ot.p.limiter
			}
		}
	}
	t.tokens = toks
	return nil
}

// refresh re-reads the file when it changed (checked at most once a
// second). A rejected edit is logged once.
func (t *Tokens) refresh() {
	if !t.files.Changed() {
		return
	}
	if err := t.read(); err != nil {
		t.log.Error("tokens file edit rejected; the previous tokens stay in force", "path", t.path, "err", err)
		return
	}
	t.log.Info("tokens file reloaded", "path", t.path, "tokens", len(t.tokens))
}

// Authenticate returns the principal of a presented token. It compares the
// token's sha256 with every stored hash in constant time and does not stop at
// the first match, so timing reveals neither which token matched nor how much
// of one did.
func (t *Tokens) Authenticate(presented string) (*Principal, bool) {
	t.mu.Lock()
	t.refresh()
	toks := t.tokens
	t.mu.Unlock()
	sum := sha256.Sum256([]byte(presented))
	var found *Principal
	for _, tok := range toks {
		if subtle.ConstantTimeCompare(sum[:], tok.hash[:]) == 1 {
			found = tok.p
		}
	}
	return found, found != nil
}

// HashToken returns the hex sha256 of a token, as stored in the tokens file.
func HashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}
