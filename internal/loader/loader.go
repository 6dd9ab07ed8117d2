// Package loader is the one owner of the path from the skill folders on
// disk to a published index generation. A pass goes through three stages,
// each a type that owns its state:
//
//   - the tracker expands the roots and scans them (every root, given the
//     last full scan's folder listings; or only the skill folders that file
//     events named; or, at a start, the scan behind the index snapshot),
//     reads their registries, and keeps the watcher on the folders of the
//     last scan;
//   - the record sync parses the SKILL.md files that changed and keeps the
//     store's records and bodies in step with the disk;
//   - the assembly makes the catalog (with the tools of MCP servers), the
//     vectors, the identity and the match index, each from the previous
//     generation where its input did not change, on the caller's goroutine
//     and without touching a file.
//
// One loop runs the passes, one at a time: after file events, a change of
// the MCP servers' tools, the rescan timer or a Reindex, and it publishes
// each new generation, an immutable Generation, to the one serving it (the
// router). In the background, the snapshot writer saves the last
// generation's index and the scan behind it in the state folder, for the
// next start. Evaluation builds its generation through the same Loader
// (Build), so it measures exactly what is served.
package loader

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/statedir"
	"github.com/mcpsag/router/internal/store"
)

// Config says where skills are, how to read and embed them, and when to
// look at them again.
type Config struct {
	Workspace string
	// Roots are the configured roots; skillfs.DefaultRoots when empty.
	Roots      []skillfs.RootSpec
	Precedence []skill.SourceKind
	Limits     skillmd.Limits
	// Size bounds one skill (skill.DefaultSizeLimits when zero): a skill
	// over it is in the catalog but not served (skill.Skill.Oversize).
	// The scan lists at most Size.MaxFiles files of a skill besides its
	// SKILL.md.
	Size skill.SizeLimits
	Scan skillfs.ScanLimits
	// Workers parse files in parallel; 0 means GOMAXPROCS.
	Workers int
	// Embedder embeds skills and tasks; nil means keyword-only matching
	// (or the Fast model's).
	Embedder *embed.Manager
	// Fast is a second, fast model (a static one): when Embedder's
	// vectors are not all there (Background), or Embedder is unavailable,
	// a pass embeds every skill with Fast and its generation serves those
	// vectors; nil serves keywords meanwhile.
	Fast *embed.Manager
	// Background makes a pass embed at most SyncDocuments texts with
	// Embedder, those neither in an earlier generation nor in the cache;
	// when more are new, they are embedded in the background and a pass
	// runs once they all are. A start then never waits for embeddings.
	// Without it (evaluations, tests), a pass embeds every text.
	Background    bool
	SyncDocuments int
	// Tools gives the tools of connected MCP servers, indexed with the
	// skills; nil means none.
	Tools ToolSource
	// ToolsWait bounds how long Start waits for the MCP servers' first
	// attempts, so that the first generation holds the tools of servers
	// that start quickly; 0 means 5s.
	ToolsWait time.Duration
	// Match configures the match index (match.DefaultConfig when zero);
	// SetMatchConfig changes it. Its cosine threshold is replaced by the
	// embedding model's unless set.
	Match match.Config
	// ServeLastScan makes the first pass take the skill files from the
	// scan behind the index snapshot (statedir.ScanFile) instead of scanning the
	// roots, when the cache holds every one of them as that scan found it
	// (the same paths, sizes and modification times) and the roots are
	// the same: a restart then parses and embeds nothing, and reads no
	// folder, before it serves. The pass says so (Pass.Restored); the
	// loop then runs another pass at once, which scans the roots and
	// catches up with what changed while the router was stopped.
	ServeLastScan bool
	// Watch turns on file system events; Debounce coalesces their bursts.
	Watch    bool
	Debounce time.Duration
	// RescanInterval is the safety-net full scan period; 0 disables it.
	RescanInterval time.Duration
	// OnPass, when set, is called after every pass (requested or in the
	// background), with its error; telemetry records reindex events here.
	OnPass func(ctx context.Context, p Pass, err error)
	Logger *slog.Logger
}

// ToolSource gives a pass the tools of the connected MCP servers;
// upstream.Manager is one.
type ToolSource interface {
	// Tools returns the entries of kind tool served now, with unique
	// names, and a digest that changes whenever they do. It must not
	// block on a server.
	Tools() ([]*skill.Skill, string)
	// Settled reports whether every enabled server has its tools listed.
	// While one has not (it is starting, or failing), the vectors of
	// texts the pass does not use are kept in the cache: that server's
	// tools come back without being embedded again.
	Settled() bool
	// Changes receives a value after the servers' tools changed.
	Changes() <-chan struct{}
	// Wait returns when every server has finished its first attempt, or
	// when ctx ends (with its error).
	Wait(ctx context.Context) error
}

// Loader turns the skill folders into generations and keeps them coming.
type Loader struct {
	cfg Config
	db  *store.DB
	log *slog.Logger

	tracker   *tracker
	records   *recordSync
	assembly  *assembly
	snapshots *snapshotWriter
	progress  progress

	mu       sync.Mutex  // one pass at a time; guards the fields below and the stages
	last     *Generation // the last generation a pass built: the next one's base
	matchCfg match.Config
	publish  func(*Generation) // nil until Start
	based    bool              // the first pass has taken the index snapshot as its base
	// replacements is the store's count of replaced files the last pass
	// saw (store.DB.Replacements).
	replacements uint64
	// state is what Status says of the passes: replaced whole under mu,
	// read without it, so that Status never waits for a pass.
	state atomic.Pointer[passState]

	// lifeMu guards cancel and done, which Close reads while a pass may
	// hold mu: Close stops the loop's pass instead of waiting for it.
	lifeMu sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// passState is what the passes leave for Status.
type passState struct {
	lastStats   skill.ReindexStats
	lastErr     error
	lastReindex time.Time
	parsedTotal int64
	// catchingUp is set while the served generation came from the last
	// scan (Pass.Restored) and no scan of the roots has been served since.
	catchingUp bool
	// rebuilding is set while the cache file, found damaged, was replaced
	// by an empty one (store.ErrDamaged) and no pass has filled the new
	// one since: bodies load Unavailable.
	rebuilding bool
}

// setState changes what Status says of the passes. The caller holds mu.
func (l *Loader) setState(change func(*passState)) {
	next := *l.state.Load()
	change(&next)
	l.state.Store(&next)
}

// withDefaults is cfg with the defaults of its zero fields.
func withDefaults(cfg Config) Config {
	if cfg.Limits == (skillmd.Limits{}) {
		cfg.Limits = skillmd.DefaultLimits
	}
	if cfg.Size == (skill.SizeLimits{}) {
		cfg.Size = skill.DefaultSizeLimits
	}
	if cfg.Scan == (skillfs.ScanLimits{}) {
		cfg.Scan = skillfs.DefaultScanLimits
	}
	// A listing that stops at MaxFiles files besides SKILL.md says
	// whether the skill holds more than MaxFiles in all.
	cfg.Scan.MaxResources = cfg.Size.MaxFiles
	if len(cfg.Roots) == 0 {
		cfg.Roots = skillfs.DefaultRoots()
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if reflect.ValueOf(cfg.Match).IsZero() {
		cfg.Match = match.DefaultConfig()
	}
	return cfg
}

// New returns a loader over db; it starts reading the cached records and
// the index snapshot (and, with ServeLastScan, the scan behind it), which
// the first pass waits for.
func New(cfg Config, db *store.DB) (*Loader, error) {
	cfg = withDefaults(cfg)
	workspace, err := filepath.Abs(cfg.Workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", cfg.Workspace, err)
	}
	l := &Loader{cfg: cfg, db: db, log: cfg.Logger, matchCfg: cfg.Match}
	l.progress.clear()
	l.state.Store(&passState{})
	state := filepath.Dir(db.Path())
	removeLeftovers(state, cfg.Logger)
	l.tracker = newTracker(cfg.Workspace, cfg.Roots, cfg.Scan, state, cfg.ServeLastScan, cfg.Logger)
	l.assembly = newAssembly(cfg, workspace, db, &l.progress)
	// The cached records and the index snapshot are read while the first
	// pass scans the roots, and the cached bodies are checked after the
	// records, while that pass makes its catalog: it waits for that only
	// before it uses a body. A first pass that serves the last scan
	// (ServeLastScan) does not wait for the check, nor share the CPUs with
	// it: the check starts with the next pass, which uses its findings.
	// Such a pass needs the snapshot last, after its catalog: the
	// snapshot is read once the last scan is, so that on few cores it
	// does not slow the reading of the scan and the records the catalog
	// is made of (docs/benchmarks.md, "Less on a start's critical path").
	l.records = newRecordSync(db, cfg.Limits, cfg.Workers, cfg.Logger, &l.progress, cfg.ServeLastScan)
	l.snapshots = &snapshotWriter{path: filepath.Join(state, statedir.SnapshotFile), log: cfg.Logger,
		scans: lastScanFile{path: filepath.Join(state, statedir.ScanFile), log: cfg.Logger}}
	l.snapshots.startLoad(l.tracker.lastScanLoaded())
	return l, nil
}

// Build runs one pass now, as the first pass of Start does, without
// publishing its generation and without the loop: evaluations build what
// the router serves this way.
func (l *Loader) Build(ctx context.Context) (*Generation, Pass, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pass(ctx, l.last, false, nil)
}

// WithMatchConfig returns a generation serving g's catalog and vectors
// under another match configuration, as SetMatchConfig would serve it,
// without publishing it or changing the configuration of later passes:
// over g's index data when only query-time settings changed, else over an
// updated index.
func (l *Loader) WithMatchConfig(ctx context.Context, g *Generation, cfg match.Config) (*Generation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	next, err := l.assembly.withMatchConfig(ctx, g, cfg)
	if err != nil {
		return nil, err
	}
	l.snapshots.save(next, false)
	return next, nil
}

// SetMatchConfig makes cfg (match.DefaultConfig when zero) the match
// configuration of the next passes and publishes the last generation under
// it, when it differs from the one in force.
func (l *Loader) SetMatchConfig(ctx context.Context, cfg match.Config) error {
	if reflect.ValueOf(cfg).IsZero() {
		cfg = match.DefaultConfig()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if reflect.DeepEqual(l.matchCfg, cfg) {
		return nil
	}
	l.matchCfg = cfg
	if l.last == nil {
		return nil
	}
	next, err := l.assembly.withMatchConfig(ctx, l.last, cfg)
	if err != nil {
		return err
	}
	l.snapshots.save(next, false)
	l.last = next
	if l.publish != nil {
		l.publish(next)
	}
	return nil
}

// SetEmbedConfig switches the embedding configuration: the model is
// reloaded and, when it changed, every skill is embedded again by a pass
// run at once. A model that fails to load leaves matching keyword-only.
func (l *Loader) SetEmbedConfig(ctx context.Context, cfg embed.Config) error {
	m := l.cfg.Embedder
	if m == nil {
		return nil
	}
	if err := m.Reload(ctx, cfg); err != nil {
		l.log.Warn("embedding model did not load; matching uses keywords only", "err", err)
	}
	_, err := l.Reindex(ctx, false)
	return err
}

// Progress returns the state of the running pass, if any.
func (l *Loader) Progress() skill.Progress { return l.progress.get() }

// ParsedTotal returns how many files were parsed since the loader started.
func (l *Loader) ParsedTotal() int64 { return l.state.Load().parsedTotal }

// Flush waits until the last generation's index snapshot and the last full
// scan's folder listings are written.
func (l *Loader) Flush() {
	l.snapshots.flush()
	l.tracker.flush()
}

// Close stops the loop, waits for the index snapshot of the last
// generation to be written and stops watching. It closes neither the store
// nor the model.
func (l *Loader) Close() error {
	l.lifeMu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel = nil
	l.lifeMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	l.Flush()
	if cancel != nil {
		return l.tracker.closeWatcher()
	}
	return nil
}
