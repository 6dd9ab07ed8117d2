package mcp

import (
	"strings"

	"github.com/mcpsag/router/internal/auth"
)

// Features are the parts of the MCP surface a view offers. A token's method
// groups decide them (FeaturesOf); without tokens a caller has them all.
type Features uint8

// Features, each with the token group that grants it.
const (
	// FeatureFind is find_skills (group match).
	FeatureFind Features = 1 << iota
	// FeatureList is list_skills (group match or read).
	FeatureList
	// FeatureLoad is load_skill, read_skill_file, the skill:// resources
	// (with completion and subscriptions), the Skills extension and the
	// skill prompts (group load).
	FeatureLoad
	// FeatureExec is authorize_exec (group exec), offered only while
	// feature flag skills_exec is on.
	FeatureExec
	// FeatureCall is call_tool (group exec), offered only while feature
	// flag tools_call is on and MCP servers are configured.
	FeatureCall

	// AllFeatures is what a caller without a token gets.
	AllFeatures = FeatureFind | FeatureList | FeatureLoad | FeatureExec | FeatureCall
)

// FeaturesOf maps a principal's method groups onto features: match grants
// find_skills and list_skills, read grants list_skills, load grants
// load_skill, read_skill_file, resources and prompts, exec grants
// authorize_exec and call_tool. Group admin grants nothing here (there is no MCP tool for
// Reindex). A nil principal is anonymous: everything.
func FeaturesOf(p *auth.Principal) Features {
	if p == nil {
		return AllFeatures
	}
	var f Features
	if p.Allows(auth.GroupMatch) {
		f |= FeatureFind | FeatureList
	}
	if p.Allows(auth.GroupRead) {
		f |= FeatureList
	}
	if p.Allows(auth.GroupLoad) {
		f |= FeatureLoad
	}
	if p.Allows(auth.GroupExec) {
		f |= FeatureExec | FeatureCall
	}
	return f
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
var toolGroups = map[string]string{
	toolFind:      "match",
	toolList:      "match or read",
	toolLoad:      "load",
	toolRead:      "load",
	toolExec:      "exec",
	toolFindTools: "match",
	toolCall:      "exec",
}

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
