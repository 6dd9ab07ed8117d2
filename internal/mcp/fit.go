package mcp

import (
	"context"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/skill"
)

// A load_skill reply stays within its token budget as a whole: the framed
// body, the file list and the rest of the JSON, estimated as the router
// estimates (ceil(characters / 4)). The files are listed one by one when
// they fit; otherwise folders are summarised (how many files, how many
// bytes), the smallest opened first while they fit, and the reply says how
// to list what it summarises (read_skill_file with a folder's path, or
// resources/directory/read). The body gets the rest, cut by the router.

// withFiles returns out with the view's files.
func withFiles(out loadOutput, name string, v fileView, total int) loadOutput {
	out.Files = make([]fileOut, 0, len(v.files))
	for _, f := range v.files {
		out.Files = append(out.Files, fileOut{Path: f.Path, SizeBytes: f.Size, URI: skillURI(name, f.Path)})
	}
	out.Folders, out.FilesTotal = v.folders, total
	out.FilesTruncated = v.listed() < total
	out.FilesNote = v.note(total)
	return out
}

// replyTokens estimates the tokens of a tool output's text.
func replyTokens(out any) (int, error) {
	text, err := textOf(out)
	if err != nil {
		return 0, err
	}
	return skill.EstimateTokens(text), nil
}

// maxFitRounds bounds the loads that cut a body down to fit.
const maxFitRounds = 6

// loadWithin loads a skill's body so that the whole load_skill reply stays
// within the token budget (the request's, or the router's default): files
// as they fit (see fileView), and the body cut to what is left. A budget
// too small for the reply without its body is refused, saying how much the
// reply needs.
func (f *Front) loadWithin(ctx context.Context, req skill.LoadRequest) (loadOutput, error) {
	res, err := f.router.Load(ctx, req)
	if err != nil {
		return loadOutput{}, err
	}
	if res.Skill == nil {
		return loadOutput{}, fmt.Errorf("router returned a load result without its skill")
	}
	budget, s := res.TokenBudget, res.Skill
	tree := newFileTree(s.Name, s.Resources)
	out := withFiles(loadOut(res), s.Name, tree.all(), len(s.Resources))
	n, err := replyTokens(out)
	if err != nil || budget <= 0 || n <= budget {
		return out, err
	}
	// The reply without its body, for each way of showing the files.
	bare := out
	bare.Content, bare.Truncated = "", true
	fit := replyFit{bare: bare, name: s.Name, tree: tree, total: len(s.Resources)}
	empty, err := replyTokens(fit.with(tree.top(0)))
	if err != nil {
		return loadOutput{}, err
	}
	bodyNeed := n - fit.tokens(tree.all())
	// The files may take what the body leaves, and at least a fifth.
	view := fit.filesView(empty + max(budget/5, budget-empty-bodyNeed))
	// The frame around the body, as the first load framed it.
	frame := skill.EstimateTokens(res.Content) - res.Tokens + 4
	bodyBudget := budget - fit.tokens(view) - frame
	if bodyBudget < 1 && view.listed()+len(view.folders) > 0 {
		view = tree.top(0)
		bodyBudget = budget - empty - frame
	}
	if bodyBudget < 1 {
		return loadOutput{}, skill.InvalidArgument(skill.FieldTokenBudget,
			"%d is too small for this skill's reply, which takes %d tokens without its body; ask for at least %d, or 0 for the default",
			budget, empty+frame, empty+frame+100)
	}
	return f.loadFitting(ctx, req, fit, view, budget, bodyBudget)
}

// replyFit measures a load_skill reply without its body (bare) with the
// files of a skill's tree shown one way or another.
type replyFit struct {
	bare  loadOutput
	name  string
	tree  *fileTree
	total int
}

// with is the bare reply showing view.
func (p replyFit) with(v fileView) loadOutput { return withFiles(p.bare, p.name, v, p.total) }

// tokens are the bare reply's tokens showing view.
func (p replyFit) tokens(v fileView) int { return mustTokens(p.with(v)) }

// filesView is the fullest view of the files whose bare reply takes at
// most room tokens: the folders summarised as the tree offers them, or,
// when not even every top folder summarised fits, the first entries of
// the skill's folder that do.
func (p replyFit) filesView(room int) fileView {
	view, fits := fileView{}, false
	for v := range p.tree.summaries {
		if p.tokens(v) > room {
			break
		}
		view, fits = v, true
	}
	if fits {
		return view
	}
	top := p.tree.view(map[string]bool{})
	k := sort.Search(len(top.files)+len(top.folders), func(k int) bool {
		return p.tokens(p.tree.top(k+1)) > room
	})
	return p.tree.top(k)
}

// loadFitting loads the body under bodyBudget and shows view, cutting the
// body further while JSON escapes and the frame make the reply exceed
// budget, at most maxFitRounds times.
func (f *Front) loadFitting(ctx context.Context, req skill.LoadRequest, fit replyFit, view fileView, budget, bodyBudget int) (loadOutput, error) {
	for range maxFitRounds {
		req.TokenBudget = bodyBudget
		res, err := f.router.Load(ctx, req)
		if err != nil {
			return loadOutput{}, err
		}
		out := withFiles(loadOut(res), fit.name, view, fit.total)
		out.TokenBudget = budget
		n, err := replyTokens(out)
		if err != nil || n <= budget {
			return out, err
		}
		// JSON escapes and the frame cost more than estimated: cut by
		// the excess.
		bodyBudget -= n - budget + 1
		if bodyBudget < 1 {
			break
		}
	}
	return loadOutput{}, skill.InvalidArgument(skill.FieldTokenBudget,
		"%d is too small for this skill's reply; ask for at least %d, or 0 for the default", budget, budget+100)
}

// mustTokens is replyTokens for outputs that encoded once already.
func mustTokens(out loadOutput) int {
	n, _ := replyTokens(out)
	return n
}

// listWithin is list_skills with budget_chars: a reply of at most budget
// characters (the estimate's unit before it divides by four) that holds,
// instead of a page, the rendered catalog of every skill the caller sees,
// rendered within what the rest of the reply leaves.
func (f *Front) listWithin(ctx context.Context, req skill.ListRequest, budget int) (listOutput, error) {
	req.PageSize = 1 // the page is not returned
	catalog := budget
	for range maxFitRounds {
		req.CatalogBudget = catalog
		res, err := f.router.List(ctx, req)
		if err != nil {
			return listOutput{}, err
		}
		out := listOut(res)
		out.Skills, out.NextPageToken = []summaryOut{}, ""
		if out.Catalog != nil {
			out.Catalog.Budget = budget
		}
		text, err := textOf(out)
		if err != nil {
			return listOutput{}, err
		}
		n := utf8.RuneCountInString(text)
		if n <= budget {
			return out, nil
		}
		if catalog -= n - budget; catalog < 1 {
			break
		}
	}
	return listOutput{}, skill.InvalidArgument(skill.FieldCatalogCharBudget,
		"%d is too small for a reply with a catalog; ask for at least a few hundred characters", budget)
}
