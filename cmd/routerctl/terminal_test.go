package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// TestTerminalWriterEscapes: on a terminal, control, format and separator
// characters come out as escapes, newline and tab as they are, bytes that
// are no UTF-8 as \xNN, and a character cut between two writes is escaped
// whole; anywhere else, every byte is written as it came.
func TestTerminalWriterEscapes(t *testing.T) {
	text := "a\x1b[31mred\x07 \u202erlo\u200bzw\u2028ls \U000e0041tag\tb\nc \xff\xfe \u00e9"
	var out bytes.Buffer
	w := newTerminalWriter(&out, func() bool { return true })
	for _, part := range []string{text[:3], text[3:20], text[20:21], text[21:]} { // cuts U+202E in two
		if _, err := w.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	want := `a\u001b[31mred\u0007 \u202erlo\u200bzw\u2028ls \U000e0041tag` + "\tb\nc " + `\xff\xfe` + " \u00e9"
	if out.String() != want {
		t.Errorf("on a terminal:\n got %q\nwant %q", out.String(), want)
	}
	out.Reset()
	w = newTerminalWriter(&out, func() bool { return false })
	w.Write([]byte(text))
	w.Flush()
	if out.String() != text {
		t.Errorf("not a terminal: %q, want the text exact", out.String())
	}
	out.Reset()
	w = newTerminalWriter(&out, func() bool { return true })
	w.Write([]byte("cut \xe2\x80"))
	w.Flush()
	if got := out.String(); got != `cut \xe2\x80` {
		t.Errorf("a character never completed: %q, want its bytes escaped", got)
	}
}

// TestSkillTextOnATerminal serves a skill whose description holds a
// right-to-left override and a zero-width space, whose tags hold an ESC
// sequence, whose body retitles and clears the terminal and whose resource
// holds ESC, and runs show, list, match and load (body and resource)
// through the real binary with its stdout on a pseudo-terminal: none may
// print a control character raw (they printed raw ESC, U+202E and U+200B;
// names were escaped, nothing else). Piped, and with --json on the
// terminal, the text is exact.
func TestSkillTextOnATerminal(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	dir := filepath.Join(ws, "skills", "term-probe")
	if err := os.MkdirAll(filepath.Join(dir, "references"), 0o755); err != nil {
		t.Fatal(err)
	}
	skillText := "---\nname: term-probe\ndescription: \"Paints \\u202eright-to-left\\u200b terminal probe text.\"\n" +
		"tags: [\"\\e[31mred\", plain]\n---\n# Probe\n\nSets the title \x1b]0;pwned\x07 and clears \x1b[2J the screen.\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(skillText), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "references", "notes.md"), []byte("notes \x1b[5mblink\x1b[0m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := daemontest.Start(t, ws, daemontest.Options{})
	raw := "\x1b\x07\u202e\u200b"
	commands := map[string][]string{
		"show":     {"show", "term-probe"},
		"list":     {"list"},
		"match":    {"match", "terminal probe text"}, // names and reasons: no text of the probe's
		"load":     {"load", "term-probe"},
		"resource": {"load", "term-probe", "--resource", "references/notes.md"},
	}
	for name, args := range commands {
		showsText := name != "match"
		args = append([]string{"--addr", r.Addr}, args...)
		got := ctlOnTerminal(t, args...)
		if got.code != 0 {
			t.Fatalf("%s on a terminal: exit %d\n%s%s", name, got.code, got.stdout, got.stderr)
		}
		if i := strings.IndexAny(got.stdout, raw); i >= 0 {
			t.Errorf("%s printed %q raw to the terminal:\n%q", name, []rune(got.stdout[i:])[0], got.stdout)
		}
		if !showsText {
			continue
		}
		if !strings.Contains(got.stdout, `\u`) {
			t.Errorf("%s on a terminal shows no escape:\n%s", name, got.stdout)
		}
		piped := ctl(t, args...)
		if !strings.ContainsAny(piped.stdout, raw) {
			t.Errorf("%s piped: the skill's text is not exact:\n%q", name, piped.stdout)
		}
	}
	got := ctlOnTerminal(t, "--addr", r.Addr, "show", "term-probe", "--json")
	if !strings.Contains(got.stdout, "\u202eright-to-left\u200b") {
		t.Errorf("show --json on a terminal: the description is not exact:\n%q", got.stdout)
	}
}

// ctlOnTerminal runs the routerctl binary with its stdout on a new
// pseudo-terminal, and returns what the terminal received (the terminal's
// \r\n turned back into \n) and the exit code.
func ctlOnTerminal(t *testing.T, args ...string) result {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("cannot unlock a pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("no pseudo-terminal number: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("cannot open the pseudo-terminal: %v", err)
	}
	cmd, _, errb := command(nil, args...)
	cmd.Stdout = tty
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&out, master); close(copied) }()
	err = cmd.Run()
	tty.Close()
	select {
	case <-copied:
	case <-time.After(10 * time.Second):
		t.Fatal("the pseudo-terminal was not drained")
	}
	res := result{stdout: strings.ReplaceAll(out.String(), "\r\n", "\n"), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return res
}
