package mcp

import (
	"testing"

	"github.com/mcpsag/router/internal/auth"
)

func TestFeaturesOf(t *testing.T) {
	toks := loadTestTokens(t)
	for _, tc := range []struct {
		token string
		want  Features
	}{
		{"secret-full", AllFeatures},
		{"secret-matcher", FeatureFind | FeatureList},
		{"secret-reviewer", FeatureFind | FeatureList | FeatureLoad},
		{"secret-admin", 0},
	} {
		p, ok := toks.Authenticate(tc.token)
		if !ok {
			t.Fatalf("%s does not authenticate", tc.token)
		}
		if got := FeaturesOf(p); got != tc.want {
			t.Errorf("%s: features %v, want %v", p.ID, got, tc.want)
		}
	}
	if FeaturesOf(nil) != AllFeatures || FeaturesOf(auth.Anonymous) != AllFeatures {
		t.Error("anonymous callers do not get every feature")
	}
	if s := (FeatureFind | FeatureLoad).String(); s != "find,load" {
		t.Errorf("String = %q", s)
	}
}

// A refusal names the groups that grant the tool, from auth's one table.
func TestToolGroups(t *testing.T) {
	want := map[string]string{
		toolFind: "match", toolFindTools: "match", toolList: "match or read", toolLoad: "load", toolRead: "load",
		toolExec: "exec", toolCall: "exec",
	}
	for tool, groups := range want {
		if toolGroups[tool] != groups {
			t.Errorf("%s: granted by %q, want %q", tool, toolGroups[tool], groups)
		}
	}
	if len(toolGroups) != len(want) {
		t.Errorf("groups for %d tools, want %d", len(toolGroups), len(want))
	}
}
