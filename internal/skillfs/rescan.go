package skillfs

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpsag/router/internal/skill"
)

// ScanSkillDir scans one skill folder that a Scan of root found, as Scan
// would find it now: its SKILL.md and its resources. It lets a change
// inside known skill folders be picked up without walking every root. ok is
// false when the folder no longer holds a SKILL.md that Scan would take, or
// when Scan would report a problem for it: the caller then scans the roots.
func ScanSkillDir(root skill.Root, dir string, lim ScanLimits) (f Found, ok bool) {
	realRoot, err := filepath.EvalSymlinks(root.Path)
	if err != nil {
		return Found{}, false
	}
	w := walker{root: root, realRoot: realRoot, lim: lim, res: &ScanResult{}, seen: map[string]bool{}}
	if !w.inside(dir) {
		return Found{}, false
	}
	rel, err := filepath.Rel(realRoot, dir)
	if err != nil {
		return Found{}, false
	}
	info, err := os.Lstat(filepath.Join(dir, SkillFile))
	if err != nil {
		return Found{}, false
	}
	f, ok = w.skillFile(filepath.Join(root.Path, rel), dir, fs.FileInfoToDirEntry(info), nil, nil)
	if !ok || len(w.res.Problems) > 0 {
		return Found{}, false
	}
	return f, true
}
