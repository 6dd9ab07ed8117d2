package skill

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode"
)

// What an entry is searched by. Keyword matching (BM25, internal/match)
// indexes an entry's name, description, tags, triggers, body start and
// parameters, each as a field of its own; the embedding model embeds one
// text made of the same parts (DocumentText). Both take the parts from
// here, so the text an entry is found by is written down once, and so is
// what it is made of (SearchSource) and when two versions of an entry are
// searched alike (SameSearch).

// SearchSource is everything an entry's searched and embedded texts are
// made of: the fields of a Skill that MatchName, SearchDescription,
// SearchTags, SearchTriggers, ParamText and DocumentText read, with the
// content hash standing for the rest (a skill's body; a tool's title,
// parameters and results, which its definition hash covers). Whoever keeps
// an entry to tell later whether its searched text changed (the match
// index's snapshot) keeps its SearchSource.
type SearchSource struct {
	Name, ContentHash string
	// Description is the frontmatter's; WhenToUse the when_to_use field as
	// Frontmatter.Extra holds it (compact JSON), "" when absent.
	Description, WhenToUse string
	// Tags are the frontmatter's, RegistryTags the registry's.
	Tags, RegistryTags, Triggers []string
	// ToolServer and ToolName are a tool's server and upstream name, ""
	// for a skill.
	ToolServer, ToolName string
}

// SearchSource returns what the entry's searched and embedded texts are
// made of.
func (s *Skill) SearchSource() SearchSource {
	src := SearchSource{Name: s.Name, ContentHash: s.ContentHash, Description: s.Frontmatter.Description,
		WhenToUse: s.Frontmatter.Extra["when_to_use"],
		Tags:      s.Frontmatter.Tags, RegistryTags: s.Registry.Tags, Triggers: s.Frontmatter.Triggers}
	if s.IsTool() {
		src.ToolServer, src.ToolName = s.Tool.Server, s.Tool.Name
	}
	return src
}

// Skill returns a stand-in entry made of src alone: its name, description,
// tags and triggers are searched as those of the entry src came from. It
// has no body, parameters, folder or root.
func (src SearchSource) Skill() *Skill {
	s := &Skill{Name: src.Name, ContentHash: src.ContentHash,
		Frontmatter: Frontmatter{Name: src.Name, Description: src.Description, Tags: src.Tags, Triggers: src.Triggers},
		Registry:    RegistryEntry{Tags: src.RegistryTags}}
	if src.WhenToUse != "" {
		s.Frontmatter.Extra = map[string]string{"when_to_use": src.WhenToUse}
	}
	if src.ToolName != "" {
		s.Kind, s.Tool = EntryTool, &Tool{Server: src.ToolServer, Name: src.ToolName}
	}
	return s
}

// SameSearch reports whether two versions of an entry are searched and
// embedded by the same text: the same content hash (which stands for the
// body and a tool's parameters), name, description, tags and triggers.
func SameSearch(a, b *Skill) bool {
	return a.ContentHash == b.ContentHash && a.Name == b.Name && a.MatchName() == b.MatchName() &&
		a.SearchDescription() == b.SearchDescription() &&
		slices.Equal(a.Tags(), b.Tags()) && slices.Equal(a.Frontmatter.Triggers, b.Frontmatter.Triggers)
}

// MatchName is the entry's name as keyword matching indexes it: a skill's
// name, or a tool's server name and SpokenName.
func (s *Skill) MatchName() string {
	if !s.IsTool() {
		return s.Name
	}
	return s.Tool.Server + " " + s.SpokenName()
}

// SpokenName is the name a task would use to ask for the entry by name: a
// skill's name, or a tool's upstream name with every separator (dots,
// slashes, colons) read as a space.
func (s *Skill) SpokenName() string {
	if !s.IsTool() {
		return s.Name
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return ' '
	}, s.Tool.Name)
}

// SearchDescription is the description an entry is searched by, by
// keywords and in the embedded text alike: the frontmatter's, and Claude
// Code's when_to_use field, which says the same kind of thing (when the
// skill applies), after it.
func (s *Skill) SearchDescription() string {
	d := s.Frontmatter.Description
	if raw, ok := s.Frontmatter.Extra["when_to_use"]; ok {
		var w string
		if json.Unmarshal([]byte(raw), &w) == nil && w != "" {
			d += " " + w
		}
	}
	return d
}

// SearchTags is the text of the entry's tags (frontmatter and registry) as
// keyword matching indexes it.
func (s *Skill) SearchTags() string { return strings.Join(s.Tags(), " ") }

// SearchTriggers is the text of the entry's trigger phrases as keyword
// matching indexes it: one sentence each.
func (s *Skill) SearchTriggers() string { return strings.Join(s.Frontmatter.Triggers, " . ") }

// ParamText is the text of a tool's parameters and results as matching
// indexes it: one line per parameter, then per result, its name and
// description. Skills have none.
func (s *Skill) ParamText() string {
	if !s.IsTool() || len(s.Tool.Params)+len(s.Tool.Results) == 0 {
		return ""
	}
	var b strings.Builder
	for _, p := range append(s.Tool.Params[:len(s.Tool.Params):len(s.Tool.Params)], s.Tool.Results...) {
		b.WriteString(p.Name)
		if p.Description != "" {
			b.WriteString(": ")
			b.WriteString(p.Description)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// DocumentText returns the text embedded for the entry. For a skill: its
// name with hyphens and underscores read as spaces, a colon, and its
// description (SearchDescription, with when_to_use); then, when bodyChars > 0, a blank line and the first
// bodyChars characters of body (its body, or a start of it at least
// bodyChars+1 characters long), cut back to a word boundary. The name and
// description carry the skill's intent; the body start adds vocabulary but
// also noise, so it is off by default. For a tool: its name as words
// (nameWords), its title and description, and its parameters in place of a
// body; body is not used. The server's name is left out: it is a
// namespace, matched by keywords.
func (s *Skill) DocumentText(body string, bodyChars int) string {
	if !s.IsTool() {
		return documentText(s.Name, s.SearchDescription(), body, bodyChars)
	}
	desc := s.SearchDescription()
	if t := s.Tool.Title; t != "" && !strings.EqualFold(t, s.Tool.Name) {
		desc = t + ". " + desc
	}
	return documentText(nameWords(s.Tool.Name), desc, s.ParamText(), bodyChars)
}

// documentText lays out an embedded text: see DocumentText.
func documentText(name, description, body string, bodyChars int) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(strings.NewReplacer("-", " ", "_", " ").Replace(name)))
	if d := strings.TrimSpace(description); d != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(d)
	}
	if bodyChars > 0 {
		if start := strings.TrimSpace(BodyStart(strings.TrimSpace(body), bodyChars)); start != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(start)
		}
	}
	return b.String()
}

// nameWords spells a tool name as words: a space goes between a lower-case
// letter and an upper-case one, and in place of every character that is
// neither a letter nor a digit ("listOpenIssues" reads "list Open Issues",
// "getPM2.5Level" reads "get PM2 5Level").
func nameWords(name string) string {
	var b strings.Builder
	var prev rune
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			r = ' '
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prev = r
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
