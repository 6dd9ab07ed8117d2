package loader

import (
	"reflect"
	"testing"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/store"
	"github.com/mcpsag/router/internal/store/storetest"
)

// versionNotOnSkill names the fields of store.Version that the skill the
// assembly builds from a version does not carry as they are, with why.
var versionNotOnSkill = map[string]string{
	"FoldedName": "the key the assembly looks the skill up by in registries",
	"Problems":   "a skill carries its file's current problems (the record's), which a served last good version adds to",
}

// TestVersionFieldsReachTheSkill: every field of a cached store.Version
// reaches the skill.Skill the assembly builds from it (freshMemos copies
// them one by one), or is named in versionNotOnSkill with its reason. With
// store.TestSkillFieldsCached, a field added to skill.Skill and the cache
// but not to that copy fails here.
func TestVersionFieldsReachTheSkill(t *testing.T) {
	g := &store.Version{}
	storetest.Fill(g)
	rec := &store.FileRecord{Path: "/ws/skills/x/SKILL.md", ContentHash: g.ContentHash, Good: g}
	f := skillfs.Found{Root: skill.Root{Path: "/ws/skills", Kind: skill.KindProject}, Path: rec.Path, Dir: "/ws/skills/x", RelPath: "x/SKILL.md"}
	a := &assembly{}
	fresh := a.freshMemos([]skillfs.Found{f}, map[string]*store.FileRecord{rec.Path: rec}, nil)
	if fresh[0] == nil {
		t.Fatal("no skill was made from the record")
	}
	s := reflect.ValueOf(fresh[0].skill).Elem()
	for field, v := range reflect.ValueOf(g).Elem().Fields() {
		if _, ok := versionNotOnSkill[field.Name]; ok {
			continue
		}
		got := s.FieldByName(field.Name)
		if field.Name == "ModTimeNano" {
			got = reflect.ValueOf(fresh[0].skill.ModTime.UnixNano())
		}
		switch {
		case !got.IsValid():
			t.Errorf("store.Version.%s has no skill.Skill field of its name and is not in versionNotOnSkill", field.Name)
		case !reflect.DeepEqual(got.Interface(), v.Interface()):
			t.Errorf("store.Version.%s = %v does not reach the skill: it holds %v", field.Name, v.Interface(), got.Interface())
		}
	}
	for name := range versionNotOnSkill {
		if _, ok := reflect.TypeFor[store.Version]().FieldByName(name); !ok {
			t.Errorf("versionNotOnSkill names %s, which store.Version has no more", name)
		}
	}
}
