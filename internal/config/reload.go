package config

import (
	"cmp"
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mcpsag/router/internal/filestamp"
)

// Reloader watches the config file and re-resolves the configuration (file,
// then environment, then flags, as at start) when it changes. A new valid
// configuration goes to OnChange; an invalid edit goes to OnError and the
// previous configuration stays in force. It watches the file's folder (editors
// replace files by rename) and also polls the file every PollInterval, so a
// missing folder or a lost event only delays the reload.
type Reloader struct {
	Flags  Overrides
	Getenv func(string) string
	// LookupEnv, when set, reads the environment instead of Getenv, so
	// that a listener's variable set to "" keeps it off, as at start.
	LookupEnv LookupEnv
	// Path is the config file to watch: the one in force, or the default
	// location when none was found at start.
	Path         string
	Debounce     time.Duration
	PollInterval time.Duration
	OnChange     func(Config)
	OnError      func(error)

	current Config
	file    filestamp.Watch
}

// ReloadPath returns the file a Reloader should watch for cfg.
func ReloadPath(cfg Config, flags Overrides, getenv func(string) string) string {
	if cfg.File != "" {
		return cfg.File
	}
	if p := cmp.Or(flags.ConfigFile, getenv("MCPSAG_CONFIG")); p != "" {
		return p
	}
	return filepath.Join(cfg.Workspace, DefaultFile)
}

// Run watches until ctx ends. current is the configuration in force.
func (r *Reloader) Run(ctx context.Context, current Config) {
	r.current = current
	r.file = filestamp.Watch{Paths: []string{r.Path}}
	r.file.Mark()
	if r.Debounce <= 0 {
		r.Debounce = 100 * time.Millisecond
	}
	if r.PollInterval <= 0 {
		r.PollInterval = 2 * time.Second
	}
	var events <-chan fsnotify.Event
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		if w.Add(filepath.Dir(r.Path)) == nil {
			events = w.Events
		}
	}
	poll := time.NewTicker(r.PollInterval)
	defer poll.Stop()
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if filepath.Clean(ev.Name) == filepath.Clean(r.Path) {
				fire = time.After(r.Debounce)
			}
		case <-poll.C:
			if r.file.Changed() {
				fire = time.After(r.Debounce)
			}
		case <-fire:
			fire = nil
			r.reload()
		}
	}
}

func (r *Reloader) reload() {
	r.file.Mark()
	lookup := r.LookupEnv
	if lookup == nil {
		lookup = Getenv(r.Getenv)
	}
	cfg, err := ResolveEnv(r.Flags, lookup)
	if err != nil {
		r.OnError(err)
		return
	}
	if reflect.DeepEqual(cfg, r.current) {
		r.OnError(nil) // a fixed edit clears the error
		return
	}
	r.current = cfg
	r.OnChange(cfg)
}

// RestartNeeded lists the settings that differ between two configurations but
// only take effect after a restart.
func RestartNeeded(old, new Config) []string {
	var out []string
	check := func(name string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			out = append(out, name)
		}
	}
	check("addr", old.Addr, new.Addr)
	check("workspace", old.Workspace, new.Workspace)
	check("state_dir", old.StateDir, new.StateDir)
	check("admin_addr", old.AdminAddr, new.AdminAddr)
	check("log_level", old.LogLevel, new.LogLevel)
	check("roots", old.Roots, new.Roots)
	check("precedence", old.Precedence, new.Precedence)
	check("limits", old.Limits, new.Limits)
	check("watch", old.Watch, new.Watch)
	check("shutdown", old.Shutdown, new.Shutdown)
	check("telemetry", old.Telemetry, new.Telemetry)
	check("exec.allowlist_file", old.Exec, new.Exec)
	check("auth", old.Auth, new.Auth)
	check("tls", old.TLS, new.TLS)
	check("trusted_proxies", old.TrustedProxies, new.TrustedProxies)
	check("model.disabled", old.Model.Disabled, new.Model.Disabled)
	check("model.sync_documents", old.Model.SyncDocuments, new.Model.SyncDocuments)
	check("model.fast", old.Model.Fast, new.Model.Fast)
	return out
}

// HotReloadable names the settings a reload applies at once, for messages.
var HotReloadable = strings.Join([]string{"flags", "load", "match", "model", "mcp_servers"}, ", ")
