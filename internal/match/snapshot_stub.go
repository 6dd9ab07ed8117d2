package match

import (
	"fmt"

	"github.com/mcpsag/router/internal/skill"
)

// stub is what a snapshot keeps of a skill: what its searched text is made
// of (skill.SearchSource), for Update to tell whether that changed, and
// its folder, hidden flag and agent.
type stub struct {
	skill.SearchSource
	Dir    string
	Hidden bool
	Agent  string
}

func stubOf(s *skill.Skill) stub {
	return stub{SearchSource: s.SearchSource(), Dir: s.Dir, Hidden: s.Frontmatter.Hidden, Agent: s.Root.Agent}
}

// skill is the stand-in of the skill st was made of.
func (st stub) skill() *skill.Skill {
	s := st.SearchSource.Skill()
	s.Dir, s.Frontmatter.Hidden, s.Root.Agent = st.Dir, st.Hidden, st.Agent
	return s
}

func (e *enc) stub(st stub) {
	for _, v := range []string{st.Dir, st.Name, st.ContentHash, st.Description, st.WhenToUse, st.Agent, st.ToolServer, st.ToolName} {
		e.str(v)
	}
	for _, list := range [][]string{st.Tags, st.RegistryTags, st.Triggers} {
		e.u32(uint32(len(list)))
		for _, v := range list {
			e.str(v)
		}
	}
	e.bool(st.Hidden)
}

func (d *dec) stub() stub {
	var st stub
	for _, v := range []*string{&st.Dir, &st.Name, &st.ContentHash, &st.Description, &st.WhenToUse, &st.Agent, &st.ToolServer, &st.ToolName} {
		*v = d.str()
	}
	for _, list := range []*[]string{&st.Tags, &st.RegistryTags, &st.Triggers} {
		n := int(d.u32())
		if d.err != nil || n > 1<<16 {
			if d.err == nil {
				d.err = fmt.Errorf("a list of %d strings", n)
			}
			return st
		}
		for range n {
			*list = append(*list, d.str())
		}
	}
	st.Hidden = d.bool()
	return st
}
