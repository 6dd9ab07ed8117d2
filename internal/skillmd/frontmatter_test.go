package skillmd

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestFrontmatterJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]any // nil: an error containing wantErr
		wantErr  string
	}{
		{name: "every field as written",
			in: "---\nname: pdf\ndescription: Fill forms \nlicense: MIT\nallowed-tools: Bash Read\nmetadata:\n  version: 1.3\n  owner: docs\nhidden: false\ncustom: [1, true, null, x]\n---\nbody\n",
			want: map[string]any{"name": "pdf", "description": "Fill forms", "license": "MIT", "allowed-tools": "Bash Read",
				"metadata": map[string]any{"version": 1.3, "owner": "docs"}, "hidden": false, "custom": []any{1.0, true, nil, "x"}}},
		{name: "an unquoted colon is read as Parse reads it",
			in:   "---\nname: x\ndescription: Use when: asked\n---\n",
			want: map[string]any{"name": "x", "description": "Use when: asked"}},
		{name: "no name gets the skill's",
			in:   "\ufeff---\r\ndescription: d\r\n---\r\n",
			want: map[string]any{"name": "folder-name", "description": "d"}},
		{name: "aliases are expanded within bounds",
			in:   "---\nname: x\ndescription: d\nanchor: &a [1, 2]\ncopy: *a\n---\n",
			want: map[string]any{"name": "x", "description": "d", "anchor": []any{1.0, 2.0}, "copy": []any{1.0, 2.0}}},
		{name: "no frontmatter", in: "# just markdown\n", wantErr: "does not start"},
		{name: "not YAML", in: "---\nname: [x\n---\n", wantErr: "not valid YAML"},
		{name: "duplicate keys", in: "---\nname: x\nname: y\ndescription: d\n---\n", wantErr: "appears twice"},
		{name: "infinity", in: "---\nname: x\ndescription: d\nn: .inf\n---\n", wantErr: "JSON"},
		{name: "alias bomb", in: "---\nname: x\ndescription: d\na: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n---\n", wantErr: "YAML nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := FrontmatterJSON([]byte(tc.in), "folder-name", DefaultLimits)
			if tc.want == nil {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %s, %v; want an error containing %q", b, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}
