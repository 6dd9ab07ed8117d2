package mcp

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

// A skill's files by folder: what a load_skill reply shows of them when they
// do not all fit its budget (fileView), and the folder listings of
// read_skill_file and resources/directory/read.

// folderOut is a folder whose files a load_skill reply does not list one
// by one.
type folderOut struct {
	Path      string `json:"path" jsonschema:"relative to the skill folder; read_skill_file with this path lists its files"`
	Files     int    `json:"files" jsonschema:"the files under the folder, at any depth"`
	SizeBytes int64  `json:"size_bytes" jsonschema:"their bytes"`
	URI       string `json:"uri" jsonschema:"the folder as a directory resource"`
}

// fileView is how a reply shows a skill's files: some listed one by one,
// some folders summarised, and, when even the top of the folder does not
// fit, how many of its entries are left out.
type fileView struct {
	files   []skill.Resource
	folders []folderOut
	omitted int // entries of the skill's folder itself not shown
}

// listed says how many files a view lists one by one.
func (v fileView) listed() int { return len(v.files) }

// fileTree groups a skill's resources by folder.
type fileTree struct {
	name  string
	files []skill.Resource // sorted by path
	// under counts the files and bytes under each folder, at any depth.
	under map[string]folderOut
	// dirs lists every folder, sorted.
	dirs []string
}

func newFileTree(name string, files []skill.Resource) *fileTree {
	t := &fileTree{name: name, files: slices.SortedFunc(slices.Values(files), func(a, b skill.Resource) int {
		return strings.Compare(a.Path, b.Path)
	}), under: map[string]folderOut{}}
	for _, f := range t.files {
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			o := t.under[d]
			o.Path, o.Files, o.SizeBytes = d, o.Files+1, o.SizeBytes+f.Size
			t.under[d] = o
		}
	}
	for d := range t.under {
		t.dirs = append(t.dirs, d)
	}
	slices.Sort(t.dirs)
	return t
}

// parent returns the folder that holds p, "" for the skill's folder.
func parent(p string) string {
	if d := path.Dir(p); d != "." {
		return d
	}
	return ""
}

// view shows the files whose folders are all open, and summarises each
// folder that is closed but whose parent is open.
func (t *fileTree) view(open map[string]bool) fileView {
	shown := func(dir string) bool {
		for ; dir != ""; dir = parent(dir) {
			if !open[dir] {
				return false
			}
		}
		return true
	}
	var v fileView
	for _, f := range t.files {
		if shown(parent(f.Path)) {
			v.files = append(v.files, f)
		}
	}
	for _, d := range t.dirs {
		if !open[d] && shown(parent(d)) {
			o := t.under[d]
			o.URI = dirURI(t.name, d)
			v.folders = append(v.folders, o)
		}
	}
	return v
}

// children returns the files directly in folder dir ("" for the skill's
// folder) and the folders directly in it, each sorted by path; isDir is
// false when no file lies under dir.
func (t *fileTree) children(dir string) (files []skill.Resource, folders []folderOut, isDir bool) {
	_, isDir = t.under[dir]
	isDir = isDir || dir == ""
	for _, f := range t.files {
		if parent(f.Path) == dir {
			files = append(files, f)
		}
	}
	for _, d := range t.dirs {
		if parent(d) == dir {
			o := t.under[d]
			o.URI = dirURI(t.name, d)
			folders = append(folders, o)
		}
	}
	return files, folders, isDir
}

// all shows every file.
func (t *fileTree) all() fileView {
	open := make(map[string]bool, len(t.dirs))
	for _, d := range t.dirs {
		open[d] = true
	}
	return t.view(open)
}

// summaries returns views from the most summarised (every top folder
// closed) to the least, opening one folder at a time, the one with the
// fewest files first.
func (t *fileTree) summaries(yield func(fileView) bool) {
	open := map[string]bool{}
	for {
		if !yield(t.view(open)) {
			return
		}
		next := ""
		for _, d := range t.dirs {
			if open[d] || parent(d) != "" && !open[parent(d)] {
				continue // open already, or not shown
			}
			if next == "" || t.under[d].Files < t.under[next].Files {
				next = d
			}
		}
		if next == "" {
			return
		}
		open[next] = true
	}
}

// top is the view of the first n entries of the skill's folder (files and
// folders, by name), every folder closed.
func (t *fileTree) top(n int) fileView {
	v := t.view(map[string]bool{})
	type entry struct {
		name   string
		file   *skill.Resource
		folder *folderOut
	}
	var entries []entry
	for i := range v.files {
		entries = append(entries, entry{name: v.files[i].Path, file: &v.files[i]})
	}
	for i := range v.folders {
		entries = append(entries, entry{name: v.folders[i].Path, folder: &v.folders[i]})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	out := fileView{omitted: max(0, len(entries)-n)}
	for _, e := range entries[:min(n, len(entries))] {
		if e.file != nil {
			out.files = append(out.files, *e.file)
		} else {
			out.folders = append(out.folders, *e.folder)
		}
	}
	return out
}

// dirURI is the directory resource of folder dir of a skill.
func dirURI(name, dir string) string {
	return strings.TrimSuffix(skillURI(name, dir+"/x"), "/x")
}

// note says how to reach the files a view does not list.
func (v fileView) note(total int) string {
	if v.listed() == total {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of the skill's %d files are listed in files, to fit token_budget", v.listed(), total)
	if len(v.folders) > 0 {
		fmt.Fprintf(&b, "; folders counts the others by folder: read_skill_file with a folder's path (such as %q) lists it", v.folders[0].Path)
	}
	if v.omitted > 0 {
		fmt.Fprintf(&b, "; %d more entries of the skill's folder are not shown: read_skill_file with path \".\" lists them", v.omitted)
	}
	b.WriteString(". A listing gives 100 entries at a time, with next_page_token for the rest; resources/directory/read lists the same folders.")
	return b.String()
}

// entryOut is one entry of a folder listing of read_skill_file.
type entryOut struct {
	Path      string `json:"path" jsonschema:"relative to the skill folder; pass it to read_skill_file"`
	Kind      string `json:"kind" jsonschema:"file or folder"`
	SizeBytes int64  `json:"size_bytes" jsonschema:"the file's bytes, or the folder's files' bytes"`
	Files     int    `json:"files,omitempty" jsonschema:"for a folder: the files under it, at any depth"`
	URI       string `json:"uri"`
}

// folderPageSize is the number of entries of one folder listing page.
const folderPageSize = 100

// folderEntries lists a page of folder dir ("" for the skill's folder):
// its files and folders, sorted by path, from offset start; next is the
// offset of the next page, 0 when this is the last. ok is false when no
// file lies under dir.
func (t *fileTree) folderEntries(dir string, start int) (entries []entryOut, total, next int, ok bool) {
	files, folders, ok := t.children(dir)
	all := make([]entryOut, 0, len(files)+len(folders))
	for _, f := range files {
		all = append(all, entryOut{Path: f.Path, Kind: "file", SizeBytes: f.Size, URI: skillURI(t.name, f.Path)})
	}
	for _, d := range folders {
		all = append(all, entryOut{Path: d.Path, Kind: "folder", SizeBytes: d.SizeBytes, Files: d.Files, URI: d.URI})
	}
	slices.SortFunc(all, func(a, b entryOut) int { return strings.Compare(a.Path, b.Path) })
	if start > len(all) {
		return nil, len(all), 0, ok
	}
	end := min(start+folderPageSize, len(all))
	if end < len(all) {
		next = end
	}
	return all[start:end], len(all), next, ok
}

// Reasons of the router's refusals of level-3 paths that name a folder.
const (
	reasonNotRegularFile = "NOT_REGULAR_FILE"
	reasonBadPath        = "BAD_PATH"
)

// folderAsked reports whether a level-3 load of path p that failed with
// err asked for a folder: the router says p is not a regular file, or p is
// the skill's folder itself ("."). dir is the folder, "" for the skill's.
func folderAsked(p string, err error) (dir string, ok bool) {
	var de *skill.Error
	if err == nil || !errors.As(err, &de) {
		return "", false
	}
	switch clean := path.Clean(p); {
	case de.Reason == reasonNotRegularFile:
		return clean, true
	case de.Reason == reasonBadPath && clean == ".":
		return "", true
	}
	return "", false
}

// readFolder is read_skill_file of a folder: a page of its entries. A path
// that is no folder of the skill's files gets loadErr, the router's answer
// to reading it.
func (f *Front) readFolder(ctx context.Context, agent string, in readInput, dir string, loadErr error) (*mcpsdk.CallToolResult, readOutput, error) {
	res, err := f.router.Get(ctx, skill.GetRequest{Name: in.Name, Agent: agent})
	switch {
	case err != nil:
		return nil, readOutput{}, f.toolError(ctx, toolRead, err)
	case res.Entry == nil || res.Entry.Skill == nil:
		return nil, readOutput{}, f.toolError(ctx, toolRead, fmt.Errorf("router returned a skill without its entry"))
	}
	s := res.Entry.Skill
	if r := s.Refusal(); r != nil {
		return nil, readOutput{}, f.toolError(ctx, toolRead, r)
	}
	start := 0
	badToken := skill.InvalidArgument(skill.FieldPageToken, "%q is not one this server gave; pass next_page_token from the previous page of this folder",
		skill.Clip(in.PageToken, 40))
	if in.PageToken != "" {
		if start, err = strconv.Atoi(in.PageToken); err != nil || start <= 0 {
			return nil, readOutput{}, f.toolError(ctx, toolRead, badToken)
		}
	}
	tree := newFileTree(s.Name, s.Resources)
	entries, total, next, ok := tree.folderEntries(dir, start)
	switch {
	case !ok:
		return nil, readOutput{}, f.toolError(ctx, toolRead, loadErr)
	case start > 0 && start >= total:
		return nil, readOutput{}, f.toolError(ctx, toolRead, badToken)
	}
	out := readOutput{Name: s.Name, Path: ".", MediaType: mimeDirectory, Trust: trustOf(s), Source: sourceOf(s),
		Entries: entries, EntriesTotal: total}
	if dir != "" {
		out.Path, out.SizeBytes = dir, tree.under[dir].SizeBytes
	} else {
		for _, r := range s.Resources {
			out.SizeBytes += r.Size
		}
	}
	if next > 0 {
		out.NextPageToken = strconv.Itoa(next)
	}
	return nil, out, nil
}
