package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/mcpsag/router/internal/skill"
)

// terminalWriter is one of routerctl's output streams. Much of what
// routerctl prints comes from skills (names, descriptions, tags, bodies,
// resources, problems), which are untrusted: printed raw to a terminal,
// their control characters could move the cursor, recolour or retitle the
// terminal, or reorder or hide text. So while escape says so (the stream is
// a terminal, and for stdout --json is off), every character
// skill.ControlChar names, newline and tab aside, comes out as a \uXXXX
// escape, and a byte that is no UTF-8 as \xNN. Anywhere else (a pipe, a
// file) and in JSON, the text is written exact. A character cut between two
// writes is held back until the next, so its halves cannot pass one by one.
type terminalWriter struct {
	w       io.Writer
	escape  func() bool
	pending []byte
}

func newTerminalWriter(w io.Writer, escape func() bool) *terminalWriter {
	return &terminalWriter{w: w, escape: escape}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (t *terminalWriter) Write(p []byte) (int, error) {
	if !t.escape() && len(t.pending) == 0 {
		return t.w.Write(p)
	}
	data := append(t.pending, p...)
	t.pending = nil
	if cut := incompleteTail(data); cut > 0 && t.escape() {
		t.pending = append([]byte(nil), data[len(data)-cut:]...)
		data = data[:len(data)-cut]
	}
	if !t.escape() || !needsEscape(data) {
		if _, err := t.w.Write(data); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	var b strings.Builder
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "\\x%02x", data[0])
		case r != '\n' && r != '\t' && skill.ControlChar(r):
			if r > 0xffff {
				fmt.Fprintf(&b, "\\U%08x", r)
			} else {
				fmt.Fprintf(&b, "\\u%04x", r)
			}
		default:
			b.Write(data[:n])
		}
		data = data[n:]
	}
	if _, err := io.WriteString(t.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what a write left pending: the start of a character no
// write completed, as the bytes it is.
func (t *terminalWriter) Flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	rest := t.pending
	t.pending = nil
	_, err := t.Write(rest)
	if len(t.pending) > 0 { // still not a whole character: show its bytes
		rest, t.pending = t.pending, nil
		var b strings.Builder
		for _, c := range rest {
			fmt.Fprintf(&b, "\\x%02x", c)
		}
		_, err = io.WriteString(t.w, b.String())
	}
	return err
}

// incompleteTail returns how many bytes at the end of b begin a UTF-8
// character that b does not complete (0 when none).
func incompleteTail(b []byte) int {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}

// needsEscape reports whether b holds anything the terminal must not see
// raw.
func needsEscape(b []byte) bool {
	if !utf8.Valid(b) {
		return true
	}
	return bytes.ContainsFunc(b, func(r rune) bool { return r != '\n' && r != '\t' && skill.ControlChar(r) })
}

// printJSON writes v as this invocation's one JSON document on stdout, in
// the style every command shares: snake_case keys, two-space indent, zero
// values included (unset objects null, empty lists [] and maps {}). Proto
// replies follow the proto3 JSON mapping with the .proto field names.
func (e *env) printJSON(v any) error {
	raw, err := marshalJSON(v)
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	var b bytes.Buffer
	// Indent also drops the random spaces protojson adds to keep readers
	// from depending on its byte layout.
	if err := json.Indent(&b, bytes.TrimSpace(raw), "", "  "); err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	b.WriteByte('\n')
	_, err = e.stdout.Write(b.Bytes())
	return err
}

var protoJSON = protojson.MarshalOptions{EmitUnpopulated: true, UseProtoNames: true}

func marshalJSON(v any) ([]byte, error) {
	if m, ok := v.(proto.Message); ok {
		return protoJSON.Marshal(m)
	}
	rv := reflect.ValueOf(v)
	if rv.IsValid() && rv.Kind() != reflect.Pointer {
		// Work on an addressable copy, so that fillEmpty can set fields.
		p := reflect.New(rv.Type())
		p.Elem().Set(rv)
		v, rv = p.Interface(), p
	}
	fillEmpty(rv)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // skill content holds <skill_content> frames
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// protoRaw embeds a proto message in a larger JSON document; an unset one
// is null.
func protoRaw(m proto.Message) json.RawMessage {
	if m == nil || !m.ProtoReflect().IsValid() {
		return json.RawMessage("null")
	}
	b, err := protoJSON.Marshal(m)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// fillEmpty replaces the nil slices and maps reachable from v through
// pointers, struct fields and slice elements by empty ones, so that they
// print as [] and {} rather than null. Values that marshal themselves are
// left alone.
func fillEmpty(v reflect.Value) {
	if !v.IsValid() || v.Type().Implements(jsonMarshaler) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			fillEmpty(v.Elem())
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if t.Field(i).IsExported() && t.Field(i).Tag.Get("json") != "-" {
				fillEmpty(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			if v.CanSet() {
				v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			}
			return
		}
		for i := range v.Len() {
			fillEmpty(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() && v.CanSet() {
			v.Set(reflect.MakeMap(v.Type()))
		}
	}
}

// progress draws one transient status line on stderr while a long command
// runs, when stderr is a terminal; anywhere else (pipes, files, tests) it
// draws nothing. Safe for concurrent use.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	width func() int // the terminal's columns, 0 when unknown
	drawn bool
	last  time.Time
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, width: func() int { return 0 }}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fd := int(f.Fd())
		p.on = true
		p.width = func() int {
			cols, _, err := term.GetSize(fd)
			if err != nil {
				return 0
			}
			return cols
		}
	}
	return p
}

// On reports whether the status line is drawn at all.
func (p *progress) On() bool { return p != nil && p.on }

// Show replaces the status line; updates closer than 100ms are dropped.
func (p *progress) Show(format string, args ...any) {
	if !p.On() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn && time.Since(p.last) < 100*time.Millisecond {
		return
	}
	line := []rune(fmt.Sprintf(format, args...))
	if w := p.width(); w > 1 && len(line) >= w {
		line = append(line[:w-2], '…') // a wrapped line could not be erased
	}
	fmt.Fprintf(p.w, "\r\033[K%s", string(line))
	p.drawn, p.last = true, time.Now()
}

// Clear erases the status line, before other output or at the end.
func (p *progress) Clear() {
	if !p.On() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

// note prints a line on stderr, below any status line.
func (e *env) note(format string, args ...any) {
	e.progress.Clear()
	fmt.Fprintf(e.stderr, format+"\n", args...)
}
