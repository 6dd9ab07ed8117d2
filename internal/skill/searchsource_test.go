package skill_test

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

// coveredByHash are the fields searched text reads that SearchSource leaves
// to the content hash: a tool's definition hash covers them.
var coveredByHash = map[string]bool{"Tool.Title": true, "Tool.Params": true, "Tool.Results": true}

// searchedKeys are the keys of Frontmatter.Extra (and of any other map of
// a Skill) that searched text reads; the filler below sets each of them.
var searchedKeys = []string{"when_to_use"}

// Every field of a Skill that changes what the entry is searched or
// embedded by is carried by its SearchSource, so that a change of it is
// seen by SameSearch and by the match snapshot's stand-ins: a field that
// search.go starts to read without adding it to SearchSource fails here.
func TestSearchSourceCarriesSearchedFields(t *testing.T) {
	for _, kind := range []skill.EntryKind{skill.EntrySkill, skill.EntryTool} {
		base := filledSkill(kind, -1)
		n := countLeaves(base)
		for k := range n {
			s := filledSkill(kind, k)
			path := leafPath(s, k)
			if searched(s) == searched(base) || hashed(path) {
				continue
			}
			if reflect.DeepEqual(s.SearchSource(), base.SearchSource()) {
				t.Errorf("kind %q: %s changes the searched text but not SearchSource", kind, path)
			}
			if skill.SameSearch(s, base) {
				t.Errorf("kind %q: %s changes the searched text but SameSearch says same", kind, path)
			}
		}
		// The stand-in is searched as the entry (but for what the hash
		// covers: its body, a tool's title and parameters).
		if got, want := searched(base.SearchSource().Skill()), searched(stripHashed(base)); got != want {
			t.Errorf("kind %q: stand-in searched by\n%s\nwant\n%s", kind, got, want)
		}
		if !skill.SameSearch(base.SearchSource().Skill(), base) {
			t.Errorf("kind %q: SameSearch(stand-in, entry) = false", kind)
		}
	}
}

// hashed reports whether the field at path lies in one that SearchSource
// leaves to the content hash.
func hashed(path string) bool {
	for p := range coveredByHash {
		if path == p || strings.HasPrefix(path, p+".") {
			return true
		}
	}
	return false
}

// searched is everything search.go derives from s, in one string.
func searched(s *skill.Skill) string {
	return fmt.Sprintf("%q %q %q %q %q %q", s.MatchName(), s.SearchDescription(), s.SearchTags(), s.SearchTriggers(),
		s.ParamText(), s.DocumentText("body", 10))
}

// stripHashed is s without the fields that SearchSource leaves to the hash.
func stripHashed(s *skill.Skill) *skill.Skill {
	c := *s
	if c.Tool != nil {
		t := *c.Tool
		t.Title, t.Params, t.Results = "", nil, nil
		c.Tool = &t
	}
	return &c
}

// filledSkill is a Skill of kind with every field set, leaf k (in the order
// of countLeaves) set to another value.
func filledSkill(kind skill.EntryKind, k int) *skill.Skill {
	s := &skill.Skill{}
	f := &filler{alt: k}
	f.fill(reflect.ValueOf(s).Elem(), "")
	s.Kind = kind
	return s
}

func countLeaves(s *skill.Skill) int {
	f := &filler{alt: -1}
	f.fill(reflect.ValueOf(&skill.Skill{}).Elem(), "")
	return f.n
}

func leafPath(s *skill.Skill, k int) string {
	f := &filler{alt: -1, find: k}
	f.fill(reflect.ValueOf(&skill.Skill{}).Elem(), "")
	return f.found
}

// filler sets every leaf of a value to a value of its own, numbered in
// walk order; leaf alt gets another one.
type filler struct {
	n, alt int
	find   int
	found  string
}

func (f *filler) next(path string) int {
	i := f.n
	f.n++
	if i == f.find {
		f.found = path
	}
	if i == f.alt {
		return 1000 + i
	}
	return i + 1
}

func (f *filler) fill(v reflect.Value, path string) {
	if v.Type() == reflect.TypeOf(time.Time{}) {
		v.Set(reflect.ValueOf(time.Unix(int64(f.next(path)), 0).UTC()))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			if path != "" {
				name = path + "." + name
			}
			f.fill(v.Field(i), name)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		f.fill(v.Elem(), path)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			f.fill(v.Index(i), path)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for _, key := range append([]string{"k"}, searchedKeys...) {
			e := reflect.New(v.Type().Elem()).Elem()
			f.fill(e, path)
			v.SetMapIndex(reflect.ValueOf(key), e)
		}
	case reflect.String:
		v.SetString(strconv.Quote("v" + strconv.Itoa(f.next(path)))) // JSON, as Extra holds
	case reflect.Bool:
		v.SetBool(f.next(path)%2 == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.next(path) % 100))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.next(path) % 100))
	default:
		panic("filler: a field of kind " + v.Kind().String() + " at " + path)
	}
}
