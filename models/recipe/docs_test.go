package main

import (
	"reflect"
	"testing"
)

func TestSplitIdent(t *testing.T) {
	for in, want := range map[string]string{
		"ReadFile":               "read file",
		"GetURLPath2":            "get url path 2",
		"getVehicleBatteryLevel": "get vehicle battery level",
		"parse_args":             "parse args",
		"HTTPServer":             "http server",
		"x509":                   "x 509",
		"io.Copy":                "io copy",
		"":                       "",
	} {
		if got := splitIdent(in); got != want {
			t.Errorf("splitIdent(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestManPage reads a man(7) page and an mdoc(7) page written for this test:
// the NAME line splits into names and description, DESCRIPTION's first
// paragraph comes out as plain text (fonts, escapes and comments gone), and
// a short first paragraph takes the next one along.
func TestManPage(t *testing.T) {
	man := `.\" a comment
.TH FROB 1 "2026" "frob 1.0"
.SH NAME
frob, unfrob \- adjust the \fBfrobnication\fR level of a file
.SH SYNOPSIS
.B frob
[\fIOPTION\fR]... \fIFILE\fR
.SH DESCRIPTION
.B frob
raises the frobnication level of
.I FILE
by one step\(em or by \fB\-n\fR steps, and keeps a backup.
.PP
A second paragraph that is not needed.
.SH OPTIONS
.TP
\fB\-n\fR
steps
`
	names, desc, body := manPage(man)
	if names != "frob, unfrob" || desc != "adjust the frobnication level of a file" {
		t.Errorf("NAME: %q / %q", names, desc)
	}
	if want := "frob raises the frobnication level of FILE by one step - or by -n steps, and keeps a backup."; body != want {
		t.Errorf("DESCRIPTION:\n got %q\nwant %q", body, want)
	}

	mdoc := `.Dd January 1, 2026
.Dt TWIDDLE 8
.Os
.Sh NAME
.Nm twiddle
.Nd turn the knob of a device
.Sh DESCRIPTION
The
.Nm twiddle
utility
.Pp
turns the knob of the device named by
.Ar device
to the position given with
.Fl p .
.Sh SEE ALSO
`
	names, desc, body = manPage(mdoc)
	if names != "twiddle" || desc != "turn the knob of a device" {
		t.Errorf("mdoc NAME: %q / %q", names, desc)
	}
	if want := "The twiddle utility turns the knob of the device named by device to the position given with p ."; body != want {
		t.Errorf("mdoc DESCRIPTION:\n got %q\nwant %q", body, want)
	}
}

// TestPyDocs reads Python source written for this test: functions, methods
// with their class, multi-line signatures and docstrings; private names,
// signature-only and doctest docstrings are left out.
func TestPyDocs(t *testing.T) {
	src := `"""Module docstring."""

def fetch_weather(city,
                  days=3):
    """Return the weather forecast for a city
    over the next few days.

    More detail that is not kept.
    """
    pass

class RateLimiter:
    '''Limit how often a caller may act.'''

    def allow(self, key):
        """Report whether the caller identified by key may act now."""

    def _private(self):
        """A private helper that is not kept at all."""

def _hidden():
    """Hidden function, left out of the pairs."""

def sig_only(a, b):
    """sig_only(a, b) -> int"""

def doctested():
    """Adds numbers.
    >>> doctested()
    """
`
	want := []pyItem{
		{name: "fetch_weather", doc: "Return the weather forecast for a city over the next few days."},
		{name: "RateLimiter", doc: "Limit how often a caller may act."},
		{class: "RateLimiter", name: "allow", doc: "Report whether the caller identified by key may act now."},
	}
	if got := pyDocs(src); !reflect.DeepEqual(got, want) {
		t.Errorf("pyDocs:\n got %+v\nwant %+v", got, want)
	}
}
