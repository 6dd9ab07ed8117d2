package skill

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBodyStart(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"hello world", 20, "hello world"},
		{"hello world", 8, "hello"},
		{"héllo wörld", 9, "héllo"},
		{"abcdef", 3, "abc"},
		{"abc", 0, ""},
	}
	for _, tc := range tests {
		if got := BodyStart(tc.in, tc.n); got != tc.want {
			t.Errorf("BodyStart(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{{"", 0}, {"abc", 1}, {"abcd", 1}, {"abcde", 2}, {"éééé", 1}} {
		if got := EstimateTokens(tc.in); got != tc.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestTruncateBody(t *testing.T) {
	para := strings.Repeat("word ", 30) + "\n" // 151 chars
	body := strings.Repeat(para, 10)
	for _, tc := range []struct {
		name       string
		body       string
		budget     int
		wantTrunc  bool
		wantSuffix string
	}{
		{"fits", body, 1000, false, "\n"},
		{"cut at line", body, 115, true, "\n"},
		{"cut at space", strings.Repeat("word ", 400), 100, true, "word"},
		{"zero budget", body, 0, true, ""},
		{"multibyte", strings.Repeat("é", 1000), 10, true, "é"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, tokens, trunc := TruncateBody(tc.body, tc.budget)
			if trunc != tc.wantTrunc {
				t.Fatalf("truncated = %v, want %v", trunc, tc.wantTrunc)
			}
			if tokens > tc.budget {
				t.Errorf("tokens = %d over budget %d", tokens, tc.budget)
			}
			if tokens != EstimateTokens(got) {
				t.Errorf("tokens = %d, estimate of text = %d", tokens, EstimateTokens(got))
			}
			if !strings.HasPrefix(tc.body, got) || !utf8.ValidString(got) {
				t.Errorf("result is not a valid prefix of the body")
			}
			if !strings.HasSuffix(got, tc.wantSuffix) {
				t.Errorf("result ends %q, want suffix %q", got[max(0, len(got)-10):], tc.wantSuffix)
			}
			if tc.wantTrunc && tc.budget > 0 && tokens < tc.budget*3/4 {
				t.Errorf("kept only %d of %d tokens", tokens, tc.budget)
			}
		})
	}
}
