package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

// The Skills extension (io.modelcontextprotocol/skills): skills/list and
// skills/get describe the skills a view's agent sees, each with its
// frontmatter as written and a manifest of its files with digests, and
// resources/directory/read lists a folder of a skill. The files themselves
// are read with resources/read (resources.go).

// Names the extension defines.
const (
	skillsExtension     = "io.modelcontextprotocol/skills"
	methodSkillsList    = "skills/list"
	methodSkillsGet     = "skills/get"
	methodDirectoryRead = "resources/directory/read"
	mimeDirectory       = "inode/directory"
)

// skillResourceOut is one file of a skill entry.
type skillResourceOut struct {
	URI string `json:"uri"`
	// Digest is "sha256:" and the hex digest of the file's bytes.
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// skillEntry is the extension's Skill: the URI of its SKILL.md, the
// frontmatter as written and every file.
type skillEntry struct {
	URI         string             `json:"uri"`
	Frontmatter json.RawMessage    `json:"frontmatter"`
	Resources   []skillResourceOut `json:"resources"`
}

type listSkillsParams struct {
	mcpsdk.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type listSkillsResult struct {
	mcpsdk.ResultBase
	mcpsdk.Cacheable
	ResultType string       `json:"resultType"`
	Skills     []skillEntry `json:"skills"`
	NextCursor string       `json:"nextCursor,omitempty"`
}

type getSkillParams struct {
	mcpsdk.ParamsBase
	URI string `json:"uri"`
}

type getSkillResult struct {
	mcpsdk.ResultBase
	mcpsdk.Cacheable
	ResultType string     `json:"resultType"`
	Skill      skillEntry `json:"skill"`
}

type readDirectoryParams struct {
	mcpsdk.ParamsBase
	URI    string `json:"uri"`
	Cursor string `json:"cursor,omitempty"`
}

type readDirectoryResult struct {
	mcpsdk.ResultBase
	ResultType string             `json:"resultType"`
	Resources  []*mcpsdk.Resource `json:"resources"`
	NextCursor string             `json:"nextCursor,omitempty"`
}

// resultComplete is the resultType of every result here.
const resultComplete = "complete"

// uncached marks a listing or entry as stale at once and for this caller
// only: it changes with every index generation and depends on the caller's
// agent and token.
var uncached = mcpsdk.Cacheable{TTLMs: 0, CacheScope: "private"}

// addSkillsExtension registers the extension's methods on a view's server.
func (f *Front) addSkillsExtension(vw *view) {
	must := func(err error) {
		if err != nil {
			panic(err) // only a standard method's name is refused
		}
	}
	must(mcpsdk.AddReceivingCustomMethod(vw.srv, methodSkillsList,
		func(ctx context.Context, _ *mcpsdk.ServerSession, p *listSkillsParams) (*listSkillsResult, error) {
			return f.listSkillEntries(ctx, vw, p)
		}))
	must(mcpsdk.AddReceivingCustomMethod(vw.srv, methodSkillsGet,
		func(ctx context.Context, _ *mcpsdk.ServerSession, p *getSkillParams) (*getSkillResult, error) {
			return f.getSkillEntry(ctx, vw, p)
		}))
	must(mcpsdk.AddReceivingCustomMethod(vw.srv, methodDirectoryRead,
		func(ctx context.Context, _ *mcpsdk.ServerSession, p *readDirectoryParams) (*readDirectoryResult, error) {
			return f.readDirectory(ctx, vw, p)
		}))
}

// servedSkill returns the skill agent sees under name when the skill://
// surface serves it (with its manifest when asked): enabled, not hidden, a
// skill rather than a tool. Otherwise it returns a not-found error that says
// why.
func (f *Front) servedSkill(ctx context.Context, agent, name string, manifest bool) (*skill.GetResult, error) {
	res, err := f.router.Get(ctx, skill.GetRequest{Name: name, Agent: agent, Manifest: manifest})
	if err != nil {
		var de *skill.Error
		if errors.As(err, &de) && de.Code == skill.CodeFailedPrecondition &&
			de.Reason != skill.ReasonSkillDisabled && de.Reason != skill.ReasonSkillTooLarge {
			// A tool, or a SKILL.md that no longer parses: not a skill
			// this server serves now.
			return nil, skill.Errorf(skill.CodeNotFound, "%s", de.Message)
		}
		return nil, err
	}
	if res.Entry == nil || res.Entry.Skill == nil {
		return nil, fmt.Errorf("router returned a skill without its entry")
	}
	s := res.Entry.Skill
	switch {
	case s.IsTool():
		return nil, skill.Errorf(skill.CodeNotFound, "%s is a tool of MCP server %s, not a skill", s.Name, s.Tool.Server)
	case !s.Enabled():
		return nil, s.Refusal()
	case s.Frontmatter.Hidden:
		return nil, skill.Errorf(skill.CodeNotFound, "skill %q is hidden: it is not served as resources (load_skill loads it by name)", s.Name)
	}
	return res, nil
}

// entryOf renders a skill and its manifest as an extension entry. Whether
// a skill is served at all (within the size limits, which default to the
// extension's) the router decided: every surface serves the same skills.
func entryOf(s *skill.Skill, m *skill.Manifest) (skillEntry, error) {
	if m == nil {
		return skillEntry{}, fmt.Errorf("router returned no manifest for %q", s.Name)
	}
	e := skillEntry{URI: skillURI(s.Name, skill.FileName), Frontmatter: m.Frontmatter, Resources: make([]skillResourceOut, 0, len(m.Files))}
	for _, fd := range m.Files {
		e.Resources = append(e.Resources, skillResourceOut{URI: skillURI(s.Name, fd.Path), Digest: "sha256:" + fd.SHA256, Size: fd.Size})
	}
	return e, nil
}

// listSkillEntries is skills/list: a page of the skills the view's agent
// sees, sorted by name, each a complete entry. A skill the extension cannot
// serve (see entryOf) is left out; skills/get says why.
func (f *Front) listSkillEntries(ctx context.Context, vw *view, p *listSkillsParams) (*listSkillsResult, error) {
	agent, err := f.viewAgent(ctx, vw, "")
	if err != nil {
		return nil, err
	}
	cursor := ""
	if p != nil {
		cursor = p.Cursor
	}
	page, err := f.router.List(ctx, skill.ListRequest{Agent: agent, PageSize: f.opts.PageSize, PageToken: cursor, Kinds: skill.KindsSkills})
	var de *skill.Error
	switch {
	case errors.As(err, &de) && de.Field == skill.FieldPageToken:
		callFrom(ctx).outcome = de.Code.String()
		return nil, badCursor(methodSkillsList, cursor)
	case err != nil:
		return nil, f.rpcError(ctx, "", err)
	}
	// Each entry reads its skill's files: a few at a time.
	entries := make([]skillEntry, len(page.Skills))
	errs := make([]error, len(page.Skills))
	sem := make(chan struct{}, entryWorkers)
	var wg sync.WaitGroup
	for i, s := range page.Skills {
		if s == nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			entries[i], errs[i] = f.entry(ctx, agent, s.Name)
		})
	}
	wg.Wait()
	out := &listSkillsResult{Cacheable: uncached, ResultType: resultComplete, Skills: []skillEntry{}, NextCursor: page.NextPageToken}
	if page.Total > f.opts.PageSize && vw.key.Features&FeatureFind != 0 {
		out.Meta = largeCatalog(page.Total, f.opts.PageSize)
	}
	for i, s := range page.Skills {
		switch err := errs[i]; {
		case s == nil:
		case err == nil:
			out.Skills = append(out.Skills, entries[i])
		case skill.ErrorCode(err) == skill.CodeNotFound || skill.ErrorCode(err) == skill.CodeFailedPrecondition:
			// Gone since the page was listed, or not for the extension.
		default:
			return nil, f.rpcError(ctx, skillURI(s.Name, skill.FileName), err)
		}
	}
	return out, nil
}

// Keys of the _meta of a skills/list page of a catalog larger than a page.
const (
	metaTotal = "mcpsag/total"
	metaHint  = "mcpsag/hint"
)

// largeCatalog is the _meta of every page of a listing of more than one
// page: how many skills the listing holds, and, in words, that a model is
// better served by find_skills than by the whole list in its context. The
// listing stays complete; what a host does with it is the host's choice.
func largeCatalog(total, pageSize int) mcpsdk.Meta {
	pages := (total + pageSize - 1) / pageSize
	return mcpsdk.Meta{
		metaTotal: total,
		metaHint: fmt.Sprintf("This listing holds %d skills in %d pages. Pasting them into a model's context costs "+
			"their tokens on every turn: for a catalog this large, let the model call the find_skills tool, which "+
			"returns the few skills that fit a task, and keep the listing for the host's registry and approvals.", total, pages),
	}
}

// entryWorkers bounds the entries of a skills/list page built at once.
const entryWorkers = 4

// entry returns the extension entry of the skill agent sees under name.
func (f *Front) entry(ctx context.Context, agent, name string) (skillEntry, error) {
	res, err := f.servedSkill(ctx, agent, name, true)
	if err != nil {
		return skillEntry{}, err
	}
	return entryOf(res.Entry.Skill, res.Manifest)
}

// getSkillEntry is skills/get: the entry of any skill the view's agent
// sees, listed or not, by the URI of its SKILL.md.
func (f *Front) getSkillEntry(ctx context.Context, vw *view, p *getSkillParams) (*getSkillResult, error) {
	uri := ""
	if p != nil {
		uri = p.URI
	}
	name, file, err := parseSkillURI(uri)
	if err == nil && file != skill.FileName {
		err = errors.New("skills/get takes the URI of a skill's SKILL.md")
	}
	if err != nil {
		return nil, badURI(ctx, uri, err.Error())
	}
	agent, err := f.viewAgent(ctx, vw, name)
	if err != nil {
		return nil, err
	}
	e, err := f.entry(ctx, agent, name)
	var de *skill.Error
	switch {
	case errors.As(err, &de) && (de.Code == skill.CodeNotFound || de.Code == skill.CodeFailedPrecondition):
		c := callFrom(ctx)
		c.outcome = de.Code.String()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("No skill is served at %s: %s", skill.Clip(uri, 200), describe(de))}
	case err != nil:
		return nil, f.uriError(ctx, uri, err)
	}
	return &getSkillResult{Cacheable: uncached, ResultType: resultComplete, Skill: e}, nil
}

// readDirectory is resources/directory/read: the direct children of a
// skill's folder (skill://NAME) or of a folder inside it, from the files
// its manifest lists, sorted by name and paged.
func (f *Front) readDirectory(ctx context.Context, vw *view, p *readDirectoryParams) (*readDirectoryResult, error) {
	var uri, cursor string
	if p != nil {
		uri, cursor = p.URI, p.Cursor
	}
	name, dir, err := parseURI(uri)
	if err != nil {
		return nil, badURI(ctx, uri, err.Error())
	}
	start := 0
	if cursor != "" {
		if start, err = strconv.Atoi(cursor); err != nil || start < 0 {
			return nil, badCursor(methodDirectoryRead, cursor)
		}
	}
	agent, err := f.viewAgent(ctx, vw, name)
	if err != nil {
		return nil, err
	}
	res, err := f.servedSkill(ctx, agent, name, true)
	if err != nil {
		return nil, f.uriError(ctx, uri, err)
	}
	var files []skill.FileDigest
	if res.Manifest != nil {
		files = res.Manifest.Files
	}
	children, isDir := dirChildren(res.Entry.Skill.Name, dir, files)
	if !isDir {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s is not a directory resource of this server", skill.Clip(uri, 200))}
	}
	if start > len(children) {
		return nil, badCursor(methodDirectoryRead, cursor)
	}
	end := min(start+f.opts.PageSize, len(children))
	out := &readDirectoryResult{ResultType: resultComplete, Resources: children[start:end]}
	if end < len(children) {
		out.NextCursor = strconv.Itoa(end)
	}
	return out, nil
}

// dirChildren lists the direct children of folder dir ("" for the skill's
// own folder) among files, sorted by name: files with their metadata,
// folders as directory resources. isDir is false when no file lies under
// dir.
func dirChildren(name, dir string, files []skill.FileDigest) (children []*mcpsdk.Resource, isDir bool) {
	res := make([]skill.Resource, len(files))
	for i, fd := range files {
		res[i] = skill.Resource{Path: fd.Path, Size: fd.Size}
	}
	direct, folders, isDir := newFileTree(name, res).children(dir)
	children = make([]*mcpsdk.Resource, 0, len(direct)+len(folders))
	for _, f := range direct {
		children = append(children, &mcpsdk.Resource{URI: skillURI(name, f.Path), Name: path.Base(f.Path), MIMEType: mimeOf(f.Path), Size: f.Size})
	}
	for _, d := range folders {
		children = append(children, &mcpsdk.Resource{URI: d.URI, Name: path.Base(d.Path), MIMEType: mimeDirectory})
	}
	slices.SortFunc(children, func(a, b *mcpsdk.Resource) int { return strings.Compare(a.Name, b.Name) })
	return children, isDir
}

// mimeOf is the media type of a file in listings, which do not read it:
// markdown for SKILL.md (as resources/read serves it), else
// skill.MediaType's, else bytes.
func mimeOf(p string) string {
	if p == skill.FileName {
		return mimeMarkdown
	}
	if t := skill.MediaType(p); t != "" {
		return t
	}
	return "application/octet-stream"
}
