package skill

import (
	"mime"
	"path"
	"strings"
)

// FileName is the name of the file that makes a folder a skill.
const FileName = "SKILL.md"

// MediaType is the media type of a skill's file named name, judged by its
// extension alone, or "" when the extension says nothing. Markdown, Python
// and shell scripts, the files a skill is made of, are named by this table,
// the same on every machine and as text with a charset, so that a client
// shows them as text: a shell script is text/x-shellscript, as file(1)
// names it, not application/x-sh or text/x-sh, which the system's table
// gives depending on the machine. Other extensions go to the system's table
// (mime.TypeByExtension). Whoever reads the bytes of a file this table does
// not know may look at them (skillfs calls valid UTF-8 plain text).
func MediaType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := mediaTypes[ext]; ok {
		return t
	}
	if ext == "" {
		return ""
	}
	return mime.TypeByExtension(ext)
}

// mediaTypes are the media types MediaType names itself, by extension.
var mediaTypes = map[string]string{
	".md":       "text/markdown; charset=utf-8",
	".markdown": "text/markdown; charset=utf-8",
	".py":       "text/x-python; charset=utf-8",
	".sh":       "text/x-shellscript; charset=utf-8",
}
