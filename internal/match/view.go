package match

import (
	"context"
	"sync/atomic"

	"github.com/mcpsag/router/internal/skill"
)

// An Audience is who a match is for, as a value: the skills it sees are
// those its kind filter and its scope allow and that its agent sees in the
// catalog (VisibleTo). A match evaluates it itself, asking the catalog
// directly: it never calls back into whoever made the Audience.
type Audience struct {
	Agent string
	Kinds skill.KindFilter
	Scope skill.Scope
	// VisibleTo reports whether agent sees s among the catalog's skills
	// (catalog.Catalog.VisibleTo); nil: every skill.
	VisibleTo func(s *skill.Skill, agent string) bool
}

// Visible reports whether the audience sees s. It is the Visibility of a
// match for the audience.
func (a Audience) Visible(s *skill.Skill) bool {
	return a.Kinds.Allows(s) && a.Scope.Allows(s) && (a.VisibleTo == nil || a.VisibleTo(s, a.Agent))
}

// A View is one audience's view of an index: which of its skills the
// audience sees. It remembers each answer, found the first time a match
// needs it, for every later match given the View, so a server finds it
// once per skill and view instead of a few hundred times per match (each
// answer reads the skill and its catalog's maps, mostly cache misses).
//
// A View stands for one audience over one index: every match given it
// must mean the same answers, for the life of the index. A server keeps
// one View per kind of caller (agent, kind filter, scope) and generation.
// It is safe for concurrent use; its memory is two bits per slot of the
// index.
type View struct {
	ix      *Index
	visible Visibility
	asked   []atomic.Uint32 // bit d%32 of word d/32: the audience was looked at for slot d
	sees    []atomic.Uint32 // and sees it
}

// View returns an empty View of ix for the audience a.
func (ix *Index) View(a Audience) *View {
	words := (len(ix.docs) + 31) / 32
	return &View{ix: ix, visible: a.Visible, asked: make([]atomic.Uint32, words), sees: make([]atomic.Uint32, words)}
}

// MatchView is Match for the audience whose view v is. A View of another
// index is used as its audience alone, remembering nothing.
func (ix *Index) MatchView(ctx context.Context, req skill.MatchRequest, v *View) (skill.MatchResult, error) {
	memo := v
	if v.ix != ix {
		memo = nil
	}
	r, err := ix.rank(ctx, req, v.visible, memo)
	if err != nil {
		return skill.MatchResult{}, err
	}
	return r.Result, nil
}

// allows reports whether the view sees s, the skill of slot d, looking at
// the audience only the first time. Two matches asking at once may both
// look; the answers are the same.
func (v *View) allows(d int32, s *skill.Skill) bool {
	w, bit := d/32, uint32(1)<<(d%32)
	if v.asked[w].Load()&bit != 0 {
		return v.sees[w].Load()&bit != 0
	}
	ok := v.visible(s)
	if ok {
		v.sees[w].Or(bit)
	}
	v.asked[w].Or(bit) // after the answer: whoever sees this bit sees the answer's
	return ok
}
