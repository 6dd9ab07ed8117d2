package auth

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc/metadata"
)

// FuzzParseTokens feeds arbitrary tokens files to the parser: it must never
// panic, and every file it accepts must yield tokens the guard can use.
func FuzzParseTokens(f *testing.F) {
	h := HashToken("x")
	f.Add("tokens:\n  - {id: a, sha256: " + h + ", groups: [read], agents: [coder], rate: 2, burst: 4}\n")
	f.Add("tokens:\n  - id: ops\n    sha256: " + h + "\n    groups: ['*']\n")
	f.Add("tokens: []\n")
	f.Add("tokens:\n  - {id: a, sha256: " + h + ", groups: [read], rate: 0.5}\n  - {id: b, sha256: " + h + ", groups: [admin]}\n")
	f.Add("a: &a [*a]\n")
	f.Fuzz(func(t *testing.T, in string) {
		toks, err := parseTokens([]byte(in))
		if err != nil {
			return
		}
		ids := map[string]bool{}
		for _, tok := range toks {
			p := tok.p
			if !idRE.MatchString(p.ID) || ids[p.ID] {
				t.Fatalf("accepted id %q (seen before: %v)", p.ID, ids[p.ID])
			}
			ids[p.ID] = true
			if len(p.Groups()) == 0 {
				t.Fatalf("token %s accepted without groups", p.ID)
			}
			for _, g := range p.Groups() {
				if !slices.Contains(allGroups, Group(g)) {
					t.Fatalf("token %s has unknown group %q", p.ID, g)
				}
			}
			if p.limiter != nil && (p.limiter.Limit() <= 0 || p.limiter.Burst() < 1) {
				t.Fatalf("token %s has limiter %v/%d", p.ID, p.limiter.Limit(), p.limiter.Burst())
			}
		}
	})
}

// FuzzBearer feeds arbitrary authorization headers to the token extractor:
// what it returns is a non-empty token without surrounding space, and only
// from a Bearer header.
func FuzzBearer(f *testing.F) {
	f.Add("Bearer abc")
	f.Add("bearer  abc ")
	f.Add("Basic dXNlcjpwYXNz")
	f.Add("Bearer")
	f.Add("Bearer \x00")
	f.Fuzz(func(t *testing.T, header string) {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", header))
		tok, ok := bearer(ctx)
		if !ok {
			return
		}
		if tok == "" || len(tok) >= len(header) {
			t.Fatalf("bearer(%q) = %q", header, tok)
		}
	})
}
