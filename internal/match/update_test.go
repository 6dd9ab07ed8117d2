package match

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/slowtest"
)

// TestUpdateIsBuild edits a catalog step by step (skills added, removed,
// edited, renamed, re-tagged, hidden, disabled, moved in catalog order,
// vectors changed, a model of another dimension) and checks after every step
// that Update gives exactly the answers a fresh Build of the same input
// gives.
func TestUpdateIsBuild(t *testing.T) {
	slowtest.Skip(t, "compares thousands of updates with builds; minutes under -race")
	ctx := context.Background()
	r := rand.New(rand.NewPCG(11, 12))
	z := rand.NewZipf(r, 1.1, 2, 5000)
	skills, vecs, bodies := exactCorpus(t, 1500, 16, 3)
	tasks, qv := zipfTasks(r, z, skills, 40, 16, func(i int) int {
		if words := 2 + r.IntN(6); i%4 != 0 {
			return words
		}
		return 200
	})
	emb := fakeQuery{vecs: qv}
	input := func() BuildInput {
		return BuildInput{Skills: skills, Vectors: vecs, Embedder: emb, Config: DefaultConfig(),
			Body: func(s *skill.Skill) (string, error) {
				b, ok := bodies[s.ContentHash]
				if !ok {
					return "", fmt.Errorf("no body for %s", s.ContentHash)
				}
				return b, nil
			}}
	}
	ix, err := Build(ctx, input())
	if err != nil {
		t.Fatal(err)
	}
	serial := 0
	fresh := func(s *skill.Skill) *skill.Skill {
		c := *s
		serial++
		c.ContentHash = fmt.Sprintf("e%d", serial)
		return &c
	}
	for step := range 30 {
		// A few edits per step, sometimes many.
		edits := 1 + r.IntN(4)
		if step%10 == 9 {
			edits = 60
		}
		for range edits {
			i := r.IntN(len(skills))
			switch r.IntN(11) {
			case 0: // remove
				skills = append(skills[:i:i], skills[i+1:]...)
				vecs = append(vecs[:i:i], vecs[i+1:]...)
			case 1: // add
				s := fresh(skills[i])
				s.Name = fmt.Sprintf("new%d-%s", serial, zipfText(r, z, 1))
				s.Dir = "/skills/" + s.Name
				s.Frontmatter.Description = zipfText(r, z, 10)
				bodies[s.ContentHash] = zipfText(r, z, 300)
				at := r.IntN(len(skills) + 1)
				skills = append(skills[:at:at], append([]*skill.Skill{s}, skills[at:]...)...)
				v := make([]float32, 16)
				for j := range v {
					v[j] = float32(r.NormFloat64())
				}
				vecs = append(vecs[:at:at], append([][]float32{v}, vecs[at:]...)...)
			case 2: // edit the body
				s := fresh(skills[i])
				bodies[s.ContentHash] = zipfText(r, z, r.IntN(500))
				skills[i] = s
			case 3: // edit the description and the vector
				s := fresh(skills[i])
				s.Frontmatter.Description = zipfText(r, z, 8)
				bodies[s.ContentHash] = bodies[skills[i].ContentHash]
				skills[i] = s
				v := make([]float32, 16)
				for j := range v {
					v[j] = float32(r.NormFloat64())
				}
				vecs[i] = v
			case 4: // registry tags (no new content hash)
				c := *skills[i]
				c.Registry.Tags = []string{zipfText(r, z, 1)}
				skills[i] = &c
			case 5: // hidden flips
				s := fresh(skills[i])
				s.Frontmatter.Hidden = !s.Frontmatter.Hidden
				bodies[s.ContentHash] = bodies[skills[i].ContentHash]
				skills[i] = s
			case 6: // disabled in the registry, or enabled again
				c := *skills[i]
				if c.Registry.Enabled == nil {
					f := false
					c.Registry.Enabled = &f
				} else {
					c.Registry.Enabled = nil
				}
				skills[i] = &c
			case 7: // the vector alone
				if vecs[i] != nil {
					v := append([]float32(nil), vecs[i]...)
					v[0] += 0.5
					vecs[i] = v
				} else {
					vecs[i] = qv[tasks[0]]
				}
			case 8: // triggers
				s := fresh(skills[i])
				s.Frontmatter.Triggers = []string{zipfText(r, z, 2)}
				bodies[s.ContentHash] = bodies[skills[i].ContentHash]
				skills[i] = s
			case 9: // moved in catalog order, same folder
				j := r.IntN(len(skills))
				skills[i], skills[j] = skills[j], skills[i]
				vecs[i], vecs[j] = vecs[j], vecs[i]
			case 10: // an unusable vector: zero, or one value short
				if r.IntN(2) == 0 {
					vecs[i] = make([]float32, len(qv[tasks[0]]))
				} else {
					vecs[i] = make([]float32, len(qv[tasks[0]])-1)
					vecs[i][0] = 1
				}
			}
		}
		// Every skill gets a fresh pointer, as each generation's catalog
		// does.
		for i, s := range skills {
			c := *s
			skills[i] = &c
		}
		if step == 20 { // another model: every vector changes dimension
			for i := range vecs {
				if vecs[i] != nil {
					vecs[i] = append(append([]float32(nil), vecs[i]...), 1, 2)
				}
			}
			for k, v := range qv {
				qv[k] = append(append([]float32(nil), v...), 1, 2)
			}
		}
		nx, us, err := ix.Update(ctx, input())
		if err != nil {
			t.Fatal(err)
		}
		want, err := Build(ctx, input())
		if err != nil {
			t.Fatal(err)
		}
		if us.Rebuilt {
			t.Fatalf("step %d: rebuilt", step)
		}
		if got, w := nx.Stats(), want.Stats(); got.Skills != w.Skills || got.Hidden != w.Hidden || got.Excluded != w.Excluded ||
			got.Vectors != w.Vectors || got.BadVectors != w.BadVectors || got.BodyErrors != w.BodyErrors {
			t.Fatalf("step %d: stats %+v, want %+v", step, got, w)
		}
		compareIndexes(t, fmt.Sprintf("step %d (%+v)", step, us), nx, want, tasks)
		ix = nx
	}
}

// compareIndexes checks that two indexes answer every task the same way.
func compareIndexes(t *testing.T, what string, got, want *Index, tasks []string) {
	t.Helper()
	ctx := context.Background()
	if g, w := names(got.Skills()), names(want.Skills()); g != w {
		t.Fatalf("%s: skills differ", what)
	}
	for i, task := range tasks {
		for _, mode := range []skill.MatchMode{skill.ModeHybrid, skill.ModeKeyword} {
			for _, agent := range []string{"", "reviewer"} {
				req := skill.MatchRequest{Task: task, Agent: agent, TopK: 5, Options: skill.MatchOptions{Mode: mode, IncludeHidden: i%3 == 0}}
				a, err := want.Rank(ctx, req, nil)
				if err != nil {
					t.Fatal(err)
				}
				b, err := got.Rank(ctx, req, nil)
				if err != nil {
					t.Fatal(err)
				}
				if x, y := exactRendering(a), exactRendering(b); x != y {
					t.Fatalf("%s: task %d %s agent %q: updated index differs from a fresh build:\nbuild  %s\nupdate %s", what, i, mode, agent, x, y)
				}
			}
		}
	}
}

func names(ss []*skill.Skill) string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(s.Name + ",")
	}
	return b.String()
}

// TestSnapshotRestoresForUpdate writes an index, reads it back, updates the
// restored index with the same skills and with edited ones, and checks the
// answers against fresh builds; a damaged snapshot is an error, never a
// panic.
func TestSnapshotRestoresForUpdate(t *testing.T) {
	slowtest.Skip(t, "25 s under -race")
	ctx := context.Background()
	skills, vecs, bodies := exactCorpus(t, 800, 16, 5)
	r := rand.New(rand.NewPCG(1, 1))
	z := rand.NewZipf(r, 1.1, 2, 5000)
	qv := map[string][]float32{}
	var tasks []string
	for i := range 20 {
		task := zipfText(r, z, 3+i*10)
		tasks = append(tasks, task)
		qv[task] = vecs[i+1]
	}
	body := func(s *skill.Skill) (string, error) { return bodies[s.ContentHash], nil }
	in := BuildInput{Skills: skills, Vectors: vecs, Embedder: fakeQuery{qv}, Config: DefaultConfig(), Body: body}
	ix, err := Build(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := ix.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	data := buf.String()
	mapped := pageAligned(data) // stands in for the mapped file
	base, err := ReadSnapshot(mapped)
	if err != nil {
		t.Fatal(err)
	}
	if !within(mapped, base.dense.blocks[0].vecs) || !within(mapped, base.dense.blocks[0].q) || !within(mapped, base.sparse.fields[0].lens) {
		t.Error("the restored vectors and lengths are copies, not the arrays in the snapshot")
	}
	for bi, b := range base.dense.blocks {
		if uintptr(unsafe.Pointer(&b.q[0]))%rowAlign != 0 || uintptr(unsafe.Pointer(&b.vecs[0]))%rowAlign != 0 {
			t.Fatalf("vector block %d: rows not aligned to %d bytes in the snapshot", bi, rowAlign)
		}
	}
	calls := 0
	in.Body = func(s *skill.Skill) (string, error) { calls++; return bodies[s.ContentHash], nil }
	restored, us, err := base.Update(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if us.Kept != len(skills)-restored.Stats().Excluded || us.Changed+us.Added+us.Removed != 0 || calls != 0 {
		t.Errorf("restore then update with the same skills: %+v, %d bodies read", us, calls)
	}
	compareIndexes(t, "restored", restored, ix, tasks)
	withExhaustive(false, func() { compareIndexes(t, "restored, int8 pre-scan", restored, ix, tasks) })
	for bi, b := range ix.dense.blocks {
		r := restored.dense.blocks[bi]
		if !slices.Equal(b.q, r.q) || !slices.Equal(b.scale, r.scale) || !slices.Equal(b.bound, r.bound) ||
			!slices.Equal(b.sum, r.sum) || !slices.Equal(b.vecs, r.vecs) || !slices.Equal(b.has, r.has) {
			t.Fatalf("vector block %d differs after a restore", bi)
		}
	}

	// Edit two skills and drop one; the restored base updates like a
	// fresh build.
	edited := append([]*skill.Skill(nil), skills...)
	c := *edited[3]
	c.ContentHash, c.Frontmatter.Description = "edited", "entirely new words here"
	bodies["edited"] = "a new body"
	edited[3] = &c
	edited = append(edited[:10], edited[11:]...)
	ev := append(append([][]float32(nil), vecs[:10]...), vecs[11:]...)
	in2 := BuildInput{Skills: edited, Vectors: ev, Embedder: fakeQuery{qv}, Config: DefaultConfig(), Body: body}
	up, _, err := base.Update(ctx, in2)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Build(ctx, in2)
	if err != nil {
		t.Fatal(err)
	}
	compareIndexes(t, "restored and edited", up, want, tasks)
	if string(mapped) != data {
		t.Error("updating a restored index wrote into the snapshot it was read from")
	}

	for _, cut := range []int{0, 5, 40, len(data) / 3, len(data) - 1} {
		if _, err := ReadSnapshot([]byte(data[:cut])); err == nil {
			t.Errorf("a snapshot cut at %d of %d bytes was read", cut, len(data))
		}
	}
	bad := []byte(data)
	for i := 200; i < len(bad); i += 997 {
		bad[i] ^= 0x5a
	}
	if _, err := ReadSnapshot(bad); err == nil {
		t.Error("a snapshot with flipped bytes was read")
	}
}

// TestUpdateWithTools: tools of MCP servers have no folder; Update and a
// restored snapshot tell them apart by name (skill.Key), and an index whose
// tools gain or lose parameters is built again with or without the
// parameters field. After every step the answers are those of a fresh
// Build.
func TestUpdateWithTools(t *testing.T) {
	slowtest.Skip(t, "39 s under -race")
	ctx := context.Background()
	skills, _, bodies := exactCorpus(t, 300, 16, 7)
	r := rand.New(rand.NewPCG(3, 4))
	z := rand.NewZipf(r, 1.1, 2, 5000)
	tool := func(server, name string, params ...string) *skill.Skill {
		t := &skill.Tool{Server: server, Name: name, InputSchema: []byte(`{"type":"object"}`)}
		for _, p := range params {
			t.Params = append(t.Params, skill.ToolParam{Name: p, Description: zipfText(r, z, 5)})
		}
		s := &skill.Skill{Name: server + "." + name, Kind: skill.EntryTool, Tool: t,
			Frontmatter: skill.Frontmatter{Name: server + "." + name, Description: zipfText(r, z, 12)},
			Root:        skill.Root{Kind: skill.KindServer, Display: server}}
		s.ContentHash = skill.Hash([]byte(fmt.Sprint(s.Name, s.Frontmatter.Description, params)))
		return s
	}
	var tasks []string
	for i := range 15 {
		tasks = append(tasks, zipfText(r, z, 3+i*4))
	}
	tasks = append(tasks, "srv create issue", "create issue in the repository")
	body := func(s *skill.Skill) (string, error) {
		if s.IsTool() {
			return "", nil
		}
		return bodies[s.ContentHash], nil
	}
	in := func(entries []*skill.Skill) BuildInput {
		return BuildInput{Skills: entries, Config: DefaultConfig(), Body: body}
	}
	entries := append(slices.Clone(skills), tool("srv", "create_issue"), tool("srv", "merge"), tool("gh", "merge"))
	ix, err := Build(ctx, in(entries))
	if err != nil {
		t.Fatal(err)
	}
	if ix.sparse.hasField(fieldParams) {
		t.Fatal("parameters field indexed without a tool that has parameters")
	}
	steps := []struct {
		name    string
		edit    func([]*skill.Skill) []*skill.Skill
		rebuilt bool
	}{
		{"a tool gains parameters", func(es []*skill.Skill) []*skill.Skill {
			return append(es[:len(es)-3:len(es)-3], tool("srv", "create_issue", "repo", "title"), es[len(es)-2], es[len(es)-1])
		}, true},
		{"a tool is added", func(es []*skill.Skill) []*skill.Skill {
			return append(es, tool("gh", "close_issue", "number"))
		}, false},
		{"a tool is removed", func(es []*skill.Skill) []*skill.Skill {
			return slices.DeleteFunc(es, func(s *skill.Skill) bool { return s.Name == "srv.merge" })
		}, false},
		{"a tool's definition changes", func(es []*skill.Skill) []*skill.Skill {
			for i, s := range es {
				if s.Name == "gh.merge" {
					es[i] = tool("gh", "merge", "base")
				}
			}
			return es
		}, false},
		{"the tools with parameters go", func(es []*skill.Skill) []*skill.Skill {
			return slices.DeleteFunc(es, func(s *skill.Skill) bool { return s.IsTool() && len(s.Tool.Params) > 0 })
		}, true},
	}
	for _, st := range steps {
		entries = st.edit(slices.Clone(entries))
		nx, us, err := ix.Update(ctx, in(entries))
		if err != nil {
			t.Fatal(err)
		}
		if us.Rebuilt != st.rebuilt {
			t.Errorf("%s: rebuilt %v, want %v", st.name, us.Rebuilt, st.rebuilt)
		}
		want, err := Build(ctx, in(entries))
		if err != nil {
			t.Fatal(err)
		}
		compareIndexes(t, st.name, nx, want, tasks)
		ix = nx
	}

	// A snapshot keeps the tools apart by name: restored and updated with
	// the same entries, every one is kept.
	entries = append(entries, tool("srv", "label", "name"))
	ix, err = Build(ctx, in(entries))
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := ix.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	base, err := ReadSnapshot([]byte(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	restored, us, err := base.Update(ctx, in(entries))
	if err != nil {
		t.Fatal(err)
	}
	if us.Kept != len(entries) || us.Rebuilt {
		t.Errorf("restored with the same entries: %+v, want all %d kept", us, len(entries))
	}
	compareIndexes(t, "restored with tools", restored, ix, tasks)
	entries = slices.DeleteFunc(entries, func(s *skill.Skill) bool { return s.Name == "srv.create_issue" })
	edited, _, err := base.Update(ctx, in(entries))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Build(ctx, in(entries))
	if err != nil {
		t.Fatal(err)
	}
	compareIndexes(t, "restored, a tool removed", edited, want, tasks)
}

// TestUnitVectorsKeepTheirBits: the unit vectors an index hands out
// (EachVector), or UnitVector makes, given back with
// BuildInput.UnitVectors, are held as they are, bit for bit, by a new
// Build and by an Update, which then changes no vector; without the flag
// they are normalised again, which moves the last bit of a few rows (about
// 1 in 700 at 16 dimensions, none seen at 256).
func TestUnitVectorsKeepTheirBits(t *testing.T) {
	slowtest.Skip(t, "over 100 s under -race")
	ctx := context.Background()
	skills, vecs, bodies := exactCorpus(t, 3000, 16, 9)
	body := func(s *skill.Skill) (string, error) { return bodies[s.ContentHash], nil }
	in := BuildInput{Skills: skills, Vectors: vecs, Config: DefaultConfig(), Body: body}
	ix, err := Build(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[*skill.Skill][]float32{}
	ix.EachVector(func(s *skill.Skill, v []float32) { rows[s] = v })
	if len(rows) != ix.Stats().Vectors || len(rows) == 0 {
		t.Fatalf("EachVector gave %d vectors, the index holds %d", len(rows), ix.Stats().Vectors)
	}
	given, made := make([][]float32, len(skills)), make([][]float32, len(skills))
	for i, s := range skills {
		given[i] = rows[s]
		if vecs[i] != nil {
			made[i] = UnitVector(vecs[i])
		}
	}
	sameRows := func(what string, got *Index) {
		t.Helper()
		for bi, b := range ix.dense.blocks {
			g := got.dense.blocks[bi]
			if !slices.Equal(b.vecs, g.vecs) || !slices.Equal(b.has, g.has) || !slices.Equal(b.q, g.q) {
				t.Fatalf("%s: vector block %d differs from the first build's", what, bi)
			}
		}
	}
	for _, c := range []struct {
		what string
		v    [][]float32
	}{{"rows handed out", given}, {"UnitVector", made}} {
		unit := in
		unit.Vectors, unit.UnitVectors = c.v, true
		built, err := Build(ctx, unit)
		if err != nil {
			t.Fatal(err)
		}
		sameRows(c.what+", built", built)
		up, us, err := ix.Update(ctx, unit)
		if err != nil {
			t.Fatal(err)
		}
		if us.Vectors != 0 || up.dense != ix.dense {
			t.Errorf("%s, update: %d vectors set, want 0 and the same blocks", c.what, us.Vectors)
		}
	}

	// Normalising the rows again moves some of them: the flag matters.
	again := in
	again.Vectors = given
	renorm, err := Build(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for bi, b := range ix.dense.blocks {
		if !slices.Equal(b.vecs, renorm.dense.blocks[bi].vecs) {
			moved++
		}
	}
	if moved == 0 {
		t.Error("normalising unit rows again changed no block; this test cannot tell the flag's effect")
	}

	// A vector said to be unit that is not is normalised all the same.
	scaled := make([][]float32, len(vecs))
	for i, v := range made {
		if v != nil {
			scaled[i] = make([]float32, len(v))
			for j, x := range v {
				scaled[i][j] = 3 * x
			}
		}
	}
	unit := in
	unit.Vectors, unit.UnitVectors = scaled, true
	big, err := Build(ctx, unit)
	if err != nil {
		t.Fatal(err)
	}
	big.EachVector(func(s *skill.Skill, v []float32) {
		if n, _ := unitNorm(v); math.Abs(n-1) > 1e-5 {
			t.Fatalf("%s: norm %v after a build given a vector of norm 3 as unit", s.Name, n)
		}
	})
}

// pageAligned returns a copy of s that starts at a multiple of 4096 bytes,
// as a mapping of a file does.
func pageAligned(s string) []byte {
	buf := make([]byte, len(s)+4096)
	off := int((4096 - uintptr(unsafe.Pointer(&buf[0]))%4096) % 4096)
	b := buf[off : off+len(s) : off+len(s)]
	copy(b, s)
	return b
}

// within reports whether the array of s lies inside data.
func within[T any](data []byte, s []T) bool {
	if len(s) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return p >= lo && p < lo+uintptr(len(data))
}

// TestUnitVectorsHandedBack: with BuildInput.UnitVectors, Build and Update
// point every entry of Vectors the index holds at the index's own row, the
// same bits, aligned with Skills past the skills left out of the index;
// entries it does not hold, and every entry without the flag, stay as they
// were given.
func TestUnitVectorsHandedBack(t *testing.T) {
	ctx := context.Background()
	skills, vecs, bodies := exactCorpus(t, 300, 16, 5)
	for i, s := range skills {
		if i%9 == 4 {
			s.Frontmatter.DisableModelInvocation = true // not indexed: the alignment skips it
		}
		if vecs[i] != nil {
			vecs[i] = UnitVector(vecs[i])
		}
	}
	vecs[3] = make([]float32, 16) // zero: not usable, not held
	body := func(s *skill.Skill) (string, error) { return bodies[s.ContentHash], nil }
	check := func(what string, ix *Index, given, got [][]float32, skills []*skill.Skill) {
		t.Helper()
		rows := map[*skill.Skill][]float32{}
		ix.EachVector(func(s *skill.Skill, v []float32) { rows[s] = v })
		held := 0
		for i, s := range skills {
			row, ok := rows[s]
			switch {
			case ok && unsafe.SliceData(got[i]) != unsafe.SliceData(row):
				t.Fatalf("%s: Vectors[%d] (%s) is not the index's row", what, i, s.Name)
			case ok && !slices.Equal(row, given[i]):
				t.Fatalf("%s: the row of %s differs from the vector given", what, s.Name)
			case !ok && unsafe.SliceData(got[i]) != unsafe.SliceData(given[i]):
				t.Fatalf("%s: Vectors[%d] (%s) was replaced, but the index holds no row for it", what, i, s.Name)
			}
			if ok {
				held++
			}
		}
		if held == 0 || held != ix.Stats().Vectors {
			t.Fatalf("%s: %d entries handed back, the index holds %d vectors", what, held, ix.Stats().Vectors)
		}
	}

	in := BuildInput{Skills: skills, Vectors: slices.Clone(vecs), UnitVectors: true, Config: DefaultConfig(), Body: body}
	ix, err := Build(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	check("Build", ix, vecs, in.Vectors, skills)

	// An update: one skill gone, one added, one with a new vector.
	next := append(slices.Clone(skills[1:]), &skill.Skill{Name: "added", Dir: "/skills/added",
		Root: skill.Root{Path: "/skills", Kind: skill.KindProject}, Frontmatter: skill.Frontmatter{Name: "added", Description: "a new skill"}, ContentHash: "added"})
	nextVecs := append(slices.Clone(in.Vectors[1:]), UnitVector(vecs[1]))
	nextVecs[9] = UnitVector(vecs[20])
	up := BuildInput{Skills: next, Vectors: slices.Clone(nextVecs), UnitVectors: true, Config: DefaultConfig(), Body: body}
	nx, _, err := ix.Update(ctx, up)
	if err != nil {
		t.Fatal(err)
	}
	check("Update", nx, nextVecs, up.Vectors, next)

	plain := BuildInput{Skills: skills, Vectors: slices.Clone(vecs), Config: DefaultConfig(), Body: body}
	if _, err := Build(ctx, plain); err != nil {
		t.Fatal(err)
	}
	for i := range vecs {
		if unsafe.SliceData(plain.Vectors[i]) != unsafe.SliceData(vecs[i]) {
			t.Fatalf("without UnitVectors, Vectors[%d] was replaced", i)
		}
	}
}
