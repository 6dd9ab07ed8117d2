package statedir

import "testing"

func TestWrittenBy(t *testing.T) {
	for _, tc := range []struct{ got, want, says string }{
		{"MCPSAGG3", "MCPSAGG2", "a newer release"},
		{"MCPSAGGS", "MCPSAGG2", "another release"},
		{"MCPSAGS0", "MCPSAGS1", "an older release"},
		{"2", "1", "a newer release"},
		{"0", "1", "an older release"},
		{"4.7", "3.7", "a newer release"},
		{"3.6", "3.7", "an older release"},
		{"", "1", "another release"},
		{"\x89PNG\r\n\x1a\n", "MCPSAGG2", "another program"},
		{"x", "1", "another program"},
	} {
		if got := WrittenBy(tc.got, tc.want); got != tc.says {
			t.Errorf("WrittenBy(%q, %q) = %q, want %q", tc.got, tc.want, got, tc.says)
		}
	}
}
