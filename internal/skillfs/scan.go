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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

// SkillFile is the name of the file that makes a folder a skill
// (skill.FileName).
const SkillFile = skill.FileName

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
var DefaultScanLimits = ScanLimits{MaxDepth: 6, MaxDirs: 50000, MaxResources: skill.DefaultSizeLimits.MaxFiles}

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
	// Listings are the folders the walk read or took from the listings
	// it was given, for the next scan (none on systems other than Linux).
	Listings *Listings
}

// Scan walks the roots. A folder holding SKILL.md is a skill; the walk does
// not look for skills inside it. Folders starting with "_" or "." are skipped.
// Symbolic links are followed only when their target stays inside the root.
// Unreadable files and folders are reported and skipped.
//
// known, when not nil, are the listings an earlier scan recorded: a folder
// whose stamp is unchanged is not read again (see Listings). The result is
// the same with or without them.
//
// Roots are walked concurrently (up to GOMAXPROCS at a time); the result
// is the same as walking them one after the other.
func Scan(roots []skill.Root, lim ScanLimits, known *Listings) ScanResult {
	taken := time.Now()
	parts := make([]ScanResult, len(roots))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, r := range roots {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			w := walker{root: r, lim: lim, res: &parts[i], seen: map[string]bool{}, known: known}
			w.res.Listings = &Listings{Taken: taken, dirs: map[string]*folderListing{}}
			real, err := filepath.EvalSymlinks(r.Path)
			if err != nil {
				if !os.IsNotExist(err) {
					w.problem("root-unreadable", r.Path, "cannot open root: %v", err)
				}
				return
			}
			w.realRoot = real
			w.walk(r.Path, real, 0, nil)
		})
	}
	wg.Wait()
	var res ScanResult
	var files []*Found
	for i := range parts {
		p := &parts[i]
		res.Listings = res.Listings.merge(p.Listings)
		for j := range p.Files {
			files = append(files, &p.Files[j])
		}
		res.Dirs = append(res.Dirs, p.Dirs...)
		res.Problems = append(res.Problems, p.Problems...)
	}
	// Sorted through pointers: a Found is large, and sorting a slice of
	// them moves each one many times.
	slices.SortStableFunc(files, func(a, b *Found) int { return strings.Compare(a.Path, b.Path) })
	res.Files = make([]Found, len(files))
	for i, f := range files {
		res.Files[i] = *f
	}
	return res
}

type walker struct {
	root     skill.Root
	realRoot string
	lim      ScanLimits
	res      *ScanResult
	seen     map[string]bool // real paths visited, against symlink loops
	dirs     int
	known    *Listings // an earlier scan's, or nil
	tooDeep  bool      // a folder past MaxDepth was found and reported
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

// walk visits dir (shown as logical, resolved to real) at a depth below the
// root. pre, when not nil, is the folder read ahead.
func (w *walker) walk(logical, real string, depth int, pre *listing) {
	if !w.enter(real) {
		return
	}
	pre, ok := w.list(logical, real, pre)
	if !ok {
		return
	}
	entries := pre.entries
	for _, e := range entries {
		if e.Name() != SkillFile {
			continue
		}
		if f, ok := w.skillFile(logical, real, e, entries, pre.skill); ok {
			w.res.Files = append(w.res.Files, f)
			return // a skill folder: its subfolders are resources
		}
	}
	if depth >= w.lim.MaxDepth {
		if !w.tooDeep && slices.ContainsFunc(entries, func(e fs.DirEntry) bool {
			return !ignoredName(e.Name()) && (e.IsDir() || e.Type()&fs.ModeSymlink != 0)
		}) {
			w.tooDeep = true
			w.problem("scan-limit", logical, "folders more than %d levels below the root are not searched for SKILL.md", w.lim.MaxDepth)
		}
		return
	}
	w.descend(logical, real, depth, entries)
}

// enter counts the folder real, reporting false when it was visited
// already or is past MaxDirs.
func (w *walker) enter(real string) bool {
	if w.seen[real] {
		return false
	}
	w.seen[real] = true
	w.dirs++
	if w.dirs > w.lim.MaxDirs {
		if w.dirs == w.lim.MaxDirs+1 {
			w.problem("scan-limit", w.root.Path, "root has more than %d folders; the rest is not scanned", w.lim.MaxDirs)
		}
		return false
	}
	w.res.Dirs = append(w.res.Dirs, real)
	return true
}

// list returns the folder's listing (pre, once read, when not nil) and
// keeps it in the result; ok is false for a folder that cannot be read.
func (w *walker) list(logical, real string, pre *listing) (_ *listing, ok bool) {
	if pre == nil {
		pre = &listing{}
		pre.read(noParent, real, real, w.lim.MaxResources, w.known.lookup(real))
	} else {
		<-pre.done
	}
	if pre.err != nil {
		w.problem("dir-unreadable", logical, "cannot read folder: %v", pre.err)
		return nil, false
	}
	w.res.Listings.add(real, pre.stamp, pre.entries)
	if pre.reused {
		w.res.Listings.reused++
	}
	return pre, true
}

// descend walks the subfolders among entries, the folder's at depth.
func (w *walker) descend(logical, real string, depth int, entries []fs.DirEntry) {
	ahead := w.readAhead(real, entries)
	if ahead != nil {
		// Most subfolders of a folder this large are skills (a root).
		w.res.Files = slices.Grow(w.res.Files, len(entries))
	}
	for i, e := range entries {
		if ignoredName(e.Name()) {
			continue
		}
		childLogical := filepath.Join(logical, e.Name())
		childReal, ok := w.resolveDir(childLogical, filepath.Join(real, e.Name()), e)
		if ok {
			var pre *listing
			if ahead != nil {
				pre = ahead[i]
			}
			w.walk(childLogical, childReal, depth+1, pre)
		}
	}
}

// listing is a folder's entries and, when the folder holds a regular
// SKILL.md, what skillFile needs of it.
type listing struct {
	entries []fs.DirEntry
	stamp   dirStamp // the folder's when read; zero where unknown
	reused  bool     // entries came from an earlier scan's listing
	err     error
	skill   *skillStat    // nil: no regular SKILL.md entry
	done    chan struct{} // closed once read, for a folder read ahead
}

// skillStat is the stat of a folder's SKILL.md and the folder's resources.
type skillStat struct {
	info      fs.FileInfo
	err       error
	resources []skill.Resource
	truncated bool
}

// readPath is listing.read through paths: os.ReadDir and os.Stat.
func (l *listing) readPath(real string, maxResources int) {
	l.entries, l.err = os.ReadDir(real)
	l.statSkill(real, maxResources, func() (fs.FileInfo, error) { return os.Stat(filepath.Join(real, SkillFile)) })
}

// statSkill sets l.skill when l's entries hold a regular SKILL.md, with
// what stat says of it and, when it is still a regular file, the
// folder's resources.
func (l *listing) statSkill(real string, maxResources int, stat func() (fs.FileInfo, error)) {
	for _, e := range l.entries {
		if e.Name() == SkillFile && e.Type().IsRegular() {
			st := &skillStat{}
			if st.info, st.err = stat(); st.err == nil && st.info.Mode().IsRegular() {
				st.resources, st.truncated = listResources(real, maxResources, l.entries)
			}
			l.skill = st
			return
		}
	}
}

// readAheadMin is the number of subfolders from which a folder's subfolders
// are read on several goroutines ahead of the walk. A workspace of 100,000
// skills spends most of its scan in the system calls that read each skill
// folder and stat its SKILL.md; these overlap on several CPUs, while the
// walk itself (order, limits, problems) stays sequential and gives the same
// result as without reading ahead.
const readAheadMin = 16

// readAhead starts reading the plain subfolders of real among entries on
// GOMAXPROCS goroutines, in order; it returns their listings by entry index
// (nil for the other entries), or nil when there are too few to gain. It
// reads no more folders than the walk may still visit.
func (w *walker) readAhead(real string, entries []fs.DirEntry) []*listing {
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 {
		return nil
	}
	var todo []int
	budget := w.lim.MaxDirs - w.dirs
	for i, e := range entries {
		if len(todo) >= budget {
			break
		}
		if e.IsDir() && !ignoredName(e.Name()) {
			todo = append(todo, i)
		}
	}
	if len(todo) < readAheadMin {
		return nil
	}
	out := make([]*listing, len(entries))
	for _, i := range todo {
		out[i] = &listing{done: make(chan struct{})}
	}
	parent, closeParent := openParent(real)
	var next atomic.Int64
	var running sync.WaitGroup
	for range workers {
		running.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= len(todo) {
					return
				}
				l, name := out[todo[k]], entries[todo[k]].Name()
				child := filepath.Join(real, name)
				l.read(parent, name, child, w.lim.MaxResources, w.known.lookup(child))
				close(l.done)
			}
		})
	}
	go func() {
		running.Wait()
		closeParent()
	}()
	return out
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

// brokenLink names what is wrong with the symbolic link p, which
// EvalSymlinks could not follow (err): a loop (the kernel says so when the
// link is opened), a link to nothing, or a target that cannot be read.
func brokenLink(p string, err error) (code, what string) {
	if _, serr := os.Stat(p); errors.Is(serr, syscall.ELOOP) {
		return "symlink-loop", "a symbolic link that loops (it leads back to itself)"
	}
	if errors.Is(err, fs.ErrNotExist) {
		return "symlink-broken", "a symbolic link to nothing"
	}
	return "file-unreadable", fmt.Sprintf("a symbolic link that cannot be followed (%v)", err)
}

// skillFile makes the Found of a skill folder's SKILL.md; entries, when
// given, are the folder's entries (read again when nil), and st, when
// given, what listing.read found of a regular SKILL.md.
func (w *walker) skillFile(logical, real string, e fs.DirEntry, entries []fs.DirEntry, st *skillStat) (Found, bool) {
	p := filepath.Join(real, SkillFile)
	if e.Type()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(p)
		switch {
		case err != nil:
			code, what := brokenLink(p, err)
			w.problem(code, filepath.Join(logical, SkillFile), "SKILL.md is %s; skipped", what)
			return Found{}, false
		case !w.inside(target):
			w.problem("symlink-escape", filepath.Join(logical, SkillFile), "SKILL.md is a symbolic link outside the root; skipped")
			return Found{}, false
		}
	}
	var fi fs.FileInfo
	var err error
	if st != nil {
		fi, err = st.info, st.err
	} else {
		fi, err = os.Stat(p)
	}
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
	if st != nil {
		f.Resources, f.ResourcesTruncated = st.resources, st.truncated
	} else {
		f.Resources, f.ResourcesTruncated = listResources(real, w.lim.MaxResources, entries)
	}
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
