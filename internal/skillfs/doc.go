// Package skillfs is where the router touches the skill folders: it expands
// the configured roots, walks them for SKILL.md files and their resources,
// reads each root's registry.json, reads one resource file confined to its
// skill folder (through os.Root, refusing links out, hidden, hard-linked and
// special files), and watches the folders for changes. What it reads is
// untrusted: every limit is enforced here, before parsing.
package skillfs
