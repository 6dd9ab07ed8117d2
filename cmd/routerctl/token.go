package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/skill"
)

// tokenOutput is token's JSON output.
type tokenOutput struct {
	ID     string   `json:"id"`
	Token  string   `json:"token"`
	SHA256 string   `json:"sha256"`
	Groups []string `json:"groups"`
	Agents []string `json:"agents"`
	// Servers are the MCP servers whose tools the token sees; empty for
	// all.
	Servers []string `json:"servers"`
	Rate    float64  `json:"rate"`
	// Entry is the line to add under "tokens:" in the tokens file.
	Entry string `json:"entry"`
}

func newTokenCmd(e *env) *cobra.Command {
	var (
		id, groups, agents, servers string
		rate                        float64
	)
	cmd := &cobra.Command{
		Use:   "token --id ID",
		Short: "make a new API token and its tokens-file entry",
		Long: `Makes a new random API token and prints it once, with the entry to add to the
router's tokens file (auth.tokens_file). The file stores only the token's
sha256; keep the token itself in a secret store and pass it to clients
through MCPSAG_TOKEN. Groups: read, match, load, exec, admin, or * for all.
Works offline; the entry is checked as the router checks its tokens file.`,
		Example: `  routerctl token --id ci --groups read,match,load
  routerctl token --id ops --groups '*' --agents reviewer --rate 5 --json`,
		Args: noArgs,
	}
	f := cmd.Flags()
	f.StringVar(&id, "id", "", "`name` of the token in audit records (required)")
	f.StringVar(&groups, "groups", "read,match,load", "comma-separated method `groups`")
	f.StringVar(&agents, "agents", "", "comma-separated `agents` the token may act for; empty for any")
	f.StringVar(&servers, "servers", "", "comma-separated MCP `servers` whose tools the token sees and calls; empty for all")
	f.Float64Var(&rate, "rate", 0, "requests per `second`; 0 for unlimited")
	cmd.RunE = func(*cobra.Command, []string) error {
		if id == "" {
			return usageError{"token needs --id"}
		}
		if rate < 0 {
			return usageErrorf("--rate %g: want 0 (unlimited) or more", rate)
		}
		out, err := newToken(id, splitList(groups), splitList(agents), splitList(servers), rate)
		if err != nil {
			return err
		}
		if e.json {
			return e.printJSON(out)
		}
		fmt.Fprintf(e.stdout, "token (shown once): %s\n\nadd to the tokens file under 'tokens:':\n%s\n", out.Token, out.Entry)
		return nil
	}
	return cmd
}

// newToken makes a random token and its tokens-file entry, and checks the
// entry as the router checks its tokens file at start.
func newToken(id string, groups, agents, servers []string, rate float64) (tokenOutput, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return tokenOutput{}, err
	}
	tok := "mcpsag_" + base64.RawURLEncoding.EncodeToString(b[:])
	out := tokenOutput{ID: id, Token: tok, SHA256: auth.HashToken(tok), Groups: groups, Agents: agents, Servers: servers, Rate: rate}
	out.Entry = fmt.Sprintf("  - {id: %s, sha256: %s, groups: %s", id, out.SHA256, yamlList(out.Groups))
	if len(out.Agents) > 0 {
		out.Entry += ", agents: " + yamlList(out.Agents)
	}
	if len(out.Servers) > 0 {
		out.Entry += ", servers: " + yamlList(out.Servers)
	}
	if rate > 0 {
		out.Entry += fmt.Sprintf(", rate: %g", rate)
	}
	out.Entry += "}"
	for _, a := range out.Agents {
		if a == "*" {
			continue
		}
		var se *skill.Error
		if err := skill.ValidateAgent(a); errors.As(err, &se) {
			return tokenOutput{}, usageErrorf("--agents: %s", se.Message)
		}
	}
	if err := auth.CheckTokensFile([]byte("tokens:\n" + out.Entry + "\n")); err != nil {
		return tokenOutput{}, usageErrorf("the router would refuse this token: %s", entryProblem(err))
	}
	return out, nil
}

// entryProblem strips the position the tokens file parser puts first
// ("tokens[0] (id): ") from its complaint about the one entry made here.
func entryProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), "tokens[0]")
	if rest, ok := strings.CutPrefix(msg, " ("); ok {
		if _, after, found := strings.Cut(rest, "): "); found {
			return after
		}
	}
	return strings.TrimPrefix(msg, ": ")
}

// tokenGroups are the method groups a token may name.
var tokenGroups = []string{"read", "match", "load", "exec", "admin", "*"}

func splitList(s string) []string {
	out := []string{}
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func yamlList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
