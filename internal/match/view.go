package match

import (
	"context"
	"sync/atomic"

	"github.com/mcpsag/router/internal/skill"
)

// A View is one caller's view of an index: which of its skills visible
// lets the caller see. It remembers each answer, asked the first time a
// match needs it, for every later match given the View, so a server asks
// once per skill and view instead of a few hundred times per match (each
// answer reads the skill and its catalog's maps, mostly cache misses).
//
// A View stands for one visible function over one index: every match
// given it must mean the same answers, for the life of the index. A server
// keeps one View per kind of caller (agent, kind filter, scope) and
// generation. It is safe for concurrent use; its memory is two bits per
// slot of the index.
type View struct {
	ix      *Index
	visible Visibility
	asked   []atomic.Uint32 // bit d%32 of word d/32: visible was asked for slot d
	sees    []atomic.Uint32 // and said yes
}

// View returns an empty View of ix through visible, which must not be nil.
func (ix *Index) View(visible Visibility) *View {
	words := (len(ix.docs) + 31) / 32
	return &View{ix: ix, visible: visible, asked: make([]atomic.Uint32, words), sees: make([]atomic.Uint32, words)}
}

// MatchView is Match for the caller whose view v is. A View of another
// index is used as its visible function alone, remembering nothing.
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

// allows reports whether the view sees s, the skill of slot d, asking
// visible only the first time. Two matches asking at once may both ask; the
// answers are the same.
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
