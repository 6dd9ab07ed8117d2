package daemon

import "testing"

func TestEveryInterface(t *testing.T) {
	for addr, want := range map[string]bool{
		"0.0.0.0:9464": true, "[::]:9464": true, ":9464": true, "[::0]:1": true,
		"127.0.0.1:9464": false, "[::1]:9464": false, "localhost:9464": false, "10.0.0.5:9464": false,
		"": false, "nonsense": false,
	} {
		if got := everyInterface(addr); got != want {
			t.Errorf("everyInterface(%q) = %v, want %v", addr, got, want)
		}
	}
}
