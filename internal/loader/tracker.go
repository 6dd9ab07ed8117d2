package loader

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/statedir"
)

// tracker knows where the skill files are: it expands the roots, scans them
// (all of them, given the last full scan's folder listings, or only the
// skill folders file events named), keeps the last scan for the next, takes
// the scan behind the index snapshot at a start, and keeps the watcher on
// the folders of the last scan.
type tracker struct {
	workspace string // as configured
	specs     []skillfs.RootSpec
	limits    skillfs.ScanLimits
	listings  listingsFile
	// lastScans reads the scan behind the index snapshot at a start
	// (Config.ServeLastScan); the snapshot writer writes it.
	lastScans lastScanFile

	last       *skillfs.ScanResult // the last scan, the base of rescans
	lastRoots  []skill.Root
	byDir      map[string]int                            // skill folder -> its index in last.Files
	registries map[string]map[string]skill.RegistryEntry // root -> last good registry

	watcher *skillfs.Watcher // nil: no file events
	synced  []string         // the scan folders the watcher was last synced to
	// syncing is set while the watcher adds the folders of a scan (under
	// the loader's lock); Status reads it without waiting for that.
	syncing atomic.Bool
}

// newTracker returns the tracker of the roots of workspace under specs,
// keeping its files in the state folder state. With lastScan, it starts
// reading the scan behind the index snapshot (see lastScanLoaded).
func newTracker(workspace string, specs []skillfs.RootSpec, limits skillfs.ScanLimits, state string, lastScan bool, log *slog.Logger) *tracker {
	t := &tracker{workspace: workspace, specs: specs, limits: limits,
		listings:  listingsFile{path: filepath.Join(state, statedir.ListingsFile), log: log},
		lastScans: lastScanFile{path: filepath.Join(state, statedir.ScanFile), log: log}}
	if lastScan {
		t.lastScans.startLoad(workspace, specs)
	}
	return t
}

// lastScanLoaded is closed once the scan behind the index snapshot is read;
// nil when it is not read.
func (t *tracker) lastScanLoaded() <-chan struct{} { return t.lastScans.loaded }

// lastScan returns the last scan, the base of rescans, and its roots.
func (t *tracker) lastScan() (*skillfs.ScanResult, []skill.Root) { return t.last, t.lastRoots }

// flush waits until the folder listings being saved are written.
func (t *tracker) flush() { t.listings.wait() }

// startWatcher makes a watcher, whose events coalesce over debounce, for
// the folders the next scans find. Without one (its error), only rescans
// find changes.
func (t *tracker) startWatcher(debounce time.Duration, log *slog.Logger) error {
	w, err := skillfs.NewWatcher(debounce, log)
	if err != nil {
		return err
	}
	t.watcher = w
	return nil
}

// watches reports whether the tracker has a watcher.
func (t *tracker) watches() bool { return t.watcher != nil }

// events runs the watcher until ctx ends and returns the channel that
// receives a value after file events; nil without a watcher.
func (t *tracker) events(ctx context.Context) <-chan struct{} {
	if t.watcher == nil {
		return nil
	}
	go t.watcher.Run(ctx)
	return t.watcher.Changes()
}

// takeChanged returns the paths the events since the last call named; all
// is set when they named none (a folder newly watched): scan every root.
func (t *tracker) takeChanged() (paths []string, all bool) { return t.watcher.TakeChanged() }

// closeWatcher stops watching.
func (t *tracker) closeWatcher() error {
	if t.watcher == nil {
		return nil
	}
	return t.watcher.Close()
}

// syncingWatcher reports whether the watcher is adding the folders of a
// scan.
func (t *tracker) syncingWatcher() bool { return t.syncing.Load() }

// found is what the tracker found for a pass: the skill files of the
// roots, and how it found them.
type found struct {
	roots []skill.Root
	scan  skillfs.ScanResult
	// partial: only the skill folders that events named were scanned
	// again; restored: the files are the scan behind the index snapshot;
	// reused counts the folders a full scan took from the last listings.
	partial, restored bool
	reused            int
	// registries are the roots' registry entries by folded name (the
	// last good ones where a registry.json is broken), by root path.
	registries       map[string]map[string]skill.RegistryEntry
	registryProblems []skill.Problem
}

// find returns the skill files and registries of the roots: with restore,
// the files of the scan behind the index snapshot when it is of these roots
// (the caller checks that the store holds them); else those of a scan, of
// the skill folders that hold changed when that is enough (incremental),
// else of every root. When ctx ends first, it returns ctx's error and
// keeps the last scan.
func (t *tracker) find(ctx context.Context, restore, incremental bool, changed []string) (found, error) {
	if err := ctx.Err(); err != nil {
		return found{}, err
	}
	roots, err := skillfs.ExpandRoots(t.workspace, t.specs)
	if err != nil {
		return found{}, err
	}
	f := found{roots: roots}
	if last := t.lastScans.take(roots); restore && last != nil {
		f.scan, f.restored = *last, true
	} else if err := t.scan(ctx, &f, changed, incremental); err != nil {
		return found{}, err
	}
	t.readRegistries(&f)
	return f, nil
}

// readRegistries reads the registry of each of f's roots into f; a root
// whose registry.json is broken keeps its last good one.
func (t *tracker) readRegistries(f *found) {
	f.registries = make(map[string]map[string]skill.RegistryEntry, len(f.roots))
	for _, r := range f.roots {
		entries, ok, problems := skillfs.ReadRegistry(r.Path)
		f.registryProblems = append(f.registryProblems, problems...)
		if !ok {
			entries = t.registries[r.Path] // keep the last good one
		}
		f.registries[r.Path] = entries
	}
	t.registries = f.registries
}

// scan scans f.roots into f: the last scan with the skill folders of
// changed scanned again when that is enough (incremental; f.partial is then
// set), else every root, given the last full scan's folder listings. When
// ctx ends first, it returns ctx's error and keeps the last scan.
func (t *tracker) scan(ctx context.Context, f *found, changed []string, incremental bool) error {
	f.restored, f.partial, f.reused = false, false, 0
	if incremental && changed != nil && t.last != nil && slices.Equal(f.roots, t.lastRoots) {
		res, ok, err := t.rescan(ctx, changed)
		if err != nil {
			return err
		}
		if ok {
			f.scan, f.partial = res, true
			return nil
		}
	}
	known := t.listings.load()
	res := skillfs.Scan(f.roots, t.limits, known)
	if err := ctx.Err(); err != nil {
		return err // the scan was for nothing: its listings are not saved
	}
	t.listings.save(res.Listings, known)
	f.reused = res.Listings.Reused()
	res.Listings = nil // on disk only: the next full scan reads them there
	f.scan = res
	t.keep(&res, f.roots)
	return nil
}

// keep makes res the last scan, the base of rescans.
func (t *tracker) keep(res *skillfs.ScanResult, roots []skill.Root) {
	t.last, t.lastRoots = res, roots
	t.byDir = make(map[string]int, len(res.Files))
	for i, f := range res.Files {
		t.byDir[f.Dir] = i
	}
}

// rescan scans again the skill folders that hold the changed paths (a
// folder itself, or a file directly in it). ok is false when a path lies
// elsewhere, or a folder no longer holds a skill as the last scan found it.
// When ctx ends first, it returns ctx's error and keeps the last scan.
func (t *tracker) rescan(ctx context.Context, changed []string) (skillfs.ScanResult, bool, error) {
	idx := map[int]bool{}
	for _, p := range changed {
		i, ok := t.byDir[p]
		if !ok {
			i, ok = t.byDir[filepath.Dir(p)]
		}
		if !ok {
			return skillfs.ScanResult{}, false, nil
		}
		idx[i] = true
	}
	files := slices.Clone(t.last.Files)
	for i := range idx {
		if err := ctx.Err(); err != nil {
			return skillfs.ScanResult{}, false, err
		}
		f, ok := skillfs.ScanSkillDir(files[i].Root, files[i].Dir, t.limits)
		if !ok || f.Path != files[i].Path {
			return skillfs.ScanResult{}, false, nil
		}
		files[i] = f
	}
	res := skillfs.ScanResult{Files: files, Dirs: t.last.Dirs, Problems: t.last.Problems}
	t.last = &res
	return res, true, nil
}

// watch makes the watcher watch the folders of the last scan. A rescan of
// a few folders keeps the last scan's folders: the watched set is then
// already right.
func (t *tracker) watch() {
	if t.watcher == nil || t.last == nil || sameSlice(t.last.Dirs, t.synced) {
		return
	}
	t.syncing.Store(true)
	t.watcher.Sync(skillfs.WatchDirs(t.workspace, t.specs, t.last.Dirs))
	t.syncing.Store(false)
	t.synced = t.last.Dirs
}

// sameSlice reports whether a and b are the same slice (not merely equal).
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
