package skillfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/skill"
)

// Resource is a file read at load level 3.
type Resource struct {
	Path      string // cleaned, slash-separated, relative to the skill folder
	Data      []byte
	Size      int64
	MediaType string
}

// maxResourcePathLen bounds resource paths in requests.
const maxResourcePathLen = 4096

// Reasons attached to resource errors.
const (
	ReasonPathEscape   = "PATH_ESCAPE"
	ReasonHiddenFile   = "HIDDEN_FILE"
	ReasonNotRegular   = "NOT_REGULAR_FILE"
	ReasonTooLarge     = "RESOURCE_TOO_LARGE"
	ReasonHardLink     = "HARD_LINK"
	ReasonBadPath      = "BAD_PATH"
	ReasonNoSuchFile   = "NO_SUCH_FILE"
	fieldResourcePath  = "resource_path"
	resourcePathFormat = "a path relative to the skill folder, such as references/guide.md"
)

// ReadResource reads one file of the skill folder dir. The path must be
// relative, use forward slashes, stay inside the folder (also through symbolic
// links), avoid hidden entries, and name a regular file of at most maxBytes
// that is not hard-linked elsewhere. Errors are *skill.Error: InvalidArgument
// for malformed paths, PermissionDenied for paths that leave the folder or
// name hidden or hard-linked files, NotFound, and FailedPrecondition for
// folders, FIFOs, devices and files over the cap. A FIFO is never opened in
// blocking mode.
func ReadResource(dir, rel string, maxBytes int64) (*Resource, error) {
	clean, err := checkResourcePath(rel)
	if err != nil {
		return nil, err
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, skill.Errorf(skill.CodeNotFound, "skill folder is gone; reindex").WithReason(ReasonNoSuchFile)
	}
	target, err := filepath.EvalSymlinks(filepath.Join(realDir, filepath.FromSlash(clean)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, skill.Errorf(skill.CodeNotFound, "no file %q in this skill; the skill's details list its files", clean).WithReason(ReasonNoSuchFile)
		}
		return nil, skill.Errorf(skill.CodePermissionDenied, "cannot resolve %q: %v", clean, pathErrText(err)).WithReason(ReasonPathEscape)
	}
	if !within(realDir, target) {
		return nil, skill.Errorf(skill.CodePermissionDenied, "%q leads outside the skill folder", clean).WithReason(ReasonPathEscape)
	}

	// os.Root re-checks confinement at open time, against a swap between
	// the check above and the open.
	root, err := os.OpenRoot(realDir)
	if err != nil {
		return nil, skill.Errorf(skill.CodeNotFound, "skill folder is gone; reindex").WithReason(ReasonNoSuchFile)
	}
	defer root.Close()
	f, err := root.OpenFile(filepath.FromSlash(clean), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, skill.Errorf(skill.CodeNotFound, "no file %q in this skill", clean).WithReason(ReasonNoSuchFile)
		}
		return nil, skill.Errorf(skill.CodePermissionDenied, "cannot open %q: %v", clean, pathErrText(err)).WithReason(ReasonPathEscape)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, skill.Errorf(skill.CodeInternal, "stat %q: %v", clean, pathErrText(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, skill.Errorf(skill.CodeFailedPrecondition, "%q is a %s, not a regular file", clean, modeName(fi.Mode())).WithReason(ReasonNotRegular)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return nil, skill.Errorf(skill.CodePermissionDenied, "%q is hard-linked (%d links); such files are not served because a link can point outside the folder", clean, st.Nlink).WithReason(ReasonHardLink)
	}
	if fi.Size() > maxBytes {
		return nil, skill.Errorf(skill.CodeFailedPrecondition, "%q is %d bytes, over the %d-byte resource limit", clean, fi.Size(), maxBytes).WithReason(ReasonTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, skill.Errorf(skill.CodeInternal, "read %q: %v", clean, pathErrText(err))
	}
	if int64(len(data)) > maxBytes {
		return nil, skill.Errorf(skill.CodeFailedPrecondition, "%q grew over the %d-byte resource limit", clean, maxBytes).WithReason(ReasonTooLarge)
	}
	return &Resource{Path: clean, Data: data, Size: int64(len(data)), MediaType: mediaType(clean, data)}, nil
}

// checkResourcePath validates the syntax of a requested path and returns it
// cleaned.
func checkResourcePath(rel string) (string, error) {
	bad := func(format string, args ...any) error {
		return skill.InvalidArgument(fieldResourcePath, format, args...).WithReason(ReasonBadPath)
	}
	switch {
	case rel == "":
		return "", bad("required at level 3: %s", resourcePathFormat)
	case len(rel) > maxResourcePathLen:
		return "", bad("%d bytes long; at most %d", len(rel), maxResourcePathLen)
	case strings.ContainsRune(rel, 0):
		return "", bad("contains a NUL byte")
	case !utf8.ValidString(rel):
		return "", bad("is not valid UTF-8")
	case strings.Contains(rel, `\`):
		return "", bad("contains a backslash; use forward slashes")
	case path.IsAbs(rel):
		return "", skill.Errorf(skill.CodePermissionDenied, "%q is absolute; want %s", rel, resourcePathFormat).WithField(fieldResourcePath).WithReason(ReasonPathEscape)
	}
	clean := path.Clean(rel)
	if !filepath.IsLocal(filepath.FromSlash(clean)) || strings.HasPrefix(clean, "../") || clean == ".." {
		return "", skill.Errorf(skill.CodePermissionDenied, "%q leaves the skill folder", rel).WithField(fieldResourcePath).WithReason(ReasonPathEscape)
	}
	if clean == "." {
		return "", bad("names the skill folder itself; want %s", resourcePathFormat)
	}
	for _, seg := range strings.Split(clean, "/") {
		if strings.HasPrefix(seg, ".") {
			return "", skill.Errorf(skill.CodePermissionDenied, "%q names a hidden file or folder; those are not served", rel).WithField(fieldResourcePath).WithReason(ReasonHiddenFile)
		}
	}
	return clean, nil
}

// pathErrText drops the absolute host path from *fs.PathError messages, so
// replies never reveal the server's layout.
func pathErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func modeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "folder"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "device"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}

// mediaType is the media type of a file read as data: skill.MediaType's
// by name, else plain text when data is valid UTF-8, else bytes.
func mediaType(name string, data []byte) string {
	if t := skill.MediaType(name); t != "" {
		return t
	}
	if utf8.Valid(data) {
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}
