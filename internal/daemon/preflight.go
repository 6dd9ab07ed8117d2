package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
)

// checkWorkspace refuses a workspace that is not an existing folder: serving
// it would create it (with the state directory inside) and serve no skill.
func checkWorkspace(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("workspace %s does not exist; point --workspace (or MCPSAG_WORKSPACE) at the folder that holds skills/<name>/SKILL.md, or create it with mkdir -p %s/skills", dir, dir)
	case err != nil:
		return fmt.Errorf("workspace: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("workspace %s is not a folder; point --workspace (or MCPSAG_WORKSPACE) at the folder that holds skills/<name>/SKILL.md", dir)
	}
	return nil
}

// warnOpenListeners warns about an admin or MCP listener bound to every
// network interface (0.0.0.0, [::] or no host), and about the gRPC listener
// bound so without authentication: what it serves is then open to whoever
// reaches the machine, unless a firewall or the network in front restricts
// it.
func (m *Main) warnOpenListeners() {
	if everyInterface(m.Config.Addr) && !m.Config.Auth.Enabled {
		m.log.Warn("the gRPC listener accepts connections on every network interface and anyone who reaches it may use it (auth is off); "+
			"bind it to 127.0.0.1, or turn auth and tls on, unless the network in front restricts it", "addr", m.Config.Addr)
	}
	if m.Config.Telemetry.Pprof && m.Config.AdminAddr == "" {
		m.log.Warn("telemetry.pprof is on but the admin listener is off (admin_addr): no profile is served")
	}
	if everyInterface(m.Config.AdminAddr) {
		paths := "/metrics, /healthz and /readyz"
		if m.Config.Telemetry.Pprof {
			paths = "/metrics, /healthz, /readyz and /debug/pprof/"
		}
		m.log.Warn("the admin listener accepts connections on every network interface, and its "+paths+" need no token; bind it to 127.0.0.1 or a private address unless the network in front restricts it",
			"admin_addr", m.Config.AdminAddr)
	}
	if everyInterface(m.Config.MCP.Addr) {
		auth := "it needs a token (auth is on)"
		if !m.Config.Auth.Enabled {
			auth = "anyone who reaches it may use it (auth is off)"
		}
		m.log.Warn("MCP over HTTP accepts connections on every network interface; "+auth+"; bind it to 127.0.0.1 unless remote hosts must reach it",
			"mcp_addr", m.Config.MCP.Addr)
	}
}

// everyInterface reports whether a listen address binds every interface:
// an unspecified IP (0.0.0.0, [::]) or no host at all (":9464").
func everyInterface(addr string) bool {
	if addr == "" {
		return false
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}
