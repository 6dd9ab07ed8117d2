package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpsag/router/internal/auth"
)

const tokenUsage = `
Usage: routerctl token --id ID [--groups read,match,load] [--agents A,B] [--rate N]

Makes a new random API token and prints it once, with the entry to add to the
router's tokens file (auth.tokens_file). The file stores only the token's
sha256; keep the token itself in a secret store and pass it to clients
through MCPSAG_TOKEN. Groups: read, match, load, exec, admin, or * for all.
Works offline.
`

func runToken(e *env, args []string) error {
	fs := newFlags(e, "token", tokenUsage)
	id := fs.String("id", "", "name of the token in audit records (required)")
	groups := fs.String("groups", "read,match,load", "comma-separated method `groups`")
	agents := fs.String("agents", "", "comma-separated `agents` the token may act for; empty for any")
	rate := fs.Float64("rate", 0, "requests per second; 0 for unlimited")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	if *id == "" {
		return usageError{"token needs --id (see routerctl token --help)"}
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	tok := "mcpsag_" + base64.RawURLEncoding.EncodeToString(b[:])
	list := func(s string) string {
		var out []string
		for _, x := range strings.Split(s, ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, fmt.Sprintf("%q", x))
			}
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	entry := fmt.Sprintf("  - {id: %s, sha256: %s, groups: %s", *id, auth.HashToken(tok), list(*groups))
	if *agents != "" {
		entry += ", agents: " + list(*agents)
	}
	if *rate > 0 {
		entry += fmt.Sprintf(", rate: %g", *rate)
	}
	entry += "}"
	if e.json {
		return json.NewEncoder(e.stdout).Encode(map[string]string{"token": tok, "sha256": auth.HashToken(tok), "entry": entry})
	}
	fmt.Fprintf(e.stdout, "token (shown once): %s\n\nadd to the tokens file under 'tokens:':\n%s\n", tok, entry)
	return nil
}
