package skill

import (
	"strings"
	"testing"
)

func TestOversize(t *testing.T) {
	lim := SizeLimits{MaxFiles: 3, MaxBytes: 100}
	files := func(n int, size int64) []Resource {
		out := make([]Resource, n)
		for i := range out {
			out[i] = Resource{Path: "f", Size: size}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		s    Skill
		want string
	}{
		{"within", Skill{Size: 10, Resources: files(2, 45)}, ""},
		{"files", Skill{Size: 10, Resources: files(3, 1)}, "its folder holds 4 files, more than the 3 a skill may hold (limits.max_skill_files)"},
		{"listing cut", Skill{Size: 10, Resources: files(3, 1), ResourcesTruncated: true}, "its folder holds at least 5 files"},
		{"bytes", Skill{Size: 10, Resources: files(2, 46)}, "its files hold 102 bytes, more than the 100 a skill may hold (limits.max_skill_bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lim.Oversize(&tc.s)
			if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
				t.Errorf("Oversize = %q, want %q", got, tc.want)
			}
			tc.s.Oversize = got
			if tc.s.Enabled() != (got == "") {
				t.Errorf("Enabled = %v with Oversize %q", tc.s.Enabled(), got)
			}
			if r := tc.s.Refusal(); (r == nil) != (got == "") || r != nil && r.Reason != ReasonSkillTooLarge {
				t.Errorf("Refusal = %v", r)
			}
		})
	}
}
