package server

import (
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

// TestRepliesHoldOnlyUTF8: a reply whose strings (a field, a list element,
// a map key and value, a nested message's field) are no UTF-8 is sent with
// U+FFFD in their place, not refused; a valid reply is sent as it is.
func TestRepliesHoldOnlyUTF8(t *testing.T) {
	bad := "bad\xff\xfename"
	reply := &routerv1.GetSkillResponse{Skill: &routerv1.SkillDetail{
		Name: bad,
		Frontmatter: &routerv1.Frontmatter{Name: bad, Description: "fine", Tags: []string{"ok", bad},
			Metadata: map[string]string{bad: "v", "k": bad}},
		Source:   &routerv1.SkillSource{Path: "skills/" + bad},
		Problems: []*routerv1.Problem{{Message: bad, File: bad + "/SKILL.md"}},
	}}
	if _, err := proto.Marshal(reply); err == nil {
		t.Fatal("the reply marshals as it is; the test needs one that does not")
	}
	c := newServerCodec(slog.New(slog.DiscardHandler))
	out, err := c.Marshal(reply)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	var got routerv1.GetSkillResponse
	if err := proto.Unmarshal(out.Materialize(), &got); err != nil {
		t.Fatal(err)
	}
	var strs []string
	collectStrings(got.ProtoReflect(), &strs)
	if len(strs) < 9 {
		t.Fatalf("%d strings in the reply, want the 9 set: %q", len(strs), strs)
	}
	for _, s := range strs {
		if !utf8.ValidString(s) {
			t.Errorf("%q is no UTF-8", s)
		}
	}
	if want := "bad\uFFFDname"; got.GetSkill().GetName() != want || got.GetSkill().GetFrontmatter().GetMetadata()[want] != "v" {
		t.Errorf("name %q, metadata %q; want %q and its key made valid", got.GetSkill().GetName(), got.GetSkill().GetFrontmatter().GetMetadata(), want)
	}
	if reply.GetSkill().GetName() != bad {
		t.Error("the reply handed to Marshal was changed")
	}

	fine := &routerv1.GetSkillResponse{Skill: &routerv1.SkillDetail{Name: "pdf-forms", Frontmatter: &routerv1.Frontmatter{Tags: []string{"pdf"}}}}
	out, err = c.Marshal(fine)
	want, _ := proto.Marshal(fine)
	if err != nil || string(out.Materialize()) != string(want) {
		t.Errorf("a valid reply: %v; want it sent as it is", err)
	}
}

func collectStrings(m protoreflect.Message, out *[]string) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		add := func(fd protoreflect.FieldDescriptor, v protoreflect.Value) {
			switch fd.Kind() {
			case protoreflect.StringKind:
				*out = append(*out, v.String())
			case protoreflect.MessageKind:
				collectStrings(v.Message(), out)
			}
		}
		switch {
		case fd.IsList():
			for i := range v.List().Len() {
				add(fd, v.List().Get(i))
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				*out = append(*out, strings.Clone(k.String()))
				add(fd.MapValue(), mv)
				return true
			})
		default:
			add(fd, v)
		}
		return true
	})
}
