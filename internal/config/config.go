// Package config reads the router's settings from, in increasing precedence,
// built-in defaults, a YAML file, MCPSAG_* environment variables and command
// line flags. The file is by default .mcp/.mcp-config.yaml under the
// workspace. Relative paths in it are relative to the workspace; relative
// paths given as flags or environment variables are relative to the working
// directory, as with any command.
package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/upstream"
	"github.com/mcpsag/router/models"
)

// DefaultFile is the config file's path relative to the workspace.
const DefaultFile = ".mcp/.mcp-config.yaml"

// maxFileBytes caps the config file.
const maxFileBytes = 1 << 20

// Config is the router's whole configuration. YAML keys are the snake_case
// names in the struct tags.
type Config struct {
	// Addr is the gRPC listen address.
	Addr string `yaml:"addr"`
	// Workspace holds skills/ and agents/*/skills/ by default.
	Workspace string `yaml:"workspace"`
	// StateDir holds the bbolt cache; default <workspace>/.mcp/state.
	StateDir string `yaml:"state_dir"`
	// AdminAddr serves /metrics; empty disables it.
	AdminAddr string `yaml:"admin_addr"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level"`

	// Roots replaces the default roots when set.
	Roots []Root `yaml:"roots"`
	// Precedence orders source kinds, highest first.
	Precedence []string `yaml:"precedence"`

	Limits Limits `yaml:"limits"`
	Watch  Watch  `yaml:"watch"`
	Load   Load   `yaml:"load"`
	Flags  Flags  `yaml:"flags"`
	Model  Model  `yaml:"model"`
	// Match configures ranking and abstention (see internal/match and
	// docs/matching.md); keys left out keep their defaults.
	Match     match.Config `yaml:"match"`
	Shutdown  Shutdown     `yaml:"shutdown"`
	Telemetry Telemetry    `yaml:"telemetry"`
	Exec      Exec         `yaml:"exec"`
	Auth      Auth         `yaml:"auth"`
	TLS       TLS          `yaml:"tls"`
	// TrustedProxies are the proxies (IP addresses, CIDR networks) whose
	// forwarded client address counts (auth.Proxies).
	TrustedProxies []string `yaml:"trusted_proxies"`
	// MCP configures the Model Context Protocol front over Streamable
	// HTTP (the stdio front, router mcp, needs no settings of its own).
	MCP MCP `yaml:"mcp"`
	// MCPServers are the MCP servers whose tools the router indexes next
	// to skills, by name (see internal/upstream). Hot-reloaded.
	MCPServers map[string]upstream.ServerConfig `yaml:"mcp_servers"`

	// File is the config file that was read, empty when none.
	File string `yaml:"-"`
	// Sources says where each setting that is not a default came from,
	// keyed by its dotted YAML path ("addr", "match.fusion.rule").
	Sources map[string]Source `yaml:"-"`
}

// MCP configures the Streamable HTTP front.
type MCP struct {
	// Addr serves MCP at http(s)://Addr/mcp; empty turns it off. It uses
	// the tls settings, and auth's tokens when auth is enabled.
	Addr string `yaml:"addr"`
	// AllowedOrigins are browser origins (scheme://host[:port]) accepted
	// besides the router's own; a request with another Origin gets 403.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// SessionTimeout closes sessions idle for this long.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// MaxBodyBytes caps one request body.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxSessions caps the live sessions; a client that would open one
	// more gets 503 with Retry-After.
	MaxSessions int `yaml:"max_sessions"`
}

// Root is one configured skill root.
type Root struct {
	// Path may contain one "*" segment (agents/*/skills).
	Path string `yaml:"path"`
	// Kind is project, user, learned or bundled.
	Kind string `yaml:"kind"`
	// Agent scopes the root to one agent; "*" takes the agent from the
	// path's "*" segment.
	Agent string `yaml:"agent"`
}

// Limits bound what the router reads.
type Limits struct {
	MaxSkillFileBytes   int64 `yaml:"max_skill_file_bytes"`
	MaxFrontmatterBytes int   `yaml:"max_frontmatter_bytes"`
	MaxResourceBytes    int64 `yaml:"max_resource_bytes"`
	// MaxSkillFiles and MaxSkillBytes bound one skill (its SKILL.md and
	// the other files the router lists, and their bytes): a skill over
	// either is served by no front (skill.SizeLimits).
	MaxSkillFiles int   `yaml:"max_skill_files"`
	MaxSkillBytes int64 `yaml:"max_skill_bytes"`
}

// The largest limits a config may set, so that no reply about one skill
// (its body, one resource, or its frontmatter, which a reply may carry as
// fields and as JSON, each character escaped at worst) grows past the 16
// MiB the gRPC front sends.
const (
	MaxSkillFileBytesCap   = 8 << 20
	MaxFrontmatterBytesCap = 512 << 10
	MaxResourceBytesCap    = 8 << 20
)

// Watch configures hot reload.
type Watch struct {
	// Enabled turns on file system events; the periodic rescan runs
	// regardless unless RescanInterval is 0.
	Enabled        bool          `yaml:"enabled"`
	Debounce       time.Duration `yaml:"debounce"`
	RescanInterval time.Duration `yaml:"rescan_interval"`
	// ServeLastScan makes a start serve the skill files the last scan
	// found (kept in the state directory) as soon as the cache is read,
	// and scan the roots right after: a change made while the router was
	// stopped is served once that scan ends. Off, a start scans before it
	// serves.
	ServeLastScan bool `yaml:"serve_last_scan"`
}

// Load configures staged loading.
type Load struct {
	DefaultTokenBudget int `yaml:"default_token_budget"`
	MaxTokenBudget     int `yaml:"max_token_budget"`
}

// Flags are feature flags.
type Flags struct {
	// SkillsV1 turns routing on; when off Match abstains with reason
	// "disabled".
	SkillsV1 bool `yaml:"skills_v1"`
	// SkillsExec allows AuthorizeExec to grant script runs.
	SkillsExec bool `yaml:"skills_exec"`
	// ToolsCall lets CallTool (and the MCP front's call_tool) forward
	// calls to the MCP servers' tools that the allowlist names.
	ToolsCall bool `yaml:"tools_call"`
}

// Model configures the embedding model. Zero values take the model folder's
// defaults (its mcpsag-model.json), then built-in ones.
type Model struct {
	// Dir is a model folder in the Hugging Face layout (model.onnx or
	// onnx/model.onnx, tokenizer.json); empty means the bundled default.
	Dir string `yaml:"dir"`
	// Disabled turns embeddings off: matching uses keywords only.
	Disabled bool `yaml:"disabled"`
	// Name overrides the model's display name.
	Name string `yaml:"name"`
	// QueryPrefix and DocumentPrefix are instructions some models expect
	// ("query: ", "passage: " for e5; a query instruction for bge).
	QueryPrefix    string `yaml:"query_prefix"`
	DocumentPrefix string `yaml:"document_prefix"`
	// MaxTokens caps tokens per text; BatchSize texts per model run.
	MaxTokens int `yaml:"max_tokens"`
	BatchSize int `yaml:"batch_size"`
	// MatchThreshold is the cosine level below which a match abstains;
	// it belongs to the model, since cosine scales differ between models.
	MatchThreshold float64 `yaml:"match_threshold"`
	// BodyChars adds the start of each skill's body to the embedded text
	// (name and description); 0 takes the model's own value (its
	// mcpsag-model.json), -1 embeds name and description only.
	BodyChars int `yaml:"body_chars"`
	// Timeout bounds one model run; a slower run degrades to keywords.
	Timeout time.Duration `yaml:"timeout"`
	// QueryCacheSize is how many task embeddings are kept (LRU).
	QueryCacheSize int `yaml:"query_cache_size"`
	// SyncDocuments is the most new skill texts a reindex embeds with the
	// model before it publishes; when more are new (a first start, a new
	// model, a large change), they are embedded in the background while
	// the fast model's vectors are served, and the model's are served
	// once all are computed. -1 embeds every text before publishing: a
	// start then waits for embeddings.
	SyncDocuments int `yaml:"sync_documents"`
	// Fast is the fast model.
	Fast FastModel `yaml:"fast"`
}

// FastModel configures the fast model: a static model, embedding in well
// under a millisecond, whose vectors are served while the model's are
// computed in the background, and when the model is unavailable.
type FastModel struct {
	// Dir is its folder; empty means the bundled fast model.
	Dir string `yaml:"dir"`
	// Disabled serves keywords only in those times.
	Disabled bool `yaml:"disabled"`
}

// Exec configures script execution approvals.
type Exec struct {
	// AllowlistFile lists the scripts that may run; default
	// <workspace>/skills/ALLOWLIST.txt. See package allowlist for the format.
	AllowlistFile string `yaml:"allowlist_file"`
}

// Auth configures bearer-token access control (see package auth for the
// tokens file format). Off by default for local use.
type Auth struct {
	Enabled bool `yaml:"enabled"`
	// TokensFile holds token hashes, groups, agents and rate limits.
	TokensFile string `yaml:"tokens_file"`
}

// TLS configures the gRPC listener's transport security.
type TLS struct {
	// CertFile and KeyFile turn TLS on; both are re-read when they change.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientCAFile turns on mutual TLS: clients must present a certificate
	// signed by one of these CAs.
	ClientCAFile string `yaml:"client_ca_file"`
}

// Enabled reports whether TLS is configured.
func (t TLS) Enabled() bool { return t.CertFile != "" }

// Telemetry configures what events may contain. Exporters are configured by
// the standard OTEL_* environment variables.
type Telemetry struct {
	// RecordTaskText puts task text into skill_selected events; by default
	// only a keyed hash of it is recorded.
	RecordTaskText bool `yaml:"record_task_text"`
	// Pprof serves Go's profiles under /debug/pprof/ on the admin
	// listener. Off by default: anyone who reaches the admin address
	// could read them, and a profile can hold fragments of memory.
	Pprof bool `yaml:"pprof"`
}

// Shutdown configures the two-stage stop.
type Shutdown struct {
	// Drain is how long health reports NOT_SERVING before the server
	// stops accepting calls, so load balancers can move away.
	Drain time.Duration `yaml:"drain"`
	// Grace is how long in-flight calls get to finish.
	Grace time.Duration `yaml:"grace"`
}

// Default returns the built-in configuration. It includes the bundled
// model's calibrated abstention (models.Calibration).
func Default() Config {
	cfg := builtin()
	if err := yaml.Unmarshal(models.Calibration, &cfg); err != nil {
		return builtin() // a build defect: TestBundledCalibration fails on it
	}
	return cfg
}

// maxSkillFiles bounds limits.max_skill_files: the scan lists that many
// files of every skill.
const maxSkillFiles = 100000

func builtin() Config {
	return Config{
		Addr:     "127.0.0.1:7443",
		LogLevel: "info",
		Limits: Limits{
			MaxSkillFileBytes:   1 << 20,
			MaxFrontmatterBytes: 64 << 10,
			MaxResourceBytes:    1 << 20,
			MaxSkillFiles:       skill.DefaultSizeLimits.MaxFiles,
			MaxSkillBytes:       skill.DefaultSizeLimits.MaxBytes,
		},
		Watch:    Watch{Enabled: true, Debounce: 250 * time.Millisecond, RescanInterval: time.Minute, ServeLastScan: true},
		Load:     Load{DefaultTokenBudget: 5000, MaxTokenBudget: 50000},
		Flags:    Flags{SkillsV1: true, SkillsExec: false},
		Shutdown: Shutdown{Drain: 0, Grace: 10 * time.Second},
		Match:    match.DefaultConfig(),
		Model:    Model{SyncDocuments: 64},
		MCP:      MCP{SessionTimeout: 30 * time.Minute, MaxBodyBytes: 2 << 20, MaxSessions: 1000},
	}
}

// Overrides are settings given on the command line. Empty fields are unset,
// except for the listeners named in Off.
type Overrides struct {
	Addr, Workspace, StateDir, ConfigFile, AdminAddr, ModelDir, LogLevel, MCPAddr string
	// Off names the listeners given an empty address (--admin-addr "",
	// --mcp-addr ""): OffAdmin, OffMCP. They stay off whatever the config
	// file says.
	Off []string
}

// The listeners Overrides.Off may name: the keys of their addresses.
const (
	OffAdmin = "admin_addr"
	OffMCP   = "mcp.addr"
)

// LookupEnv reads one environment variable: its value, and whether it is
// set at all (os.LookupEnv).
type LookupEnv func(key string) (string, bool)

// Getenv adapts a getenv function, which cannot tell a variable set to ""
// from an unset one, to a LookupEnv that reports only non-empty variables.
func Getenv(getenv func(string) string) LookupEnv {
	return func(key string) (string, bool) {
		v := getenv(key)
		return v, v != ""
	}
}

// envOverrides reads MCPSAG_* variables through lookup. MCPSAG_ADMIN_ADDR
// and MCPSAG_MCP_ADDR set to "" turn their listeners off.
func envOverrides(lookup LookupEnv) Overrides {
	get := func(key string) string {
		v, _ := lookup(key)
		return v
	}
	o := Overrides{
		Addr:       get("MCPSAG_ADDR"),
		Workspace:  get("MCPSAG_WORKSPACE"),
		StateDir:   get("MCPSAG_STATE_DIR"),
		ConfigFile: get("MCPSAG_CONFIG"),
		AdminAddr:  get("MCPSAG_ADMIN_ADDR"),
		ModelDir:   get("MCPSAG_MODEL_DIR"),
		LogLevel:   get("MCPSAG_LOG_LEVEL"),
		MCPAddr:    get("MCPSAG_MCP_ADDR"),
	}
	for key, env := range map[string]string{OffAdmin: "MCPSAG_ADMIN_ADDR", OffMCP: "MCPSAG_MCP_ADDR"} {
		if v, set := lookup(env); set && v == "" {
			o.Off = append(o.Off, key)
		}
	}
	return o
}

// EnvNames lists the environment variables Resolve reads, for help texts.
var EnvNames = []string{"MCPSAG_ADDR", "MCPSAG_WORKSPACE", "MCPSAG_STATE_DIR", "MCPSAG_CONFIG", "MCPSAG_ADMIN_ADDR", "MCPSAG_MODEL_DIR", "MCPSAG_LOG_LEVEL", "MCPSAG_MCP_ADDR"}

// Resolve builds the configuration: defaults, then the config file, then the
// environment, then flags. The config file is flags.ConfigFile, else
// MCPSAG_CONFIG, else DefaultFile under the workspace when it exists. A named
// file that does not exist is an error; the default file may be absent.
// getenv cannot tell an empty variable from an unset one: use ResolveEnv for
// MCPSAG_ADMIN_ADDR= and MCPSAG_MCP_ADDR= to turn listeners off.
func Resolve(flags Overrides, getenv func(string) string) (Config, error) {
	return ResolveEnv(flags, Getenv(getenv))
}

// ResolveEnv is Resolve reading the environment through lookup, so that a
// listener's variable set to "" turns it off.
func ResolveEnv(flags Overrides, lookup LookupEnv) (Config, error) {
	env := envOverrides(lookup)
	cfg := Default()

	workspace := cmp.Or(flags.Workspace, env.Workspace)
	file := cmp.Or(flags.ConfigFile, env.ConfigFile)
	named := file != ""
	if !named {
		ws := workspace
		if ws == "" {
			ws = "."
		}
		file = filepath.Join(ws, DefaultFile)
	}
	cfg.Sources = map[string]Source{}
	keys, err := readFile(file, &cfg)
	if err != nil {
		// The default file is absent when the workspace does not exist
		// or is not a folder: the daemon says so, better than this would.
		if named || !(errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) {
			return Config{}, err
		}
	} else {
		cfg.File = file
		for _, k := range keys {
			cfg.Sources[k] = Source{Kind: SourceFile, Name: file}
		}
	}

	for _, o := range []struct {
		set  Overrides
		kind SourceKind
	}{{env, SourceEnv}, {flags, SourceFlag}} {
		cfg.Addr = cmp.Or(o.set.Addr, cfg.Addr)
		cfg.Workspace = cmp.Or(o.set.Workspace, cfg.Workspace)
		cfg.StateDir = cmp.Or(fromWorkingDir(o.set.StateDir), cfg.StateDir)
		cfg.AdminAddr = orOff(o.set, OffAdmin, o.set.AdminAddr, cfg.AdminAddr)
		cfg.Model.Dir = cmp.Or(fromWorkingDir(o.set.ModelDir), cfg.Model.Dir)
		cfg.LogLevel = cmp.Or(o.set.LogLevel, cfg.LogLevel)
		cfg.MCP.Addr = orOff(o.set, OffMCP, o.set.MCPAddr, cfg.MCP.Addr)
		cfg.noteOverrides(o.set, o.kind)
	}
	if problems := cfg.finish(); len(problems) > 0 {
		return Config{}, cfg.blame(problems)
	}
	return cfg, nil
}

// orOff returns "" when o turns the listener key off, else set when it is
// not empty, else was.
func orOff(o Overrides, key, set, was string) string {
	if slices.Contains(o.Off, key) {
		return ""
	}
	return cmp.Or(set, was)
}

// readFile decodes a YAML config file into cfg, rejecting unknown keys so a
// typo is an error rather than a silently ignored setting. It returns the
// dotted paths of the settings the file sets.
func readFile(path string, cfg *Config) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("config %s is over %d bytes", path, maxFileBytes)
	}
	if err := decodeFile(data, path, cfg); err != nil {
		return nil, err
	}
	return settingPaths(data), nil
}

// decodeFile decodes a config file's content into cfg.
func decodeFile(data []byte, path string, cfg *Config) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) { // EOF: only comments
		return fmt.Errorf("config %s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return nil
}

// finish makes paths absolute and validates. Each problem it returns starts
// with the key at fault (blame names where that key's value came from).
func (c *Config) finish() []error {
	if err := c.absPaths(); err != nil {
		return []error{err}
	}
	errs := c.validateCore()
	errs = append(errs, c.validateListeners()...)
	for _, name := range sortedNames(c.MCPServers) {
		s := c.MCPServers[name]
		s.Name = name
		s.ResolvePaths(c.Workspace)
		if err := s.Validate(); err != nil {
			errs = append(errs, err)
		}
		c.MCPServers[name] = s
	}
	if c.MCP.SessionTimeout <= 0 || c.MCP.MaxBodyBytes <= 0 || c.MCP.MaxSessions <= 0 {
		errs = append(errs, errors.New("mcp: session_timeout, max_body_bytes and max_sessions must be positive"))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log_level %q: want debug, info, warn or error", c.LogLevel))
	}
	return errs
}

// absPaths fills the default workspace, state folder and allowlist, and
// makes every path absolute.
func (c *Config) absPaths() error {
	if c.Workspace == "" {
		c.Workspace = "."
	}
	ws, err := filepath.Abs(c.Workspace)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	c.Workspace = ws
	if c.StateDir == "" {
		c.StateDir = filepath.Join(ws, ".mcp", "state")
	}
	c.StateDir = c.abs(c.StateDir)
	if c.Model.Dir != "" {
		c.Model.Dir = c.abs(c.Model.Dir)
	}
	if c.Exec.AllowlistFile == "" {
		c.Exec.AllowlistFile = "skills/ALLOWLIST.txt"
	}
	c.Exec.AllowlistFile = c.abs(c.Exec.AllowlistFile)
	for _, p := range []*string{&c.Auth.TokensFile, &c.TLS.CertFile, &c.TLS.KeyFile, &c.TLS.ClientCAFile} {
		if *p != "" {
			*p = c.abs(*p)
		}
	}
	return nil
}

// validateCore checks the roots, precedence, limits, budgets, model, match
// and watch settings.
func (c *Config) validateCore() []error {
	var errs []error
	if _, err := c.RootSpecsKinds(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.PrecedenceKinds(); err != nil {
		errs = append(errs, err)
	}
	if c.Addr == "" {
		errs = append(errs, errors.New("addr: empty; want host:port such as 127.0.0.1:7443"))
	}
	if c.Limits.MaxSkillFileBytes <= 0 || c.Limits.MaxFrontmatterBytes <= 0 || c.Limits.MaxResourceBytes <= 0 ||
		c.Limits.MaxSkillFiles <= 0 || c.Limits.MaxSkillBytes <= 0 {
		errs = append(errs, errors.New("limits: every limit must be positive"))
	}
	if c.Limits.MaxSkillFiles > maxSkillFiles {
		errs = append(errs, fmt.Errorf("limits: max_skill_files %d is over %d", c.Limits.MaxSkillFiles, maxSkillFiles))
	}
	if c.Limits.MaxSkillFileBytes > MaxSkillFileBytesCap || c.Limits.MaxFrontmatterBytes > MaxFrontmatterBytesCap || c.Limits.MaxResourceBytes > MaxResourceBytesCap {
		errs = append(errs, fmt.Errorf("limits: at most %d for max_skill_file_bytes, %d for max_frontmatter_bytes and %d for max_resource_bytes, so that a reply about one skill fits in a message",
			MaxSkillFileBytesCap, MaxFrontmatterBytesCap, MaxResourceBytesCap))
	}
	if c.Load.DefaultTokenBudget <= 0 || c.Load.MaxTokenBudget < c.Load.DefaultTokenBudget {
		errs = append(errs, fmt.Errorf("load: want 0 < default_token_budget (%d) <= max_token_budget (%d)", c.Load.DefaultTokenBudget, c.Load.MaxTokenBudget))
	}
	if c.Model.MaxTokens < 0 || c.Model.BatchSize < 0 || c.Model.BodyChars < -1 || c.Model.Timeout < 0 {
		errs = append(errs, errors.New("model: max_tokens, batch_size and timeout must not be negative, and body_chars at least -1 (none)"))
	}
	if c.Model.SyncDocuments < -1 {
		errs = append(errs, fmt.Errorf("model: sync_documents %d: want -1 (every text before publishing) or more", c.Model.SyncDocuments))
	}
	if c.Model.MatchThreshold < -1 || c.Model.MatchThreshold > 1 {
		errs = append(errs, fmt.Errorf("model: match_threshold %g is not a cosine (-1 to 1)", c.Model.MatchThreshold))
	}
	if err := c.Match.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("match: %w", err))
	}
	if c.Watch.Debounce < 0 || c.Watch.RescanInterval < 0 {
		errs = append(errs, errors.New("watch: durations must not be negative"))
	}
	return errs
}

// Servers returns the configured MCP servers, sorted by name.
func (c *Config) Servers() []upstream.ServerConfig {
	out := make([]upstream.ServerConfig, 0, len(c.MCPServers))
	for _, name := range sortedNames(c.MCPServers) {
		s := c.MCPServers[name]
		s.Name = name
		out = append(out, s)
	}
	return out
}

func sortedNames(m map[string]upstream.ServerConfig) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (c *Config) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(c.Workspace, p)
}

// RootSpecsKinds returns the configured roots with validated kinds; nil when
// none are configured (the loader then uses its defaults).
func (c *Config) RootSpecsKinds() ([]RootKind, error) {
	var out []RootKind
	for i, r := range c.Roots {
		k, err := skill.ParseSourceKind(r.Kind)
		if err != nil {
			return nil, fmt.Errorf("roots[%d]: %w", i, err)
		}
		if r.Path == "" {
			return nil, fmt.Errorf("roots[%d]: path is empty", i)
		}
		out = append(out, RootKind{Path: r.Path, Kind: k, Agent: r.Agent})
	}
	return out, nil
}

// RootKind is a root with its kind parsed.
type RootKind struct {
	Path  string
	Kind  skill.SourceKind
	Agent string
}

// PrecedenceKinds parses the precedence list; nil means the default order.
func (c *Config) PrecedenceKinds() ([]skill.SourceKind, error) {
	var out []skill.SourceKind
	seen := map[skill.SourceKind]bool{}
	for i, s := range c.Precedence {
		k, err := skill.ParseSourceKind(s)
		if err != nil {
			return nil, fmt.Errorf("precedence[%d]: %w", i, err)
		}
		if seen[k] {
			return nil, fmt.Errorf("precedence: %s listed twice", k)
		}
		seen[k] = true
		out = append(out, k)
	}
	return out, nil
}

// Redacted renders the configuration as YAML for --print-config.
func (c Config) Redacted() string {
	b, err := yaml.Marshal(c)
	if err != nil {
		return "# cannot render config: " + strconv.Quote(err.Error())
	}
	return string(b)
}

// fromWorkingDir makes a path given on the command line or in the
// environment absolute against the working directory; finish resolves the
// config file's relative paths against the workspace instead.
func fromWorkingDir(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
