package skillfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

func TestReadResource(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	writeFile(t, filepath.Join(dir, "references", "guide.md"), "# Guide\n")
	writeFile(t, filepath.Join(dir, "scripts", "run.py"), "print('hi')\n")
	writeFile(t, filepath.Join(dir, ".env"), "SECRET=1\n")
	writeFile(t, filepath.Join(dir, "big.txt"), strings.Repeat("x", 2048))
	writeFile(t, filepath.Join(dir, "bin.dat"), "\x00\xff\xfe")
	secret := writeFile(t, filepath.Join(outside, "secret.txt"), "outside\n")
	must(t, os.Symlink(secret, filepath.Join(dir, "abs-link")))
	must(t, os.Symlink("../"+filepath.Base(outside)+"/secret.txt", filepath.Join(dir, "rel-link")))
	must(t, os.Symlink("references/guide.md", filepath.Join(dir, "inside-link")))
	must(t, os.Symlink("loop-b", filepath.Join(dir, "loop-a")))
	must(t, os.Symlink("loop-a", filepath.Join(dir, "loop-b")))
	must(t, os.Symlink("/dev/zero", filepath.Join(dir, "dev-link")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644))
	must(t, os.Link(secret, filepath.Join(dir, "hard-link")))
	hasDevice := syscall.Mknod(filepath.Join(dir, "null-dev"), syscall.S_IFCHR|0o644, 1<<8|3) == nil

	type want struct {
		code   skill.Code
		reason string
	}
	cases := map[string]want{
		"references/guide.md":                 {},
		"./references/../references/guide.md": {},
		"inside-link":                         {},
		"bin.dat":                             {},
		"":                                    {skill.CodeInvalidArgument, ReasonBadPath},
		"a\x00b":                              {skill.CodeInvalidArgument, ReasonBadPath},
		`references\guide.md`:                 {skill.CodeInvalidArgument, ReasonBadPath},
		strings.Repeat("a/", 3000):            {skill.CodeInvalidArgument, ReasonBadPath},
		".":                                   {skill.CodeInvalidArgument, ReasonBadPath},
		"../secret.txt":                       {skill.CodePermissionDenied, ReasonPathEscape},
		"references/../../x":                  {skill.CodePermissionDenied, ReasonPathEscape},
		"/etc/passwd":                         {skill.CodePermissionDenied, ReasonPathEscape},
		"abs-link":                            {skill.CodePermissionDenied, ReasonPathEscape},
		"rel-link":                            {skill.CodePermissionDenied, ReasonPathEscape},
		"dev-link":                            {skill.CodePermissionDenied, ReasonPathEscape},
		"loop-a":                              {skill.CodePermissionDenied, ReasonPathEscape},
		".env":                                {skill.CodePermissionDenied, ReasonHiddenFile},
		"hard-link":                           {skill.CodePermissionDenied, ReasonHardLink},
		"%2e%2e/secret.txt":                   {skill.CodeNotFound, ReasonNoSuchFile},
		"missing.md":                          {skill.CodeNotFound, ReasonNoSuchFile},
		"references":                          {skill.CodeFailedPrecondition, ReasonNotRegular},
		"pipe":                                {skill.CodeFailedPrecondition, ReasonNotRegular},
		"big.txt":                             {skill.CodeFailedPrecondition, ReasonTooLarge},
	}
	if hasDevice {
		cases["null-dev"] = want{skill.CodeFailedPrecondition, ReasonNotRegular}
	}
	for p, w := range cases {
		t.Run(strings.ReplaceAll(p[:min(len(p), 40)], "/", "|"), func(t *testing.T) {
			start := time.Now()
			res, err := ReadResource(dir, p, 1024)
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v; must never block", d)
			}
			if w.code == 0 {
				if err != nil {
					t.Fatalf("error %v, want success", err)
				}
				if res.Size == 0 || res.MediaType == "" {
					t.Errorf("resource = %+v", res)
				}
				return
			}
			var se *skill.Error
			if !errors.As(err, &se) {
				t.Fatalf("error = %v, want *skill.Error %v", err, w.code)
			}
			if se.Code != w.code || se.Reason != w.reason {
				t.Errorf("got %v/%s (%v), want %v/%s", se.Code, se.Reason, err, w.code, w.reason)
			}
			if strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), outside) {
				t.Errorf("error %q reveals a host path", err)
			}
		})
	}
}

func FuzzReadResourcePath(f *testing.F) {
	dir := f.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "references"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "references", "a.md"), []byte("a"), 0o644); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"references/a.md", "../x", "/etc/passwd", "a/../../b", "..", ".", "", "\x00", `a\b`, "references/./a.md", "references//a.md"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		res, err := ReadResource(dir, p, 1<<20)
		if err == nil {
			if res.Path != "references/a.md" {
				t.Fatalf("served %q for %q; only references/a.md exists", res.Path, p)
			}
			return
		}
		var se *skill.Error
		if !errors.As(err, &se) {
			t.Fatalf("untyped error %v for %q", err, p)
		}
	})
}
