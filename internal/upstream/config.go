package upstream

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsag/router/internal/skill"
)

// Transports.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// Trust levels of a server.
const (
	TrustTrusted   = "trusted"
	TrustUntrusted = "untrusted"
)

// Defaults and bounds of a ServerConfig.
const (
	DefaultStartupTimeout = 30 * time.Second
	DefaultCallTimeout    = 60 * time.Second
	DefaultMaxTools       = 2000
	MaxMaxTools           = 100000
	DefaultMaxResultBytes = 1 << 20
	MaxMaxResultBytes     = 16 << 20
)

// ServerConfig is one entry of the config file's mcp_servers map: an MCP
// server the router connects to, whose tools it indexes next to skills. The
// map key is the server's name.
type ServerConfig struct {
	// Name is the map key: 1-32 letters, digits, '_' or '-'. It prefixes
	// the server's tools ("name.tool").
	Name string `yaml:"-"`
	// Transport is stdio or http; empty means stdio when Command is set,
	// http when URL is.
	Transport string `yaml:"transport,omitempty"`

	// Command, Args, Env and Cwd start a stdio server. The router runs the
	// command as a local process it does not sandbox.
	Command string           `yaml:"command,omitempty"`
	Args    []string         `yaml:"args,omitempty"`
	Env     map[string]Value `yaml:"env,omitempty"`
	Cwd     string           `yaml:"cwd,omitempty"`

	// URL and Headers reach a Streamable HTTP server; BearerToken adds
	// "Authorization: Bearer <token>".
	URL         string           `yaml:"url,omitempty"`
	Headers     map[string]Value `yaml:"headers,omitempty"`
	BearerToken *Value           `yaml:"bearer_token,omitempty"`

	// Enabled is true unless set to false; a disabled server is not
	// started and its tools are absent.
	Enabled *bool `yaml:"enabled,omitempty"`
	// EnabledTools, when set, serves only the tools whose upstream names
	// match one of its patterns (path.Match syntax: '*', '?', '[...]');
	// DisabledTools never serves those that match one of its. Deny wins.
	EnabledTools  []string `yaml:"enabled_tools,omitempty"`
	DisabledTools []string `yaml:"disabled_tools,omitempty"`
	// Trust is trusted or untrusted (the default). Tools of untrusted
	// servers are framed as untrusted, and calling one needs an
	// allowlist entry pinned to its definition's sha256.
	Trust string `yaml:"trust,omitempty"`
	// Agents, when set, limits the server's tools to these agents.
	Agents []string `yaml:"agents,omitempty"`

	// StartupTimeout bounds starting, initializing and listing;
	// CallTimeout one tool call.
	StartupTimeout time.Duration `yaml:"startup_timeout,omitempty"`
	CallTimeout    time.Duration `yaml:"call_timeout,omitempty"`
	// MaxTools caps the tools indexed from this server.
	MaxTools int `yaml:"max_tools,omitempty"`
	// MaxResultBytes caps what one call returns.
	MaxResultBytes int `yaml:"max_result_bytes,omitempty"`
	// Rate and Burst limit calls to this server (calls per second); 0
	// means unlimited.
	Rate  float64 `yaml:"rate,omitempty"`
	Burst int     `yaml:"burst,omitempty"`
}

// Value is the value of an environment variable or HTTP header: a literal
// (for settings that are not secret), or read from the router's environment
// (from_env) or a file (from_file) when the server is started. Names that
// look like secrets (token, key, secret, password, auth, cookie, credential)
// must use from_env or from_file. Values never appear in logs, Status or
// errors.
type Value struct {
	Literal  string `yaml:"value,omitempty"`
	FromEnv  string `yaml:"from_env,omitempty"`
	FromFile string `yaml:"from_file,omitempty"`
}

// UnmarshalYAML reads a plain scalar as a literal and a mapping as
// {value|from_env|from_file}.
func (v *Value) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*v = Value{Literal: n.Value}
		return nil
	}
	type plain Value
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*v = Value(p)
	return nil
}

// MarshalYAML renders the value with a literal redacted.
func (v Value) MarshalYAML() (any, error) {
	type plain Value
	p := plain(v)
	if p.Literal != "" {
		p.Literal = "REDACTED"
	}
	return p, nil
}

// String never shows a literal.
func (v Value) String() string {
	switch {
	case v.FromEnv != "":
		return "from_env " + v.FromEnv
	case v.FromFile != "":
		return "from_file " + v.FromFile
	}
	return "REDACTED"
}

// maxSecretFileBytes caps a from_file value.
const maxSecretFileBytes = 64 << 10

// resolve returns the value. A from_file value loses one trailing newline.
func (v Value) resolve(getenv func(string) string) (string, error) {
	switch {
	case v.FromEnv != "":
		s := getenv(v.FromEnv)
		if s == "" {
			return "", fmt.Errorf("environment variable %s is not set", v.FromEnv)
		}
		return s, nil
	case v.FromFile != "":
		f, err := os.Open(v.FromFile)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", v.FromFile, errors.Unwrap(err))
		}
		defer f.Close()
		b := make([]byte, maxSecretFileBytes+1)
		n, _ := f.Read(b)
		if n > maxSecretFileBytes {
			return "", fmt.Errorf("%s is over %d bytes", v.FromFile, maxSecretFileBytes)
		}
		return strings.TrimSuffix(strings.TrimSuffix(string(b[:n]), "\n"), "\r"), nil
	}
	return v.Literal, nil
}

var (
	serverNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)
	envNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	secretNameRE = regexp.MustCompile(`(?i)token|secret|passw|key|auth|cookie|credential|session`)
)

// IsEnabled reports whether the server should run.
func (c *ServerConfig) IsEnabled() bool { return c.Enabled == nil || *c.Enabled }

// Trusted reports whether the operator trusts the server.
func (c *ServerConfig) Trusted() bool { return c.Trust == TrustTrusted }

// withDefaults fills the transport, timeouts and caps.
func (c ServerConfig) withDefaults() ServerConfig {
	if c.Transport == "" {
		switch {
		case c.Command != "":
			c.Transport = TransportStdio
		case c.URL != "":
			c.Transport = TransportHTTP
		}
	}
	if c.StartupTimeout == 0 {
		c.StartupTimeout = DefaultStartupTimeout
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.MaxTools == 0 {
		c.MaxTools = DefaultMaxTools
	}
	if c.MaxResultBytes == 0 {
		c.MaxResultBytes = DefaultMaxResultBytes
	}
	return c
}

// Validate checks one server's settings; every problem starts with the
// setting at fault under mcp_servers.<name>. Relative paths must have been
// resolved already (see ResolvePaths).
func (c *ServerConfig) Validate() error {
	d := c.withDefaults()
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("mcp_servers.%s%s: %s", c.Name, key, fmt.Sprintf(format, args...)))
	}
	if !serverNameRE.MatchString(c.Name) {
		errs = append(errs, fmt.Errorf("mcp_servers: server name %q must be 1-32 letters, digits, '_' or '-' (it prefixes the server's tool names)", skill.Clip(c.Name, 40)))
		return errors.Join(errs...)
	}
	c.validateTransport(bad, d.Transport)
	c.validateSecrets(bad)
	if c.Cwd != "" && !filepath.IsAbs(c.Cwd) {
		bad(".cwd", "%q is not absolute", c.Cwd)
	}
	c.validateTools(bad)
	if d.StartupTimeout < 0 || d.CallTimeout < 0 {
		bad("", "startup_timeout and call_timeout must be positive")
	}
	if d.MaxTools < 1 || d.MaxTools > MaxMaxTools {
		bad(".max_tools", "%d is outside [1, %d]", d.MaxTools, MaxMaxTools)
	}
	if d.MaxResultBytes < 1024 || d.MaxResultBytes > MaxMaxResultBytes {
		bad(".max_result_bytes", "%d is outside [1024, %d]", d.MaxResultBytes, MaxMaxResultBytes)
	}
	if c.Rate < 0 || c.Burst < 0 {
		bad("", "rate and burst must not be negative")
	}
	return errors.Join(errs...)
}

// validateTransport checks that the settings given are those of the
// transport (stdio: a command; http: a URL).
func (c *ServerConfig) validateTransport(bad func(string, string, ...any), transport string) {
	switch transport {
	case TransportStdio:
		if c.Command == "" {
			bad(".command", "empty; a stdio server needs the command that starts it")
		}
		if c.URL != "" || len(c.Headers) > 0 || c.BearerToken != nil {
			bad("", "url, headers and bearer_token are for transport http, not stdio")
		}
	case TransportHTTP:
		if c.Command != "" || len(c.Args) > 0 || len(c.Env) > 0 || c.Cwd != "" {
			bad("", "command, args, env and cwd are for transport stdio, not http")
		}
		c.validateURL(bad, len(c.Headers) > 0 || c.BearerToken != nil)
	case "":
		bad("", "set command (a stdio server) or url (a Streamable HTTP server)")
	default:
		bad(".transport", "%q; want stdio or http", transport)
	}
}

// validateSecrets checks the names and value specs of the environment, the
// headers and the bearer token.
func (c *ServerConfig) validateSecrets(bad func(string, string, ...any)) {
	for _, name := range sortedKeys(c.Env) {
		if !envNameRE.MatchString(name) {
			bad(".env", "%q is not an environment variable name", skill.Clip(name, 40))
		}
		validateValue(bad, ".env."+name, name, c.Env[name])
	}
	for _, name := range sortedKeys(c.Headers) {
		if !headerNameRE.MatchString(name) {
			bad(".headers", "%q is not an HTTP header name", skill.Clip(name, 40))
		}
		validateValue(bad, ".headers."+name, name, c.Headers[name])
	}
	if c.BearerToken != nil {
		validateValue(bad, ".bearer_token", "token", *c.BearerToken)
	}
}

// validateTools checks the tool name patterns, the trust and the agents.
func (c *ServerConfig) validateTools(bad func(string, string, ...any)) {
	for _, list := range []struct {
		key      string
		patterns []string
	}{{".enabled_tools", c.EnabledTools}, {".disabled_tools", c.DisabledTools}} {
		for _, p := range list.patterns {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				bad(list.key, "%q is not a name pattern ('*', '?' and '[...]' are wildcards)", skill.Clip(p, 60))
			}
		}
	}
	switch c.Trust {
	case "", TrustTrusted, TrustUntrusted:
	default:
		bad(".trust", "%q; want trusted or untrusted", skill.Clip(c.Trust, 40))
	}
	for _, a := range c.Agents {
		if a == "" || skill.ValidateAgent(a) != nil {
			bad(".agents", "%q is not an agent name", skill.Clip(a, 40))
		}
	}
}

// validateValue refuses an empty value spec, a spec with two sources, and a
// literal under a name that looks like a secret.
func validateValue(bad func(string, string, ...any), key, name string, v Value) {
	n := 0
	for _, s := range []string{v.Literal, v.FromEnv, v.FromFile} {
		if s != "" {
			n++
		}
	}
	switch {
	case n > 1:
		bad(key, "set one of value, from_env and from_file")
	case v.FromEnv != "" && !envNameRE.MatchString(v.FromEnv):
		bad(key, "from_env %q is not an environment variable name", skill.Clip(v.FromEnv, 40))
	case v.FromFile != "" && !filepath.IsAbs(v.FromFile):
		bad(key, "from_file %q is not absolute", v.FromFile)
	case v.Literal != "" && secretNameRE.MatchString(name):
		bad(key, "looks like a secret: give it with from_env or from_file, never inline in the config file")
	}
}

func (c *ServerConfig) validateURL(bad func(string, string, ...any), secrets bool) {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad(".url", "want an http:// or https:// URL such as https://mcp.example.com/mcp")
		return
	}
	if u.User != nil {
		bad(".url", "holds credentials; give them with headers or bearer_token from_env or from_file")
	}
	if u.Scheme == "http" && secrets && !loopbackHost(u.Hostname()) {
		bad(".url", "headers would cross the network in clear text to %s; use https or a loopback address", u.Host)
	}
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// endpoint is the URL's scheme and host, for Status and logs.
func endpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// ResolvePaths makes a server's relative cwd, command path and from_file
// paths absolute against dir (the workspace). A command without a slash is
// looked up in PATH when the server starts.
func (c *ServerConfig) ResolvePaths(dir string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	c.Cwd = abs(c.Cwd)
	if strings.ContainsRune(c.Command, '/') {
		c.Command = abs(c.Command)
	}
	fix := func(m map[string]Value) {
		for k, v := range m {
			v.FromFile = abs(v.FromFile)
			m[k] = v
		}
	}
	fix(c.Env)
	fix(c.Headers)
	if c.BearerToken != nil {
		c.BearerToken.FromFile = abs(c.BearerToken.FromFile)
	}
}

// toolAllowed applies the allow and deny lists to an upstream tool name.
func (c *ServerConfig) toolAllowed(name string) bool {
	match := func(patterns []string) bool {
		return slices.ContainsFunc(patterns, func(p string) bool {
			ok, _ := path.Match(p, name)
			return ok
		})
	}
	if match(c.DisabledTools) {
		return false
	}
	return len(c.EnabledTools) == 0 || match(c.EnabledTools)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
