package skillfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

// SkillFile is the name of the file that makes a folder a skill.
const SkillFile = "SKILL.md"

// RegistryFile is the governance file read from the top of each root.
const RegistryFile = "registry.json"

// ScanLimits bound a walk.
type ScanLimits struct {
	MaxDepth     int // folder levels below a root searched for SKILL.md
	MaxDirs      int // folders visited per root
	MaxResources int // files listed per skill
}

// DefaultScanLimits follow the Agent Skills client guide's advice to bound
// scans, with room for large corpora.
var DefaultScanLimits = ScanLimits{MaxDepth: 6, MaxDirs: 50000, MaxResources: 500}

// Found is one SKILL.md found by a scan.
type Found struct {
	Root skill.Root
	// Path is the SKILL.md path (absolute, within the root's real path).
	Path string
	// Dir is the skill folder.
	Dir string
	// RelPath is Path relative to the root, slash-separated.
	RelPath            string
	Size               int64
	ModTime            time.Time
	Resources          []skill.Resource
	ResourcesTruncated bool
}

// ScanResult is everything one walk of the roots found.
type ScanResult struct {
	Files []Found
	// Dirs lists every folder visited, for the watcher.
	Dirs []string
	// Problems are walk problems: unreadable folders, escaping symlinks,
	// limits hit.
	Problems []skill.Problem
}

// Scan walks the roots. A folder holding SKILL.md is a skill; the walk does
// not look for skills inside it. Folders starting with "_" or "." are skipped.
// Symbolic links are followed only when their target stays inside the root.
// Unreadable files and folders are reported and skipped.
//
// Roots are walked concurrently (up to GOMAXPROCS at a time); the result
// is the same as walking them one after the other.
func Scan(roots []skill.Root, lim ScanLimits) ScanResult {
	parts := make([]ScanResult, len(roots))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, r := range roots {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			w := walker{root: r, lim: lim, res: &parts[i], seen: map[string]bool{}}
			real, err := filepath.EvalSymlinks(r.Path)
			if err != nil {
				if !os.IsNotExist(err) {
					w.problem("root-unreadable", r.Path, "cannot open root: %v", err)
				}
				return
			}
			w.realRoot = real
			w.walk(r.Path, real, 0)
		})
	}
	wg.Wait()
	var res ScanResult
	for _, p := range parts {
		res.Files = append(res.Files, p.Files...)
		res.Dirs = append(res.Dirs, p.Dirs...)
		res.Problems = append(res.Problems, p.Problems...)
	}
	sort.Slice(res.Files, func(i, j int) bool { return res.Files[i].Path < res.Files[j].Path })
	return res
}

type walker struct {
	root     skill.Root
	realRoot string
	lim      ScanLimits
	res      *ScanResult
	seen     map[string]bool // real paths visited, against symlink loops
	dirs     int
}

func (w *walker) problem(code, file, format string, args ...any) {
	w.res.Problems = append(w.res.Problems, skill.Problem{
		Severity: skill.SeverityWarning, Code: code, File: file, Message: fmt.Sprintf(format, args...),
	})
}

// inside reports whether real lies within the root's real path.
func (w *walker) inside(real string) bool {
	rel, err := filepath.Rel(w.realRoot, real)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// walk visits dir (shown as logical, resolved to real) at a depth below the root.
func (w *walker) walk(logical, real string, depth int) {
	if w.seen[real] {
		return
	}
	w.seen[real] = true
	w.dirs++
	if w.dirs > w.lim.MaxDirs {
		if w.dirs == w.lim.MaxDirs+1 {
			w.problem("scan-limit", w.root.Path, "root has more than %d folders; the rest is not scanned", w.lim.MaxDirs)
		}
		return
	}
	w.res.Dirs = append(w.res.Dirs, real)

	entries, err := os.ReadDir(real)
	if err != nil {
		w.problem("dir-unreadable", logical, "cannot read folder: %v", err)
		return
	}
	for _, e := range entries {
		if e.Name() != SkillFile {
			continue
		}
		if f, ok := w.skillFile(logical, real, e, entries); ok {
			w.res.Files = append(w.res.Files, f)
			return // a skill folder: its subfolders are resources
		}
	}
	if depth >= w.lim.MaxDepth {
		return
	}
	for _, e := range entries {
		if ignoredName(e.Name()) {
			continue
		}
		childLogical := filepath.Join(logical, e.Name())
		childReal, ok := w.resolveDir(childLogical, filepath.Join(real, e.Name()), e)
		if ok {
			w.walk(childLogical, childReal, depth+1)
		}
	}
}

// resolveDir returns the real path of a folder entry, following a symlink
// only when it stays in the root.
func (w *walker) resolveDir(logical, p string, e fs.DirEntry) (string, bool) {
	if e.IsDir() {
		return p, true
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return "", false
	}
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	fi, err := os.Stat(target)
	if err != nil || !fi.IsDir() {
		return "", false
	}
	if !w.inside(target) {
		w.problem("symlink-escape", logical, "symbolic link leads outside the root; not followed")
		return "", false
	}
	return target, true
}

// skillFile makes the Found of a skill folder's SKILL.md; entries, when
// given, are the folder's entries (read again when nil).
func (w *walker) skillFile(logical, real string, e fs.DirEntry, entries []fs.DirEntry) (Found, bool) {
	p := filepath.Join(real, SkillFile)
	if e.Type()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(p)
		if err != nil || !w.inside(target) {
			w.problem("symlink-escape", filepath.Join(logical, SkillFile), "SKILL.md is a symbolic link outside the root; skipped")
			return Found{}, false
		}
	}
	fi, err := os.Stat(p)
	if err != nil {
		w.problem("file-unreadable", filepath.Join(logical, SkillFile), "cannot stat: %v", err)
		return Found{}, false
	}
	if !fi.Mode().IsRegular() {
		w.problem("not-regular", filepath.Join(logical, SkillFile), "SKILL.md is not a regular file; skipped")
		return Found{}, false
	}
	rel, _ := filepath.Rel(w.realRoot, p)
	f := Found{
		Root: w.root, Path: p, Dir: real, RelPath: filepath.ToSlash(rel),
		Size: fi.Size(), ModTime: fi.ModTime(),
	}
	f.Resources, f.ResourcesTruncated = listResources(real, w.lim.MaxResources, entries)
	return f, true
}

// listResources lists the regular files of a skill folder other than
// SKILL.md, skipping hidden entries and symbolic links that leave the folder.
// top, when given, are the folder's own entries, already read.
func listResources(dir string, max int, top []fs.DirEntry) ([]skill.Resource, bool) {
	var out []skill.Resource
	truncated := false
	var visit func(real, rel string, depth int)
	visit = func(real, rel string, depth int) {
		entries := top
		if depth > 0 || entries == nil {
			var err error
			if entries, err = os.ReadDir(real); err != nil {
				return
			}
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || name == "node_modules" || name == "__pycache__" {
				continue
			}
			r := path.Join(rel, name)
			if r == SkillFile {
				continue
			}
			p := filepath.Join(real, name)
			info, err := os.Stat(p) // follows links; checked below
			if err != nil {
				continue
			}
			if e.Type()&fs.ModeSymlink != 0 {
				target, err := filepath.EvalSymlinks(p)
				if err != nil || !within(dir, target) {
					continue
				}
			}
			switch {
			case info.IsDir():
				if depth < 4 {
					visit(p, r, depth+1)
				}
			case info.Mode().IsRegular():
				if len(out) >= max {
					truncated = true
					return
				}
				out = append(out, skill.Resource{Path: r, Size: info.Size()})
			}
		}
	}
	visit(dir, "", 0)
	return out, truncated
}

// within reports whether p lies inside dir.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// ReadSkillFile reads at most max+1 bytes of a regular file, without blocking
// on a FIFO or device swapped in after the scan.
func ReadSkillFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return data, nil
}
