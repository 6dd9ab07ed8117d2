package loader

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/catalog"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/store"
)

// skillMemo is the skill built from one SKILL.md path, and what it was
// built from: the next build reuses it (the same pointer) when all of that
// is unchanged.
type skillMemo struct {
	rec      *store.FileRecord
	hasReg   bool
	skill    *skill.Skill
	stale    *skill.Problem // the serving-last-good warning, when any
	tooLarge *skill.Problem // the skill-too-large warning, when any
	digestIn []byte         // the skill's part of digestInput
}

// same reports whether m was built from rec, f and the registry entry e
// (hasReg: there is one). The skill it built holds what it took from f and
// e.
func (m *skillMemo) same(rec *store.FileRecord, f skillfs.Found, e skill.RegistryEntry, hasReg bool) bool {
	s, r := m.skill, m.skill.Registry
	return m.rec == rec && s.Root == f.Root && s.Dir == f.Dir && s.RelPath == f.RelPath &&
		s.ResourcesTruncated == f.ResourcesTruncated && slices.Equal(s.Resources, f.Resources) &&
		m.hasReg == hasReg && (!hasReg || r.Owner == e.Owner && r.Source == e.Source && slices.Equal(r.Tags, e.Tags) &&
		((r.Enabled == nil) == (e.Enabled == nil)) && (e.Enabled == nil || *r.Enabled == *e.Enabled))
}

// sameFiles reports whether two scans found the same SKILL.md paths.
func sameFiles(a, b []skillfs.Found) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) > 0 && &a[0] == &b[0] {
		return true
	}
	for i := range a {
		if a[i].Path != b[i].Path {
			return false
		}
	}
	return true
}

// catalogInput assembles skills from the good versions, the scan's resource
// listings and the registries f found, and fingerprints it all
// (digestInput). A skill whose record, listing and registry entry did not
// change since the last pass is the same *skill.Skill as then.
func (a *assembly) catalogInput(f *found, recs map[string]*store.FileRecord) (catalog.Input, string) {
	scan := f.scan
	in := catalog.Input{Precedence: a.precedence, Files: len(scan.Files)}
	var other []skill.Problem // problems no skill's digest covers
	in.Problems = append(in.Problems, scan.Problems...)
	other = append(other, scan.Problems...)
	in.Problems = append(in.Problems, f.registryProblems...)
	other = append(other, f.registryProblems...)

	if a.memo == nil || !sameFiles(a.lastMemoFiles, scan.Files) {
		a.renewMemo(scan.Files)
	}
	a.lastMemoFiles = scan.Files
	used := a.addSkills(&in, &other, scan.Files, recs, f.registries)
	for _, p := range unknownRegistryEntries(f.registries, used) {
		in.Problems = append(in.Problems, p)
		other = append(other, p)
	}
	skill.SortProblems(in.Problems)
	skill.SortProblems(other)
	return in, a.inputDigest(in, other)
}

// renewMemo starts a new memo for another set of files, keeping the
// entries of the paths still there, and a new folder order.
func (a *assembly) renewMemo(files []skillfs.Found) {
	old := a.memo
	a.memo = make(map[string]*skillMemo, len(files))
	for _, f := range files {
		if m, ok := old[f.Path]; ok {
			a.memo[f.Path] = m
		}
	}
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, c int) int { return strings.Compare(files[a].Dir, files[c].Dir) })
	a.dirMemo = make([]*skillMemo, len(order))
	a.dirPos = make([]int, len(order))
	for i, k := range order {
		a.dirPos[k] = i
		a.dirMemo[i] = a.memo[files[k].Path]
	}
}

// addSkills adds to in the skills of files (with recs, their records, and
// the registries' entries), and their problems, bringing the memo in step;
// the problems of invalid files go to other too. It returns the registry
// entries a skill used: by root path, their folded names.
func (a *assembly) addSkills(in *catalog.Input, other *[]skill.Problem, files []skillfs.Found, recs map[string]*store.FileRecord,
	registries map[string]map[string]skill.RegistryEntry) map[string]map[string]bool {
	memo := a.memo
	fresh := a.freshMemos(files, recs, registries)
	used := make(map[string]map[string]bool)
	for i, f := range files {
		rec := recs[f.Path]
		in.Problems = append(in.Problems, rec.Problems...)
		if rec.Good == nil {
			in.Invalid++
			*other = append(*other, rec.Problems...)
			if _, ok := memo[f.Path]; ok {
				delete(memo, f.Path)
				a.dirMemo[a.dirPos[i]] = nil
			}
			continue
		}
		m := memo[f.Path] // made from this record, unless a fresh one is
		if fresh[i] != nil {
			m = fresh[i]
		}
		if m.hasReg {
			if used[f.Root.Path] == nil {
				used[f.Root.Path] = map[string]bool{}
			}
			used[f.Root.Path][m.rec.Good.FoldedName] = true
		}
		if memo[f.Path] != m {
			memo[f.Path] = m
			a.dirMemo[a.dirPos[i]] = m
		}
		if m.stale != nil {
			in.Problems = append(in.Problems, *m.stale)
		}
		if m.tooLarge != nil {
			in.Problems = append(in.Problems, *m.tooLarge)
		}
		in.Skills = append(in.Skills, m.skill)
	}
	return used
}

// unknownRegistryEntries returns a warning for each registry entry no
// skill used (used: by root path, the folded names used).
func unknownRegistryEntries(registries map[string]map[string]skill.RegistryEntry, used map[string]map[string]bool) []skill.Problem {
	var out []skill.Problem
	for root, entries := range registries {
		for key, e := range entries {
			if !used[root][key] {
				out = append(out, skill.Problem{
					Severity: skill.SeverityWarning, Code: "registry-unknown-skill", File: e.Source,
					Message: fmt.Sprintf("registry names %q, but no skill of that name is in this root", key),
				})
			}
		}
	}
	return out
}

// inputDigest is the digest of a catalog input (digestInput): every
// skill's part, in folder order, then the counts and other, the problems
// no skill carries.
func (a *assembly) inputDigest(in catalog.Input, other []skill.Problem) string {
	h := sha256.New()
	for _, m := range a.dirMemo {
		if m != nil {
			h.Write(m.digestIn)
		}
	}
	_ = json.NewEncoder(h).Encode([]any{in.Files, in.Invalid, other})
	return hex.EncodeToString(h.Sum(nil))
}

// partMin is the fewest items inParts gives each of its goroutines.
var partMin = 1024

// inParts calls part on up to GOMAXPROCS goroutines, with consecutive
// ranges [lo, hi) that cover [0, n), each of at least partMin items but
// the only one, and returns when every call has.
func inParts(n int, part func(lo, hi int)) {
	workers := max(1, min(runtime.GOMAXPROCS(0), n/partMin))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { part(w*n/workers, (w+1)*n/workers) })
	}
	wg.Wait()
}

// freshMemos returns, by index in files, the memo of each valid file whose
// memo in a.memo is missing or was made from another record, listing or
// registry entry (nil for the others): its skill and its input digest. They
// are made on up to GOMAXPROCS goroutines, each with its own digester: at a
// restart that is every skill. It only reads a.memo, recs and registries.
func (a *assembly) freshMemos(files []skillfs.Found, recs map[string]*store.FileRecord, registries map[string]map[string]skill.RegistryEntry) []*skillMemo {
	fresh := make([]*skillMemo, len(files))
	inParts(len(files), func(lo, hi int) {
		var digests digester // one buffer for every skill's input digest
		for i := lo; i < hi; i++ {
			f := &files[i]
			rec := recs[f.Path]
			if rec.Good == nil {
				continue
			}
			g, m := rec.Good, a.memo[f.Path]
			e, hasReg := registries[f.Root.Path][g.FoldedName]
			if hasReg {
				e.Source = path.Join(f.Root.Display, skillfs.RegistryFile)
			}
			if m != nil && m.same(rec, *f, e, hasReg) {
				continue
			}
			m = &skillMemo{rec: rec, hasReg: hasReg}
			s := &skill.Skill{
				Name: g.Name, Dir: f.Dir, RelPath: f.RelPath, Root: f.Root,
				Frontmatter: g.Frontmatter, BodyLine: g.BodyLine, BodyTokens: g.BodyTokens,
				ContentHash: g.ContentHash, FrontmatterHash: g.FrontmatterHash,
				Size: g.Size, ModTime: time.Unix(0, g.ModTimeNano),
				Resources: f.Resources, ResourcesTruncated: f.ResourcesTruncated,
				Problems: rec.Problems,
			}
			if s.Oversize = a.size.Oversize(s); s.Oversize != "" {
				m.tooLarge = &skill.Problem{
					Severity: skill.SeverityWarning, Code: "skill-too-large", File: f.Path,
					Message: "not served: " + s.Oversize,
				}
				s.Problems = append(slices.Clip(s.Problems), *m.tooLarge)
			}
			if g.ContentHash != rec.ContentHash {
				s.Problems = append(slices.Clip(s.Problems), skill.Problem{
					Severity: skill.SeverityWarning, Code: "serving-last-good", File: f.Path,
					Message: fmt.Sprintf("the file has errors; serving the last version that parsed (sha256 %.12s)", g.ContentHash),
				})
				m.stale = &s.Problems[len(s.Problems)-1]
			}
			if hasReg {
				s.Registry = e
			}
			m.skill = s
			m.digestIn = digests.input(s)
			fresh[i] = m
		}
	})
	return fresh
}

// toolsDigest extends a catalog input's digest with the tools of MCP
// servers: what the catalog and the index take from each.
func toolsDigest(digest string, tools []*skill.Skill) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode(digest)
	for _, t := range tools {
		_ = enc.Encode([]any{t.Name, t.ContentHash, t.Tool.Trusted, t.Tool.Agents})
	}
	return hex.EncodeToString(h.Sum(nil))
}
