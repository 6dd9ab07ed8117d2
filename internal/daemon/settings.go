package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/router"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/statedir"
	"github.com/mcpsag/router/internal/telemetry"
	"github.com/mcpsag/router/models"
)

// watchConfig applies config file edits while the router runs: feature flags
// and load budgets at once; other settings after a restart (logged). A
// broken edit is logged and shown in Status, and the previous config stays.
func (m *Main) watchConfig(rt *router.Router) {
	getenv := m.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	path := config.ReloadPath(m.Config, m.Overrides, getenv)
	state := skill.ConfigState{Path: path, LoadedAt: time.Now()} // touched by the reloader only
	rt.SetConfigState(state)
	log := m.log.With("component", "config")
	inForce := m.Config
	r := &config.Reloader{
		Flags: m.Overrides, Getenv: getenv, LookupEnv: m.LookupEnv, Path: path,
		OnChange: func(c config.Config) {
			rt.SetSettings(settingsOf(c))
			if err := m.loader.SetMatchConfig(context.Background(), c.Match); err != nil {
				log.Error("match settings not applied; the previous index keeps serving", "err", err)
			}
			if !reflect.DeepEqual(c.MCPServers, inForce.MCPServers) && m.upstream != nil {
				m.upstream.Apply(c.Servers())
			}
			if !reflect.DeepEqual(c.Model, inForce.Model) {
				if err := m.loader.SetEmbedConfig(context.Background(), m.embedConfig(c)); err != nil {
					log.Warn("reindex after a model change failed", "err", err)
				}
			}
			inForce = c
			state = skill.ConfigState{Path: path, LoadedAt: time.Now()}
			rt.SetConfigState(state)
			log.Info("config reloaded", "path", path, "applied", config.HotReloadable,
				"skills_v1", c.Flags.SkillsV1, "skills_exec", c.Flags.SkillsExec, "tools_call", c.Flags.ToolsCall,
				"mcp_servers", len(c.MCPServers))
			if later := config.RestartNeeded(m.Config, c); len(later) > 0 {
				log.Warn("some changed settings take effect after a restart", "settings", later)
			}
		},
		OnError: func(err error) {
			state.Error = ""
			if err != nil {
				state.Error = err.Error()
				log.Error("config edit rejected; the previous config stays in force", "path", path, "err", err)
			}
			rt.SetConfigState(state)
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.stopReload, m.reloaded = cancel, make(chan struct{})
	go func() {
		defer close(m.reloaded)
		r.Run(ctx, m.Config)
	}()
}

// loaderConfig says where the skills are, how to read and embed them, and
// when to look at them again; rec records every pass.
func (m *Main) loaderConfig(rec *telemetry.Recorder) loader.Config {
	cfg := m.Config
	roots, _ := cfg.RootSpecsKinds() // validated by config.Resolve
	prec, _ := cfg.PrecedenceKinds()
	lc := loader.Config{
		Workspace:      cfg.Workspace,
		Precedence:     prec,
		Limits:         skillmd.Limits{MaxFileBytes: cfg.Limits.MaxSkillFileBytes, MaxFrontmatterBytes: cfg.Limits.MaxFrontmatterBytes},
		Size:           skill.SizeLimits{MaxFiles: cfg.Limits.MaxSkillFiles, MaxBytes: cfg.Limits.MaxSkillBytes},
		Embedder:       m.embedder,
		Fast:           m.fast,
		Background:     cfg.Model.SyncDocuments >= 0,
		SyncDocuments:  cfg.Model.SyncDocuments,
		Match:          cfg.Match,
		ServeLastScan:  cfg.Watch.ServeLastScan,
		Watch:          cfg.Watch.Enabled,
		Debounce:       cfg.Watch.Debounce,
		RescanInterval: cfg.Watch.RescanInterval,
		OnPass:         recordPass(rec),
		Logger:         m.log.With("component", "loader"),
	}
	if m.upstream != nil {
		lc.Tools = m.upstream
	}
	for _, r := range roots {
		lc.Roots = append(lc.Roots, skillfs.RootSpec{Path: r.Path, Kind: r.Kind, Agent: r.Agent})
	}
	return lc
}

// recordPass records every pass of the loader: a reindex event and the
// document cache figures.
func recordPass(rec *telemetry.Recorder) func(context.Context, loader.Pass, error) {
	return func(ctx context.Context, p loader.Pass, err error) {
		st := p.Stats
		rec.Reindexed(ctx, telemetry.Reindex{
			Full: p.Full, Duration: st.Duration, Err: err, Generation: st.Generation,
			Scanned: st.Scanned, Added: st.Added, Changed: st.Changed, Removed: st.Removed,
			Unchanged: st.Unchanged, Invalid: st.Invalid, Parsed: st.Parsed, Embedded: st.Embedded,
		})
		if p.DocumentsCached+p.DocumentsEmbedded > 0 {
			rec.EmbeddingCache(ctx, telemetry.CacheDocument, p.DocumentsCached, p.DocumentsEmbedded)
		}
	}
}

// embedConfig maps the config file's model section onto the embedder's; an
// empty model.dir means the bundled model.
func (m *Main) embedConfig(cfg config.Config) embed.Config {
	mc := cfg.Model
	return embed.Config{
		Dir: cmp.Or(mc.Dir, m.bundledModel), Name: mc.Name,
		QueryPrefix: mc.QueryPrefix, DocumentPrefix: mc.DocumentPrefix,
		MaxTokens: mc.MaxTokens, BatchSize: mc.BatchSize, MatchThreshold: mc.MatchThreshold,
		BodyChars: mc.BodyChars, Timeout: mc.Timeout, QueryCacheSize: mc.QueryCacheSize,
	}
}

// fastConfig is the fast model's configuration: the configured folder, else
// the bundled fast model unpacked under state; ok is false when there is
// none, or it is the model itself (the same folder, or for the bundled fast
// model a folder whose manifest bears its name).
func (m *Main) fastConfig(cfg config.Config, state string) (embed.Config, bool) {
	fc := cfg.Model.Fast
	if fc.Disabled {
		return embed.Config{}, false
	}
	model := m.embedConfig(cfg).Dir
	dir := fc.Dir
	if dir == "" && models.FastName != "" {
		// A model folder that holds the bundled fast model itself (by its
		// manifest's name) needs no fast tier, nor its copy in the state
		// folder.
		if man, _, found, _ := embed.ReadManifest(model); found && man.Name == models.FastName {
			return embed.Config{}, false
		}
		var err error
		if dir, err = models.Fast(filepath.Join(state, statedir.ModelsDir)); err != nil {
			m.log.Warn("bundled fast model could not be unpacked; keywords are served while the model's vectors are computed", "err", err)
			return embed.Config{}, false
		}
	}
	if dir == "" || dir == model {
		return embed.Config{}, false
	}
	return embed.Config{Dir: dir, Timeout: cfg.Model.Timeout}, true
}

// routerState is what the alerting gauges report of a Status.
func routerState(st skill.Status) telemetry.RouterState {
	rs := telemetry.RouterState{Degraded: st.Degraded, Servers: map[skill.ServerState]int64{}}
	for _, s := range st.Servers {
		rs.Servers[s.State]++
	}
	return rs
}

// embeddingGauge is what the embedding gauges report of a Status.
func embeddingGauge(st skill.Status) telemetry.Embedding {
	e := telemetry.Embedding{Tier: "none", Backlog: int64(st.Backfill.Total - st.Backfill.Done)}
	switch {
	case st.Model != nil && st.Model.Serving:
		e.Tier, e.Model = "primary", st.Model.Name
	case st.FastModel != nil && st.FastModel.Serving:
		e.Tier, e.Model = "fast", st.FastModel.Name
	}
	return e
}

// settingsOf extracts the hot-reloadable settings from a configuration.
func settingsOf(cfg config.Config) router.Settings {
	return router.Settings{
		Flags:              skill.Flags{SkillsV1: cfg.Flags.SkillsV1, SkillsExec: cfg.Flags.SkillsExec, ToolsCall: cfg.Flags.ToolsCall},
		DefaultTokenBudget: cfg.Load.DefaultTokenBudget,
		MaxTokenBudget:     cfg.Load.MaxTokenBudget,
	}
}

// ExplainConfig renders the effective configuration with the source of each
// setting (router --print-config): the defaults the router fills in (roots,
// precedence, the bundled model, the model's own threshold) are shown as
// they will apply.
func (m *Main) ExplainConfig() (string, error) {
	cfg := m.Config
	notes := map[string]string{}
	if len(cfg.Roots) == 0 {
		for _, r := range skillfs.DefaultRoots() {
			cfg.Roots = append(cfg.Roots, config.Root{Path: r.Path, Kind: string(r.Kind), Agent: r.Agent})
		}
		notes["roots"] = "none configured: skills/ for every agent, agents/<agent>/skills/ for each agent"
	}
	if len(cfg.Precedence) == 0 {
		for _, k := range skill.DefaultPrecedence {
			cfg.Precedence = append(cfg.Precedence, string(k))
		}
	}
	switch {
	case cfg.Model.Disabled:
		notes["model.disabled"] = "matching uses keywords only"
	case cfg.Model.Dir == "":
		notes["model.dir"] = "the bundled model " + models.DefaultName
	}
	if !cfg.Model.Disabled && cfg.Model.MatchThreshold == 0 {
		if t, from, ok := modelThreshold(cfg.Model.Dir); ok {
			cfg.Model.MatchThreshold = t
			notes["model.match_threshold"] = "from " + from
		}
	}
	return cfg.Explain(notes)
}

// modelThreshold reads the cosine threshold a model folder declares (the
// bundled model's when dir is empty).
func modelThreshold(dir string) (float64, string, bool) {
	if dir == "" {
		var man struct {
			MatchThreshold float64 `json:"match_threshold"`
		}
		if json.Unmarshal(models.DefaultManifest, &man) != nil || man.MatchThreshold == 0 {
			return 0, "", false
		}
		return man.MatchThreshold, "the bundled model's mcpsag-model.json", true
	}
	man, _, found, err := embed.ReadManifest(dir)
	if err != nil || !found || man.MatchThreshold == 0 {
		return 0, "", false
	}
	return man.MatchThreshold, filepath.Join(dir, embed.ManifestFile), true
}
