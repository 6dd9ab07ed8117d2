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
	total := len(s.Resources)
	out := withFiles(loadOut(res), s.Name, tree.all(), total)
	n, err := replyTokens(out)
	if err != nil || budget <= 0 || n <= budget {
		return out, err
	}
	// The reply without its body, for each way of showing the files.
	bare := out
	bare.Content, bare.Truncated = "", true
	empty, err := replyTokens(withFiles(bare, s.Name, tree.top(0), total))
	if err != nil {
		return loadOutput{}, err
	}
	bodyNeed := n - mustTokens(withFiles(bare, s.Name, tree.all(), total))
	// The files may take what the body leaves, and at least a fifth.
	filesRoom := empty + max(budget/5, budget-empty-bodyNeed)
	view, fits := fileView{}, false
	for v := range tree.summaries {
		if mustTokens(withFiles(bare, s.Name, v, total)) > filesRoom {
			break
		}
		view, fits = v, true
	}
	if !fits {
		// Not even every top folder summarised fits: the first entries
		// of the skill's folder that do.
		top := tree.view(map[string]bool{})
		k := sort.Search(len(top.files)+len(top.folders), func(k int) bool {
			return mustTokens(withFiles(bare, s.Name, tree.top(k+1), total)) > filesRoom
		})
		view = tree.top(k)
	}
	// The frame around the body, as the first load framed it.
	frame := skill.EstimateTokens(res.Content) - res.Tokens + 4
	room := budget - mustTokens(withFiles(bare, s.Name, view, total))
	bodyBudget := room - frame
	if bodyBudget < 1 && view.listed()+len(view.folders) > 0 {
		view = tree.top(0)
		room = budget - empty
		bodyBudget = room - frame
	}
	if bodyBudget < 1 {
		return loadOutput{}, skill.InvalidArgument(skill.FieldTokenBudget,
			"%d is too small for this skill's reply, which takes %d tokens without its body; ask for at least %d, or 0 for the default",
			budget, empty+frame, empty+frame+100)
	}
	for range maxFitRounds {
		req.TokenBudget = bodyBudget
		if res, err = f.router.Load(ctx, req); err != nil {
			return loadOutput{}, err
		}
		out = withFiles(loadOut(res), s.Name, view, total)
		out.TokenBudget = budget
		if n, err = replyTokens(out); err != nil || n <= budget {
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
