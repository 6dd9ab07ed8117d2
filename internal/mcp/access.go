package mcp

import (
	"slices"
	"strings"

	"github.com/mcpsag/router/internal/auth"
)

// Features are the parts of the MCP surface a view offers. A token's method
// groups decide them (FeaturesOf); without tokens a caller has them all.
type Features uint8

// Features, each with the operations that grant it (featureOperations).
const (
	// FeatureFind is find_skills and find_tools (operation Match).
	FeatureFind Features = 1 << iota
	// FeatureList is list_skills (Match or ListSkills).
	FeatureList
	// FeatureLoad is load_skill, read_skill_file, the skill:// resources
	// (with completion and subscriptions), the Skills extension and the
	// skill prompts (Load).
	FeatureLoad
	// FeatureExec is authorize_exec (AuthorizeExec), offered only while
	// feature flag skills_exec is on.
	FeatureExec
	// FeatureCall is call_tool (CallTool), offered only while feature flag
	// tools_call is on and MCP servers are configured.
	FeatureCall

	// AllFeatures is what a caller without a token gets.
	AllFeatures = FeatureFind | FeatureList | FeatureLoad | FeatureExec | FeatureCall
)

// featureOperations says which operations grant each feature, any one of
// them; auth's table says which group grants each operation. A caller who
// may match may also list what it matches among. No feature is granted by
// Reindex: there is no MCP tool for it.
var featureOperations = []struct {
	feature Features
	ops     []auth.Operation
}{
	{FeatureFind, []auth.Operation{auth.OpMatch}},
	{FeatureList, []auth.Operation{auth.OpMatch, auth.OpListSkills}},
	{FeatureLoad, []auth.Operation{auth.OpLoad}},
	{FeatureExec, []auth.Operation{auth.OpAuthorizeExec}},
	{FeatureCall, []auth.Operation{auth.OpCallTool}},
}

// FeaturesOf maps a principal's groups onto features, through the
// operations each feature stands for (featureOperations). A nil principal
// is anonymous: everything.
func FeaturesOf(p *auth.Principal) Features {
	if p == nil {
		return AllFeatures
	}
	var f Features
	for _, fo := range featureOperations {
		if slices.ContainsFunc(fo.ops, p.May) {
			f |= fo.feature
		}
	}
	return f
}

// groupsOf names the groups that grant feature, for refusals: "match or
// read".
func groupsOf(feature Features) string {
	var groups []string
	for _, fo := range featureOperations {
		if fo.feature != feature {
			continue
		}
		for _, op := range fo.ops {
			if g, ok := auth.GroupOf(op); ok && !slices.Contains(groups, string(g)) {
				groups = append(groups, string(g))
			}
		}
	}
	return strings.Join(groups, " or ")
}

// String lists the features, for messages.
func (f Features) String() string {
	var out []string
	for _, n := range []struct {
		f    Features
		name string
	}{{FeatureFind, "find"}, {FeatureList, "list"}, {FeatureLoad, "load"}, {FeatureExec, "exec"}, {FeatureCall, "call"}} {
		if f&n.f != 0 {
			out = append(out, n.name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ",")
}

// Tool names.
const (
	toolFind = "find_skills"
	toolLoad = "load_skill"
	toolRead = "read_skill_file"
	toolList = "list_skills"
	toolExec = "authorize_exec"
	// The tools of MCP servers.
	toolFindTools = "find_tools"
	toolCall      = "call_tool"
)

// toolFeatures says which feature each tool needs.
var toolFeatures = map[string]Features{
	toolFind:      FeatureFind,
	toolList:      FeatureList,
	toolLoad:      FeatureLoad,
	toolRead:      FeatureLoad,
	toolExec:      FeatureExec,
	toolFindTools: FeatureFind,
	toolCall:      FeatureCall,
}

// toolGroups names the groups that grant each tool, for refusals.
var toolGroups = func() map[string]string {
	out := make(map[string]string, len(toolFeatures))
	for tool, f := range toolFeatures {
		out[tool] = groupsOf(f)
	}
	return out
}()

// methodFeatures says which feature an MCP method needs, beyond tools/call.
// Listing methods need none: a view without a feature lists nothing of it.
var methodFeatures = map[string]Features{
	"resources/read":        FeatureLoad,
	"prompts/get":           FeatureLoad,
	"resources/subscribe":   FeatureLoad,
	"resources/unsubscribe": FeatureLoad,
	"completion/complete":   FeatureLoad,
	methodSkillsList:        FeatureLoad,
	methodSkillsGet:         FeatureLoad,
	methodDirectoryRead:     FeatureLoad,
}
