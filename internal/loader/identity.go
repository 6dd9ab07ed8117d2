package loader

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"os"
	"strconv"
	"strings"

	"github.com/mcpsag/router/internal/catalog"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// contentID returns a generation's content digest and the number made from
// it. The digest covers what clients can see of the generation: every valid
// copy of every skill in precedence order (root kind, agent, order and
// display name, path in the root, name, hashes, resources, registry entry,
// problems), the catalog's own problems and counts, the embedding model
// (when skills have vectors), the matching configuration, and the tools of
// MCP servers (name, definition hash, trust and agents). Paths inside
// the workspace are written relative to it and modification times are left
// out, so copies of one workspace give the same digest wherever they are.
//
// Each skill's part is hashed once and added to cache (by skill) for the
// next generations.
func contentID(cat *catalog.Catalog, model embed.Identity, dense bool, cfg match.Config, workspace string, cache map[*skill.Skill][]byte) (string, uint64) {
	prefix := workspace + string(os.PathSeparator)
	d := digester{h: sha256.New(), prefix: prefix}
	each := digester{prefix: prefix} // one skill at a time
	d.str("mcpsag-generation-1")
	if dense {
		d.str(model.Fingerprint)
		d.str(model.Settings)
	} else {
		d.str("")
	}
	cj, _ := json.Marshal(cfg)
	d.str(string(cj))
	d.int(int64(cat.Files))
	d.int(int64(cat.Invalid))
	d.problems(cat.Problems)
	entries := cat.Entries()
	if len(cache) == 0 && len(entries) > 2*partMin {
		skillDigests(entries, prefix, cache)
	}
	for _, e := range entries {
		s := e.Skill
		sum, ok := cache[s]
		if !ok {
			sum = each.skill(s)
			cache[s] = sum
		}
		d.buf = append(d.buf, sum...)
		d.int(int64(e.Rank))
		d.bool(e.ShadowedBy != nil)
	}
	tools := cat.Tools()
	d.int(int64(len(tools)))
	for _, t := range tools {
		d.str(t.Name)
		d.str(t.ContentHash)
		d.bool(t.Tool.Trusted)
		d.int(int64(len(t.Tool.Agents)))
		for _, a := range t.Tool.Agents {
			d.str(a)
		}
	}
	sum := d.sum()
	// A positive number under 2⁵³, so it survives JSON readers that hold
	// numbers as doubles.
	id := binary.BigEndian.Uint64(sum[:8]) >> 11
	if id == 0 {
		id = 1
	}
	return hex.EncodeToString(sum[:16]), id
}

// skillDigests puts in cache the digest of every entry's skill, made in
// parts: every digest is missing (a full scan, a start).
func skillDigests(entries []*skill.Entry, prefix string, cache map[*skill.Skill][]byte) {
	sums := make([][]byte, len(entries))
	inParts(len(entries), func(lo, hi int) {
		each := digester{prefix: prefix}
		for i := lo; i < hi; i++ {
			sums[i] = each.skill(entries[i].Skill)
		}
	})
	for i, e := range entries {
		cache[e.Skill] = sums[i]
	}
}

// skill returns the digest of what clients see of one skill. It uses and
// resets d's buffer, and not its hash.
func (d *digester) skill(s *skill.Skill) []byte {
	d.buf = d.buf[:0]
	d.str(string(s.Root.Kind))
	d.str(s.Root.Agent)
	d.int(int64(s.Root.Order))
	d.str(d.rel(s.Root.Display))
	d.str(s.RelPath)
	d.str(s.Name)
	d.str(s.ContentHash)
	d.str(s.FrontmatterHash)
	d.int(s.Size)
	d.resources(s)
	d.registry(s.Registry, d.rel(s.Registry.Source))
	d.problems(s.Problems)
	sum := sha256.Sum256(d.buf)
	return sum[:]
}

// digester writes length-prefixed fields into a buffer, which goes into
// its hash a block at a time (or, without a hash, is hashed whole): one
// write of many fields costs far less than a write of each.
type digester struct {
	h      hash.Hash // nil: the buffer is hashed whole by its user
	prefix string    // the workspace, with a trailing separator
	buf    []byte
}

// digestBlock is how much a digester with a hash buffers before writing.
const digestBlock = 32 << 10

func (d *digester) str(s string) {
	d.int(int64(len(s)))
	d.buf = append(d.buf, s...)
}

func (d *digester) int(v int64) {
	d.buf = binary.AppendVarint(d.buf, v)
	if d.h != nil && len(d.buf) >= digestBlock {
		d.h.Write(d.buf)
		d.buf = d.buf[:0]
	}
}

func (d *digester) bool(v bool) {
	if v {
		d.int(1)
	} else {
		d.int(0)
	}
}

// sum writes what is buffered into the hash and returns its sum.
func (d *digester) sum() []byte {
	d.h.Write(d.buf)
	d.buf = d.buf[:0]
	return d.h.Sum(nil)
}

// rel writes workspace paths relative to the workspace.
func (d *digester) rel(s string) string {
	if d.prefix == "" || d.prefix == string(os.PathSeparator) {
		return s
	}
	return strings.ReplaceAll(s, d.prefix, "")
}

// resources writes a skill's resource listing.
func (d *digester) resources(s *skill.Skill) {
	d.int(int64(len(s.Resources)))
	for _, r := range s.Resources {
		d.str(r.Path)
		d.int(r.Size)
	}
	d.bool(s.ResourcesTruncated)
}

// registry writes a registry entry, with its source as given.
func (d *digester) registry(e skill.RegistryEntry, source string) {
	d.str(e.Owner)
	d.int(int64(len(e.Tags)))
	for _, t := range e.Tags {
		d.str(t)
	}
	switch {
	case e.Enabled == nil:
		d.int(-1)
	case *e.Enabled:
		d.int(1)
	default:
		d.int(0)
	}
	d.str(source)
}

func (d *digester) problems(ps []skill.Problem) {
	d.int(int64(len(ps)))
	for _, p := range ps {
		d.str(strconv.Itoa(int(p.Severity)))
		d.str(p.Code)
		d.str(p.Field)
		d.str(d.rel(p.File))
		d.int(int64(p.Line))
		d.str(d.rel(p.Message))
	}
}

// input returns the digest of what a skill's catalog entry is built from
// (host paths included): the part of digestInput that tells a rescan
// whether anything changed. Like skill, it uses and resets d's buffer, and
// not its hash.
func (d *digester) input(s *skill.Skill) []byte {
	d.buf = d.buf[:0]
	d.str(s.Dir)
	d.str(s.Root.Path)
	d.str(s.Root.Display)
	d.str(string(s.Root.Kind))
	d.str(s.Root.Agent)
	d.int(int64(s.Root.Order))
	d.str(s.ContentHash)
	d.resources(s)
	d.registry(s.Registry, s.Registry.Source)
	d.problems(s.Problems)
	sum := sha256.Sum256(d.buf)
	return sum[:]
}
