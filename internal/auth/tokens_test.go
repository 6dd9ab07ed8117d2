package auth

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseTokensErrors(t *testing.T) {
	h := HashToken("x")
	tests := map[string]string{
		"unknown key":     "tokens:\n  - {id: a, sha256: " + h + ", groups: [read], scope: x}\n",
		"bad id":          "tokens:\n  - {id: 'a b', sha256: " + h + ", groups: [read]}\n",
		"duplicate id":    "tokens:\n  - {id: a, sha256: " + h + ", groups: [read]}\n  - {id: a, sha256: " + h + ", groups: [read]}\n",
		"duplicate hash":  "tokens:\n  - {id: a, sha256: " + h + ", groups: [read]}\n  - {id: b, sha256: " + strings.ToUpper(h) + ", groups: ['*']}\n",
		"short hash":      "tokens:\n  - {id: a, sha256: abc, groups: [read]}\n",
		"no groups":       "tokens:\n  - {id: a, sha256: " + h + "}\n",
		"unknown group":   "tokens:\n  - {id: a, sha256: " + h + ", groups: [root]}\n",
		"negative rate":   "tokens:\n  - {id: a, sha256: " + h + ", groups: [read], rate: -1}\n",
		"not yaml at all": "tokens: [\n",
	}
	for name, in := range tests {
		if _, err := parseTokens([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestAuthenticate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tokens.yaml")
	content := "tokens:\n" +
		"  - {id: reader, sha256: " + HashToken("secret-1") + ", groups: [read, match], agents: [coder]}\n" +
		"  - {id: ops, sha256: " + strings.ToUpper(HashToken("secret-2")) + ", groups: ['*']}\n"
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	toks, err := LoadTokens(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := toks.Authenticate("secret-1")
	if !ok || r.ID != "reader" || !r.Allows(GroupMatch) || r.Allows(GroupAdmin) || !r.ActsFor("coder") || r.ActsFor("") || r.ActsFor("other") {
		t.Errorf("reader = %+v, %v", r, ok)
	}
	o, ok := toks.Authenticate("secret-2")
	if !ok || o.ID != "ops" || !o.Allows(GroupAdmin) || !o.ActsFor("") {
		t.Errorf("ops = %+v, %v", o, ok)
	}
	for _, bad := range []string{"", "secret", "secret-1 ", HashToken("secret-1")} {
		if _, ok := toks.Authenticate(bad); ok {
			t.Errorf("%q authenticated", bad)
		}
	}
	if _, err := LoadTokens(filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil {
		t.Error("missing tokens file accepted at start")
	}
}

func TestTokensExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "config", "tokens.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	toks, err := parseTokens(data)
	if err != nil || len(toks) != 3 {
		t.Fatalf("example tokens file: %d tokens, %v", len(toks), err)
	}
	if got := toks[0].p.Servers(); len(got) != 1 || got[0] != "github" {
		t.Errorf("coding-agent's servers: %v", got)
	}
	if got := toks[2].p.Servers(); got != nil {
		t.Errorf("ops's servers: %v; want nil (all)", got)
	}
	var anon *Principal
	if anon.Servers() != nil || Anonymous.Servers() != nil {
		t.Error("anonymous principals are limited to some servers")
	}
}

// TestTokensReload: edits apply after the once-a-second check, a broken edit
// keeps the previous tokens and is logged once, and a fixed edit applies.
func TestTokensReload(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tokens.yaml")
	line := func(id, tok string) string {
		return "tokens:\n  - {id: " + id + ", sha256: " + HashToken(tok) + ", groups: [read]}\n"
	}
	if err := os.WriteFile(p, []byte(line("one", "t1")), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	toks, err := LoadTokens(p, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now() // the clock LoadTokens read
	toks.files.Now = func() time.Time { return now }
	auth := func(tok string) bool { _, ok := toks.Authenticate(tok); return ok }

	if err := os.WriteFile(p, []byte(line("two", "t2")), 0o600); err != nil {
		t.Fatal(err)
	}
	if !auth("t1") || auth("t2") {
		t.Error("an edit applied before the next check")
	}
	now = now.Add(1100 * time.Millisecond)
	if auth("t1") || !auth("t2") {
		t.Error("an edit did not apply after the check interval")
	}

	if err := os.WriteFile(p, []byte("tokens: [oops"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		now = now.Add(2 * time.Second)
		if !auth("t2") {
			t.Fatal("a broken edit dropped the tokens in force")
		}
	}
	if n := strings.Count(logs.String(), "tokens file edit rejected"); n != 1 {
		t.Errorf("the broken edit was logged %d times, want once:\n%s", n, logs.String())
	}

	if err := os.WriteFile(p, []byte(line("three", "t3")), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	if !auth("t3") || auth("t2") {
		t.Error("the fixed edit did not apply")
	}
}

func TestAdmit(t *testing.T) {
	toks, err := parseTokens([]byte("tokens:\n" +
		"  - {id: slow, sha256: " + HashToken("a") + ", groups: [match], rate: 1, burst: 2}\n" +
		"  - {id: free, sha256: " + HashToken("b") + ", groups: [match]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	slow, free := toks[0].p, toks[1].p
	for i := range 2 {
		if d := slow.Admit(); d != 0 {
			t.Fatalf("request %d within the burst refused for %v", i+1, d)
		}
	}
	d := slow.Admit()
	if d <= 0 || d > time.Second {
		t.Fatalf("request over the burst: delay %v, want (0, 1s]", d)
	}
	if d2 := slow.Admit(); d2 <= 0 {
		t.Errorf("a refused request took from the budget: next delay %v", d2)
	}
	for range 100 {
		if d := free.Admit(); d != 0 {
			t.Fatalf("unlimited token refused for %v", d)
		}
	}
	if Anonymous.Admit() != 0 {
		t.Error("anonymous principal refused")
	}
}
