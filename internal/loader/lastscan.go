package loader

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
)

// lastScanFile reads the scan behind the index snapshot (statedir.ScanFile:
// the skill files, folders and problems the scan found that made the
// snapshot's generation) at a start, and writes it beside the snapshot
// (snapshotWriter.write). With Config.ServeLastScan, a restart builds its
// first generation from it instead of scanning the roots (see
// Pass.Restored). It is derived data, like the snapshot: a missing, stale
// or damaged file only means that start scans.
type lastScanFile struct {
	path string
	log  *slog.Logger

	loaded chan struct{} // closed once startLoad's read is done; nil: not read
	res    *skillfs.ScanResult
	roots  []skill.Root // the roots res was read for
}

// startLoad reads the file in the background, for the roots of workspace
// under specs as they are now; take returns what it read.
func (f *lastScanFile) startLoad(workspace string, specs []skillfs.RootSpec) {
	f.loaded = make(chan struct{})
	go func() {
		defer close(f.loaded)
		roots, err := skillfs.ExpandRoots(workspace, specs)
		if err != nil {
			return // the build reports it
		}
		data, err := os.ReadFile(f.path)
		if err != nil {
			if !os.IsNotExist(err) {
				f.log.Warn("last scan unreadable; scanning the roots", "file", f.path, "err", err)
			}
			return
		}
		res, err := skillfs.ReadScanResult(data, roots)
		switch {
		case errors.Is(err, skillfs.ErrScanFormat), errors.Is(err, skillfs.ErrScanRoots):
			f.log.Info("last scan of another format or other roots; scanning the roots", "file", f.path, "err", err)
		case err != nil:
			f.log.Warn("last scan unusable; scanning the roots", "file", f.path, "err", err)
		default:
			f.res, f.roots = &res, roots
		}
	}()
}

// take returns, once, the scan startLoad read when it is of roots; nil
// when there is none.
func (f *lastScanFile) take(roots []skill.Root) *skillfs.ScanResult {
	if f.loaded == nil {
		return nil
	}
	<-f.loaded
	res := f.res
	f.loaded, f.res = nil, nil
	if res == nil || !slices.Equal(roots, f.roots) {
		return nil
	}
	return res
}

// write writes the scan behind g, when it has one.
func (f *lastScanFile) write(g *Generation) error {
	if g.scan == nil {
		return nil
	}
	data, err := skillfs.MarshalScanResult(g.scan, g.scanRoots)
	if err == nil {
		err = replaceFileBytes(f.path, data)
	}
	if err != nil {
		return fmt.Errorf("write last scan %s: %w", f.path, err)
	}
	return nil
}
