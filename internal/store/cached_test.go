package store

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/store/storetest"
)

// notCached are the fields of skill.Skill that the cache does not keep,
// each with the reason. Every other field is carried by Version under its
// own name and type (ModTime as ModTimeNano): a field added to skill.Skill
// is in one list or the other, or TestSkillFieldsCached fails.
var notCached = map[string]string{
	"Dir":                "the scan finds the skill's folder",
	"RelPath":            "the scan finds the skill's folder",
	"Root":               "the configured root the scan walked",
	"Resources":          "the scan lists the folder at every pass",
	"ResourcesTruncated": "the scan lists the folder at every pass",
	"Oversize":           "decided at every assembly from the size limits in force",
	"Registry":           "read from the root's registry.json",
	"Kind":               "the cache holds SKILL.md files; tools come from their MCP servers",
	"Tool":               "the cache holds SKILL.md files; tools come from their MCP servers",
}

// cachedAs names the Version fields that carry a skill.Skill field of
// another name or type.
var cachedAs = map[string]string{"ModTime": "ModTimeNano"}

// Every field of skill.Skill is either kept by a Version or listed in
// notCached with its reason.
func TestSkillFieldsCached(t *testing.T) {
	st, vt := reflect.TypeFor[skill.Skill](), reflect.TypeFor[Version]()
	for f := range st.Fields() {
		if _, ok := notCached[f.Name]; ok {
			continue
		}
		name := f.Name
		if as, ok := cachedAs[name]; ok {
			name = as
		}
		vf, ok := vt.FieldByName(name)
		switch {
		case !ok:
			t.Errorf("skill.Skill.%s is neither kept by store.Version nor listed in notCached", f.Name)
		case name == f.Name && vf.Type != f.Type:
			t.Errorf("skill.Skill.%s is a %s, store.Version.%s a %s", f.Name, f.Type, name, vf.Type)
		}
	}
	for name := range notCached {
		if _, ok := st.FieldByName(name); !ok {
			t.Errorf("notCached names %s, which skill.Skill has no more", name)
		}
	}
}

// A record with every field set, down to the frontmatter and problems,
// comes back whole from the record encoding and from a cache file: a field
// added to FileRecord, Version, skill.Frontmatter or skill.Problem that the
// encoding misses fails here.
func TestFilledRecordRoundTrip(t *testing.T) {
	rec := &FileRecord{}
	storetest.Fill(rec)
	rec.ContentHash = hashOf("filled")
	rec.Good.ContentHash = rec.ContentHash                // the invariants Files checks
	rec.Good.FoldedName = skillmd.FoldName(rec.Good.Name) // derived, not stored
	got, err := decodeRecord(encodeRecord(rec))
	if err != nil {
		t.Fatal(err)
	}
	got.Path = rec.Path // the key, not the value, holds the path
	if !reflect.DeepEqual(got, rec) {
		t.Fatalf("decoded record differs at %s", firstDiff(reflect.ValueOf(got), reflect.ValueOf(rec), "FileRecord"))
	}

	_, files := putAndReopen(t, t.TempDir(), rec, map[string]string{rec.ContentHash: "body"})
	if got := files[rec.Path]; !reflect.DeepEqual(got, rec) {
		t.Fatalf("record read back from the cache file differs at %s", firstDiff(reflect.ValueOf(got), reflect.ValueOf(rec), "FileRecord"))
	}
}

// firstDiff names the first field where got and want differ, with both
// values.
func firstDiff(got, want reflect.Value, path string) string {
	switch want.Kind() {
	case reflect.Pointer:
		if got.IsNil() != want.IsNil() {
			return path + ": nil and not nil"
		}
		if !want.IsNil() {
			return firstDiff(got.Elem(), want.Elem(), path)
		}
	case reflect.Struct:
		for i := range want.NumField() {
			if d := firstDiff(got.Field(i), want.Field(i), path+"."+want.Type().Field(i).Name); d != "" {
				return d
			}
		}
	case reflect.Slice:
		if got.Len() != want.Len() {
			return fmt.Sprintf("%s: %d elements, want %d", path, got.Len(), want.Len())
		}
		for i := range want.Len() {
			if d := firstDiff(got.Index(i), want.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
	default:
		if !reflect.DeepEqual(got.Interface(), want.Interface()) {
			return fmt.Sprintf("%s: got %v, want %v", path, got.Interface(), want.Interface())
		}
	}
	return ""
}
