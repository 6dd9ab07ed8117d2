package skill

import "testing"

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
